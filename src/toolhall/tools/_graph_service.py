"""One workspace's code graph: indexing (full or incremental) and read-only queries.

One `CodeGraph` per database folder per process (the registry below): ladybug must not have two
`Database` objects on one file in a process, and the in-memory index makes repeated updates cheap.
Across processes, a lock file serialises indexing; readers need no lock because writers never modify
the file a reader has open (see `_graph_store`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .._errors import ToolCallError
from ._graph_guard import check_query, dialect_hint
from ._graph_index import CacheMissError, Delta, GraphIndex, IndexStats, Progress, phase
from ._graph_parse import FACTS_VERSION
from ._graph_scan import scan
from ._graph_state import StateStore
from ._graph_store import GraphDB, engine_version, file_lock
from ._graph_tables import NODE_COLUMNS, SCHEMA_VERSION

__all__ = ["CodeGraph", "GraphOptions", "QueryOutcome", "code_graph"]

_MIN_BULK_ROWS = 5000
_R = TypeVar("_R")


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphOptions:
    """Limits and scope of one workspace graph (the `[tools.codegraph]` options)."""

    exclude: tuple[str, ...] = ()
    use_gitignore: bool = True
    max_file_bytes: int = 2_000_000
    query_timeout_ms: int = 10_000
    buffer_pool_mb: int = 256
    max_db_mb: int = 4096
    query_threads: int = 1
    full_rebuild_ratio: float = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryOutcome:
    """Rows of one query."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool


def _identity() -> dict[str, str]:
    from .. import __version__ as toolhall_version

    return {
        "schema_version": str(SCHEMA_VERSION),
        "facts_version": str(FACTS_VERSION),
        "engine": f"ladybug {engine_version()}",
        "toolhall_version": str(toolhall_version),
        "cache_layout": "2",
    }


