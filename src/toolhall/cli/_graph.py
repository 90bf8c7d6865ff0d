"""`toolhall index [PATH]` (build or refresh the code graph) and `toolhall graph "MATCH …"` (query it)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from .._errors import ToolCallError, ToolhallError
from ._render import emit_json, fail, is_terminal, print_table

__all__ = ["register"]

_JSON = Annotated[bool, typer.Option("--json", help="Print JSON.")]
_CONFIG = Annotated[str | None, typer.Option("--config", "-c", help="The toolhall.toml to read.")]


def _options(config: str | None, path: Path | None) -> tuple[Any, dict[str, Any]]:
    """The workspace and the `[tools.codegraph]` options that shape indexing."""
    from ._app import load_app

    app = load_app(config, str(path) if path is not None else None)
    options = app.config.tool_options("codegraph")
    return app.workspace, options


def _graph(config: str | None, path: Path | None) -> Any:
    from ..tools.codegraph import graph_for

    ws, options = _options(config, path)
    keys = {"exclude", "use_gitignore", "max_file_bytes", "buffer_pool_mb", "max_db_mb", "query_threads"}
    kwargs = {k: (tuple(v) if k == "exclude" else v) for k, v in options.items() if k in keys}
    if "query_timeout" in options:
        kwargs["query_timeout_ms"] = int(float(options["query_timeout"]) * 1000)
    return ws, graph_for(ws, options.get("db_path"), **kwargs), options


def index(
    path: Annotated[Path | None, typer.Argument(help="The workspace folder (default: the configured one).")] = None,
    as_json: _JSON = False,
    config: _CONFIG = None,
) -> None:
    """Build or refresh the code graph of a workspace (incremental after the first run).

    Example: toolhall index . && toolhall graph "MATCH (f:Function) RETURN f.qname LIMIT 5"
    """
    try:
        ws, graph, _ = _graph(config, path)
        if is_terminal() and not as_json:
            stats = _with_progress(graph, ws)
        else:
            stats = graph.update(allowed=lambda rel: not ws.is_denied(rel))
    except ToolhallError as error:
        raise fail(str(error)) from None
    data = asdict(stats)
    if as_json:
        emit_json(data)
        return
    typer.echo(
        f"{data['mode']}: {data['files']} files, {data['parsed']} parsed, {data['resolved']} resolved; "
        f"{data['nodes']} nodes, {data['edges']} edges (+{data['edges_added']}/-{data['edges_removed']}) "
        f"in {data['seconds']:.2f} s"
    )
    for name in data["syntax_errors"]:
        typer.echo(f"syntax errors in {name} (indexed around them)")
    for name in data["skipped"]:
        typer.echo(f"skipped {name}")


def _with_progress(graph: Any, ws: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description:<8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        tasks: dict[str, Any] = {}

        def report(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=max(total, 1))
            bar.update(tasks[stage], completed=done, total=max(total, 1))

        return graph.update(progress=report, allowed=lambda rel: not ws.is_denied(rel))


def graph(
    query: Annotated[str, typer.Argument(help="A read-only Cypher query.")],
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", help="A query parameter NAME=VALUE (JSON or text); repeatable.")
    ] = None,
    max_rows: Annotated[int, typer.Option("--max-rows", min=1, help="The most rows to print.")] = 200,
    path: Annotated[Path | None, typer.Option("--path", help="The workspace folder.")] = None,
    as_json: _JSON = False,
    config: _CONFIG = None,
) -> None:
    """Query the code graph with read-only Cypher and print the rows as a table.

    Example: toolhall graph "MATCH (c)-[:CALLS]->(f:Function {name: \\$n}) RETURN c.qname" -p n=main
    """
    params = _params(param or [])
    try:
        _, code_graph, _ = _graph(config, path)
        if not code_graph.exists():
            raise fail("there is no code graph yet", hint="run `toolhall index` first")
        outcome = code_graph.query(query, params, max_rows)
    except ToolCallError as error:
        hint = (error.details or {}).get("hint")
        raise fail(error.message, code=1, hint=hint) from None
    except ToolhallError as error:
        raise fail(str(error)) from None
    if as_json:
        emit_json({"columns": outcome.columns, "rows": outcome.rows, "truncated": outcome.truncated})
        return
    rows = [[_cell(v) for v in row] for row in outcome.rows]
    print_table(f"{len(rows)} row(s)", outcome.columns, rows)
    if outcome.truncated:
        typer.echo(f"(truncated at {max_rows} rows; use --max-rows)", err=True)


def _cell(value: Any) -> Any:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value


def _params(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise fail(f"--param: expected NAME=VALUE, got {item!r}", code=2)
        try:
            out[name] = json.loads(raw)
        except ValueError:
            out[name] = raw
    return out


def register(app: typer.Typer) -> None:
    """Add `index` and `graph` to the toolhall command."""
    app.command("index")(index)
    app.command("graph")(graph)
