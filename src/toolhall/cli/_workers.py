"""`toolhall resolve` (a worker's tool set) and `toolhall decisions` (a meeting's decision log)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .._errors import ToolhallError

__all__ = ["register"]

_JSON = Annotated[bool, typer.Option("--json", help="Print JSON.")]
_CONFIG = Annotated[
    str | None, typer.Option("--config", "-c", help="The toolhall.toml to read (default: ./toolhall.toml if present).")
]


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _settings(config: str | None) -> tuple[Path, dict[str, dict[str, Any]]]:
    """The workspace folder and the `[tools.<module>]` options from toolhall.toml (defaults without one)."""
    from .._config import load_config

    loaded = load_config(config)
    base = Path(config).parent if config else Path.cwd()
    root = Path(loaded.workspace.root).expanduser()
    root = root if root.is_absolute() else (base / root).absolute()
    options = {m: loaded.tool_options(m) for m in ("memory", "decisions")}
    return root, options


def _is_terminal() -> bool:
    return sys.stdout.isatty()


def resolve(
    manifest: Annotated[Path, typer.Argument(help="The worker manifest (.toml, .yaml/.yml or .json).")],
    packages: Annotated[
        list[Path] | None,
        typer.Option("--packages", "-p", help="A folder of toolbox modules (<name>.py defining toolbox); repeatable."),
    ] = None,
    project: Annotated[Path | None, typer.Option(help="The project folder (default: the workspace).")] = None,
    meeting: Annotated[str | None, typer.Option(help="The meeting decisions are recorded under.")] = None,
    memory_root: Annotated[
        Path | None, typer.Option(help="Where memory lives (default: [tools.memory] root, or ~/.toolhall/memory).")
    ] = None,
    entry_points: Annotated[
        bool, typer.Option("--entry-points/--no-entry-points", help="Search installed toolhall.toolboxes packages.")
    ] = True,
    as_json: _JSON = False,
    config: _CONFIG = None,
) -> None:
    """Show the tools a worker gets: each tool with its source toolbox, then the runtime's built-ins.

    Example: toolhall resolve workers/reviewer.toml -p toolboxes/ --json
    """
    from .._manifest import WorkerSpec
    from .._resolve import resolve_toolset

    try:
        workspace, options = _settings(config)
        spec = WorkerSpec.load(manifest)
        folders = [str(p) for p in packages or []]
        resolved = resolve_toolset(
            spec, folders or None, project=project or workspace, meeting=meeting,
            memory_root=memory_root or options["memory"].get("root"), entry_points=entry_points)
    except ToolhallError as exc:
        raise _fail(str(exc)) from None
    rows = resolved.rows()
    if as_json:
        typer.echo(json.dumps({"worker": spec.name, "role": spec.role, "tools": rows,
                               "builtin_tools": resolved.builtin_tools}, indent=2, ensure_ascii=False))
        return
    if _is_terminal():
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"worker {spec.name}" + (f" (role {spec.role})" if spec.role else ""))
        for column in ("tool", "source", "roles", "description"):
            table.add_column(column)
        for row in rows:
            table.add_row(row["name"], row["source"], ",".join(row["roles"]) or "*", row["description"][:80])
        console = Console()
        console.print(table)
        console.print("built-in tools: " + (", ".join(resolved.builtin_tools) or "none"))
        return
    typer.echo("tool\tsource\troles\tdescription")
    for row in rows:
        typer.echo(f"{row['name']}\t{row['source']}\t{','.join(row['roles']) or '*'}\t{row['description']}")
    for name in resolved.builtin_tools:
        typer.echo(f"{name}\tbuiltin\t*\t")


def decisions(
    meeting: Annotated[str, typer.Argument(help="The meeting id.")],
    root: Annotated[
        Path | None,
        typer.Option("--root", help="The state folder (default: [tools.decisions] root, or <workspace>/.toolhall)."),
    ] = None,
    as_json: _JSON = False,
    config: _CONFIG = None,
) -> None:
    """Print a meeting's decisions as Markdown (or JSON), oldest first.

    Example: toolhall decisions 2026-11-22-planning --json
    """
    from dataclasses import asdict

    from ..tools.decisions import read_decisions, to_markdown

    try:
        workspace, options = _settings(config)
        state = root or options["decisions"].get("root") or workspace / ".toolhall"
        log = read_decisions(state, meeting)
    except ToolhallError as exc:
        raise _fail(str(exc)) from None
    if not log.entries and not log.path.exists():
        raise _fail(f"no decisions recorded for meeting {meeting!r} (looked for {log.path})")
    if as_json:
        typer.echo(json.dumps([asdict(e) for e in log.entries], indent=2, ensure_ascii=False))
        return
    text = to_markdown(log)
    if _is_terminal():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
        return
    typer.echo(text, nl=False)


def register(app: typer.Typer) -> None:
    """Add `resolve` and `decisions` to the `toolhall` command."""
    app.command("resolve")(resolve)
    app.command("decisions")(decisions)