class CodeGraph:
    """The graph of one workspace, stored in `db_dir`."""

    def __init__(self, root: Path, db_dir: Path, options: GraphOptions) -> None:
        self.root = root
        self.db_dir = db_dir
        self.options = options
        self.db = GraphDB(db_dir, buffer_pool_mb=options.buffer_pool_mb, max_db_mb=options.max_db_mb,
                          query_timeout_ms=options.query_timeout_ms, query_threads=options.query_threads)
        self.state = StateStore(db_dir / "state.sqlite")
        self.index: GraphIndex | None = None
        self._token: str | None = None
        self._force_full = False
        self._writing = threading.Lock()

    # --- indexing --------------------------------------------------------------------------

    def update(
        self,
        *,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
        allowed: Callable[[str], bool] | None = None,
    ) -> IndexStats:
        """Bring the graph up to date with the workspace: full build first, incremental after."""
        started = time.perf_counter()
        self.db_dir.mkdir(parents=True, exist_ok=True)
        with self._writing, file_lock(self.db_dir / "graph.lock", shared=False):
            try:
                with _gc_paused():
                    try:
                        stats = self._update(progress, cancelled, allowed)
                    except CacheMissError:  # the cache lost an entry it listed: never trust it, rebuild
                        self._force_full = True
                        stats = self._update(progress, cancelled, allowed)
            except BaseException:
                self.index = None  # memory may be ahead of disk now: reload from disk next time
                self._token = None
                raise
        stats.seconds = round(time.perf_counter() - started, 3)
        return stats

    def _update(
        self, progress: Progress | None, cancelled: Callable[[], bool] | None, allowed: Callable[[str], bool] | None
    ) -> IndexStats:
        stats = IndexStats()
        with phase(stats, "load"):
            full = self._ensure_loaded()
        index = self.index
        assert index is not None
        if progress is not None:
            progress("scan", 0, 1)
        with phase(stats, "scan"):
            found, stats.skipped = scan(self.root, exclude=self.options.exclude,
                                        use_gitignore=self.options.use_gitignore,
                                        max_file_bytes=self.options.max_file_bytes, allowed=allowed)
        before = {p: (r.sha, r.mtime_ns, r.size) for p, r in index.files.items()}
        delta = index.update(found, stats, progress, cancelled)
        stats.resolved = index.last_resolved
        changed = [p for p, r in index.files.items() if before.get(p) != (r.sha, r.mtime_ns, r.size)]
        removed = [p for p in before if p not in index.files]
        if not full and len(delta) > max(_MIN_BULK_ROWS, self.options.full_rebuild_ratio * index.edge_count):
            full = True  # one bulk COPY beats a huge per-row transaction (~0.3 ms a row)
        if progress is not None:
            progress("write", 0, 1)
        meta = {**_identity(), "token": uuid.uuid4().hex, "files": str(len(index.files)),
                "nodes": str(index.node_count), "edges": str(index.edge_count),
                "indexed_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        stats.mode = "full" if full else "incremental" if len(delta) else "unchanged"
        self._write(index, stats, delta, meta, (changed, removed))
        if progress is not None:
            progress("write", 1, 1)
        _fill_counts(stats, delta, index)
        return stats

    def _write(
        self, index: GraphIndex, stats: IndexStats, delta: Delta, meta: dict[str, str],
        moved: tuple[list[str], list[str]],
    ) -> None:
        """Write the graph, then the cache (whose token then matches the graph's)."""
        if stats.mode == "full":
            index.materialize()
            with phase(stats, "write"), ThreadPoolExecutor(1, thread_name_prefix="toolhall-graph-cache") as pool:
                # The cache is written beside the bulk load (COPY runs without the GIL), swapped in after it.
                cache = pool.submit(self._timed, stats, "cache", self.state.prepare_full, index, meta)
                try:
                    self.db.build(index.all_nodes(), list(index.all_edges()), meta)
                except BaseException:
                    with contextlib.suppress(Exception):
                        cache.result().unlink(missing_ok=True)
                    raise
                self.state.swap_in(cache.result(), index)
        elif stats.mode == "incremental":
            with phase(stats, "write"):
                self.db.apply(delta, meta)
            with phase(stats, "cache"):
                self.state.save_changes(index, *moved, meta)
        elif any(moved):  # only stat data moved (a touch): keep the cache current, the graph as is
            with phase(stats, "cache"):
                self.state.save_changes(index, *moved, None)
        if stats.mode != "unchanged":
            self._token = meta["token"]

    @staticmethod
    def _timed(stats: IndexStats, name: str, fn: Callable[..., _R], *args: Any) -> _R:
        with phase(stats, name):
            return fn(*args)

    def _ensure_loaded(self) -> bool:
        """Make sure the index matches the stored graph (resuming from the cache); True: build in full."""
        if self._force_full or not self.db.exists():
            self._force_full = False
            self.index = GraphIndex(self.root)
            return True
        meta = self.state.read_meta()
        if self.index is not None and self._token is not None and meta.get("token") == self._token:
            return False  # another process may have indexed since: then the token differs and we resume
        stored = self.db.read_meta()
        identity = _identity()
        cached = self.state.load()
        trusted = (
            bool(cached and cached[0])
            and meta.get("token") == stored.get("token")
            and all(meta.get(k) == v and stored.get(k) == v for k, v in identity.items())
        )
        self.index = GraphIndex(self.root, self.state if trusted else None)
        if not trusted or cached is None:
            return True
        self.index.resume(*cached, (int(meta.get("nodes", 0)), int(meta.get("edges", 0))))
        self._token = meta["token"]
        return False

    # --- querying --------------------------------------------------------------------------

    def exists(self) -> bool:
        """Whether a graph has been built for this workspace."""
        return self.db.exists()

    def query(self, text: str, params: dict[str, Any] | None, max_rows: int) -> QueryOutcome:
        """Run one guarded read-only query; at most `max_rows` rows are fetched."""
        wanted = check_query(text)
        missing = sorted(wanted - set(params or {}))
        if missing:
            # The engine would silently read a missing parameter as null and return nothing.
            raise ToolCallError(f"params: no value for {', '.join('$' + m for m in missing)} used in the query",
                                code="invalid_input", details={"reason": "missing_params", "missing": missing})
        try:
            with self.db.reader() as conn:
                result = conn.execute(text, params or {})
                try:
                    columns = list(result.get_column_names())
                    rows: list[list[Any]] = []
                    while result.has_next() and len(rows) <= max_rows:
                        rows.append([_plain(v) for v in result.get_next()])
                finally:
                    result.close()
        except RuntimeError as error:
            raise _query_error(text, str(error)) from None
        truncated = len(rows) > max_rows
        return QueryOutcome(columns=columns, rows=rows[:max_rows], truncated=truncated)

    def close(self) -> None:
        """Close database and cache handles (the in-memory index is kept)."""
        self.db.close()
        self.state.close()


def _query_error(text: str, message: str) -> ToolCallError:
    if "interrupted" in message.lower() or "timeout" in message.lower():
        return ToolCallError(f"the query ran too long and was interrupted ({message})", code="timeout",
                             details={"reason": "query_timeout"})
    details: dict[str, Any] = {"reason": "query_error", "engine_message": message}
    hint = dialect_hint(text, message)
    if hint:
        details["hint"] = hint
    return ToolCallError(f"query failed: {message}" + (f" (hint: {hint})" if hint else ""), code="invalid_input",
                         details=details)


_MAX_TEXT = 2000
_INTERNAL = frozenset({"_ID", "_SRC", "_DST"})


def _plain(value: Any) -> Any:
    """JSON-safe values: nodes and relationships as property maps with their label, long text capped."""
    if isinstance(value, dict):
        if "_NODES" in value and "_RELS" in value:  # a path
            return {"nodes": [_plain(n) for n in value["_NODES"]], "rels": [_plain(r) for r in value["_RELS"]]}
        label = value.get("_LABEL")
        # A node reached through an unlabeled pattern carries every table's columns; keep its own.
        own = {c for c, _ in NODE_COLUMNS.get(label, [])} if label in NODE_COLUMNS else None
        out = {"label": label} if label is not None else {}
        out.update((k, _plain(v)) for k, v in value.items()
                   if k not in _INTERNAL and k != "_LABEL" and (own is None or k in own))
        return out
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return value if len(value) <= _MAX_TEXT else value[:_MAX_TEXT] + "…"
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    return str(value)


_REGISTRY: dict[tuple[Path, Path], CodeGraph] = {}
_REGISTRY_LOCK = threading.Lock()


def code_graph(root: Path, db_dir: Path, options: GraphOptions) -> CodeGraph:
    """The process's one CodeGraph for this database folder (created on first use).

    A process-wide registry is deliberate: two ladybug handles on one file in one process are unsafe,
    so every toolbox for the same workspace must share one.
    """
    key = (root.resolve(), db_dir.resolve())
    with _REGISTRY_LOCK:
        graph = _REGISTRY.get(key)
        if graph is None or graph.options != options:
            if graph is not None:
                graph.close()
            graph = _REGISTRY[key] = CodeGraph(key[0], key[1], options)
        return graph


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while indexing.

    Indexing allocates millions of long-lived containers (facts, tables, edges) and no cycles worth
    collecting; the collector would otherwise re-scan the growing heap again and again (measured: reading
    the stdlib's cached facts took 3.7 s with it, 0.7 s without). It is restored, not forced on, after.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _fill_counts(stats: IndexStats, delta: Any, index: GraphIndex) -> None:
    stats.files = len(index.files)
    stats.nodes_added = len(delta.nodes_added)
    stats.nodes_changed = len(delta.nodes_changed)
    stats.nodes_removed = len(delta.nodes_removed)
    stats.edges_added = len(delta.edges_added)
    stats.edges_removed = len(delta.edges_removed)
    stats.nodes = index.node_count
    stats.edges = index.edge_count
    stats.syntax_errors = sorted(p for p, r in index.files.items() if r.errors)


def forget(paths: Iterable[Path]) -> None:
    """Drop registry entries (tests use this to simulate a fresh process)."""
    with _REGISTRY_LOCK:
        for key in [k for k in _REGISTRY if k[1] in {p.resolve() for p in paths}]:
            _REGISTRY.pop(key).close()
