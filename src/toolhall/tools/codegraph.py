"""The code graph: the workspace's Python source indexed into an embedded graph database, queried in Cypher.

`graph_index` builds the graph (fully the first time, incrementally after: only changed files are
re-parsed, only call sites whose candidate targets changed are re-resolved, and the difference is written
in one transaction). `graph_query` runs read-only Cypher against it: a statement guard refuses anything
that writes or touches files, the network or other databases; the engine enforces read-only mode, a query
timeout, a memory cap and a row cap. The database lives in `<workspace>/.toolhall/graph/`.

Example:
    ```python
    from toolhall.tools import codegraph

    tb = codegraph.toolbox(workspace=".")
    tb.call_sync("graph_index", {})
    tb.call_sync("graph_query", {"query": "MATCH (c)-[:CALLS]->(f:Function {name: $n}) RETURN c.qname",
                                 "params": {"n": "main"}})
    ```
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from .._context import ToolContext
from .._errors import ConfigError, ToolCallError
from .._tool import Tool, tool
from .._toolbox import Toolbox
from .._workspace import Workspace
from ._graph_service import CodeGraph, GraphOptions, code_graph
from ._graph_tables import SCHEMA_DOC

__all__ = ["diagnose", "graph_for", "toolbox"]

GRAPH_DIR = Path(".toolhall") / "graph"


def toolbox(
    workspace: Workspace | str | os.PathLike[str],
    db_path: str | os.PathLike[str] | None = None,
    *,
    max_rows: int = 200,
    query_timeout: float = 10.0,
    index_timeout: float = 600.0,
    auto_index: bool = True,
    exclude: Sequence[str] = (),
    use_gitignore: bool = True,
    max_file_bytes: int = 2_000_000,
    buffer_pool_mb: int = 256,
    max_db_mb: int = 4096,
    query_threads: int = 1,
) -> Toolbox:
    """The `graph_query` and `graph_index` tools for one workspace.

    Args:
        workspace: The `Workspace` (or its root folder) whose Python files are indexed. Files its deny
            rules refuse to read are not indexed.
        db_path: The folder holding the database (default `<workspace>/.toolhall/graph`).
        max_rows: Default and maximum number of rows `graph_query` returns.
        query_timeout: Seconds before the engine interrupts a query.
        index_timeout: Seconds `graph_index` may run.
        auto_index: Build or refresh the graph on the first query of this process when needed.
        exclude: Extra gitignore-style patterns of files not to index (beside .gitignore and the defaults:
            virtual environments, caches, build output, `.toolhall/`).
        use_gitignore: Skip what the workspace's root `.gitignore` ignores.
        max_file_bytes: Larger source files are skipped (generated code, data).
        buffer_pool_mb: The engine's memory cap for queries and indexing.
        max_db_mb: The largest the database file may grow (the engine reserves this much address space).
        query_threads: Threads the engine may use for one query (more only helps big analytic queries on an
            idle machine).

    Raises:
        ConfigError: A bad option (the message names it).
    """
    if isinstance(query_threads, bool) or not isinstance(query_threads, int) or query_threads < 1:
        raise ConfigError(f"query_threads: expected a whole number of threads (1 or more), got {query_threads!r}")
    _check(max_rows=max_rows, query_timeout=query_timeout, index_timeout=index_timeout,
           max_file_bytes=max_file_bytes, buffer_pool_mb=buffer_pool_mb, max_db_mb=max_db_mb)
    ws = Workspace.coerce(workspace)
    folder = Path(db_path) if db_path is not None else ws.root / GRAPH_DIR
    options = GraphOptions(exclude=tuple(exclude), use_gitignore=use_gitignore, max_file_bytes=max_file_bytes,
                           query_timeout_ms=int(query_timeout * 1000), buffer_pool_mb=buffer_pool_mb,
                           max_db_mb=max_db_mb, query_threads=query_threads)
    state = _Binding(ws, folder, options, auto_index)
    query_limit = max(query_timeout + 5, index_timeout if auto_index else 0)
    return Toolbox([_query_tool(state, max_rows, query_timeout, query_limit), _index_tool(state, index_timeout)],
                   name="codegraph")


def graph_for(workspace: Workspace | str | os.PathLike[str], db_path: str | os.PathLike[str] | None = None,
              **options: Any) -> CodeGraph:
    """The process's `CodeGraph` for a workspace (used by the CLI and `toolhall doctor`)."""
    ws = Workspace.coerce(workspace)
    folder = Path(db_path) if db_path is not None else ws.root / GRAPH_DIR
    return code_graph(ws.root, folder, GraphOptions(**options))


def diagnose(workspace: Workspace | str | os.PathLike[str], db_path: str | os.PathLike[str] | None = None) -> list[str]:
    """Notes about the workspace's graph for `toolhall doctor`; warnings start with "warning:"."""
    graph = graph_for(workspace, db_path)
    if not graph.exists():
        return ["codegraph: no graph yet (run `toolhall index`; graph_query builds it on first use)"]
    meta = graph.db.read_meta()
    if not meta:
        return [f"warning: codegraph: {graph.db.path} cannot be read; it will be rebuilt by `toolhall index`"]
    notes = [f"codegraph: {meta.get('files', '?')} files indexed at {meta.get('indexed_at', '?')} "
             f"({meta.get('engine', '?')}, schema {meta.get('schema_version', '?')}, "
             f"{graph.db.path.stat().st_size // 1024} KiB)"]
    from ._graph_service import _identity

    stale = [k for k, v in _identity().items() if meta.get(k) != v]
    if stale:
        notes.append(f"warning: codegraph: built by another {', '.join(stale)}; the next index rebuilds it")
    return notes


class _Binding:
    """What the two tools share: the workspace, the graph, and whether this process refreshed it yet."""

    def __init__(self, ws: Workspace, folder: Path, options: GraphOptions, auto_index: bool) -> None:
        self.ws = ws
        self.folder = folder
        self.options = options
        self.auto_index = auto_index
        self.refreshed = False

    def graph(self) -> CodeGraph:
        return code_graph(self.ws.root, self.folder, self.options)

    def index(self, ctx: ToolContext | None) -> dict[str, Any]:
        cancel = ctx.cancel if ctx is not None else None
        stats = self.graph().update(
            cancelled=(lambda: cancel.is_set()) if cancel is not None else None,
            allowed=lambda rel: not self.ws.is_denied(rel),
        )
        self.refreshed = True
        return asdict(stats)


def _query_tool(state: _Binding, row_limit: int, timeout: float, call_limit: float) -> Tool:
    # The call limit covers the first call's automatic indexing; the engine interrupts each query itself.
    @tool(name="graph_query", description=_description(row_limit, timeout), read_only=True, destructive=False,
          idempotent=True, open_world=False, timeout=call_limit, subject="query")
    def graph_query(
        query: Annotated[str, Field(min_length=1)],
        params: dict[str, Any] | None = None,
        max_rows: Annotated[int | None, Field(ge=1)] = None,
    ) -> dict[str, Any]:
        """Run a read-only Cypher query against the code graph.

        Args:
            query: One Cypher query (MATCH/OPTIONAL MATCH/WITH/UNWIND/RETURN, or CALL show_tables()/table_info()).
            params: Values for $name placeholders in the query; pass values here rather than quoting them in.
            max_rows: The most rows to return (capped by the configured limit).
        """
        graph = state.graph()
        if state.auto_index and not state.refreshed:
            state.index(None)
        if not graph.exists():
            raise ToolCallError("there is no code graph yet: call graph_index first", code="execution_error",
                                details={"reason": "not_indexed"})
        limit = min(max_rows or row_limit, row_limit)
        outcome = graph.query(query, params, limit)
        return {"columns": outcome.columns, "rows": outcome.rows, "row_count": len(outcome.rows),
                "truncated": outcome.truncated, "max_rows": limit}

    return graph_query


def _index_tool(state: _Binding, timeout: float) -> Tool:
    @tool(name="graph_index", read_only=False, destructive=False, idempotent=True, open_world=False,
          timeout=timeout)
    def graph_index(ctx: ToolContext) -> dict[str, Any]:
        """Build or refresh the code graph after files changed: only changed files are parsed again.

        Returns what the run did: mode ("full", "incremental" or "unchanged"), files, parsed, resolved,
        nodes/edges added and removed, files with syntax errors, skipped files, seconds taken and phases
        (seconds per stage: load, scan, parse, tables, resolve, diff, write, cache).
        """
        return state.index(ctx)

    return graph_index


def _description(max_rows: int, timeout: float) -> str:
    return (
        "Query the workspace's code graph (Python: modules, classes, functions, imports, calls, inheritance) "
        f"with read-only Cypher. Returns columns, rows (at most {max_rows}; `truncated` says when more existed) "
        f"and row_count; queries are interrupted after {timeout:g} s. Pass values as $params. Nodes come back "
        "as property maps with their label. Call graph_index after editing files to refresh the graph.\n"
        + SCHEMA_DOC
    )


def _check(**values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ConfigError(f"{name}: expected a positive number, got {value!r}")
