"""`toolhall log`: list recent calls, show one in full, prune old ones."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

import typer

from ._app import load_app
from ._options import ConfigOption, JsonOption, WorkspaceOption
from ._render import emit_json, fail, is_terminal, print_table

__all__ = ["parse_age", "register"]

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)?\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}

log_app = typer.Typer(
    name="log",
    help="The call log: recent calls, one call in full, pruning.\n\nExample: toolhall log --status error --since 1h",
    invoke_without_command=True,
    no_args_is_help=False,
)


def parse_age(text: str, option: str) -> timedelta:
    """`30d`, `12h`, `15m`, `90s`, `2w` (a bare number is days) as a timedelta; a clear error otherwise."""
    found = _AGE.match(text)
    if found is None:
        raise fail(f"{option} {text!r} is not an age", code=2, hint="write a number and a unit: 90s, 15m, 12h, 30d, 2w")
    return timedelta(**{_UNITS[found.group(2) or "d"]: float(found.group(1))})


def _store(config: str | None, workspace: str | None) -> Any:
    return load_app(config, workspace).log_store()


def _subject(record: Any) -> str:
    text = ", ".join(record.subjects)
    return text if len(text) <= 60 else text[:57] + "..."


@log_app.callback()
def list_calls(
    ctx: typer.Context,
    tool: Annotated[str | None, typer.Option("--tool", help="Only calls of this tool.")] = None,
    status: Annotated[
        str | None,
        typer.Option("--status", help="Only this status: pending, running, ok, error, denied, timeout, cancelled."),
    ] = None,
    session: Annotated[str | None, typer.Option("--session", help="Only calls of this session id.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only calls within this age: 15m, 12h, 7d.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many calls.")] = 50,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    workspace: WorkspaceOption = None,
) -> None:
    """List recent calls, newest first.

    Example: toolhall log --tool run_command --status error --since 1d
    """
    if ctx.invoked_subcommand is not None:
        return
    age = parse_age(since, "--since") if since else None
    store = _store(config, workspace)
    try:
        records = store.calls(session_id=session, tool=tool, status=status, since=age, limit=limit)
    except ValueError as exc:
        raise fail(str(exc), code=2) from None
    finally:
        store.close()
    if as_json or not is_terminal():
        emit_json([_summary(r) for r in records])
        return
    rows = [
        (r.id, r.started_at.strftime("%Y-%m-%d %H:%M:%S"), r.tool, r.status,
         f"{r.duration_ms:.1f} ms" if r.duration_ms is not None else "", _subject(r), "yes" if r.truncated else "")
        for r in records
    ]  # fmt: skip
    print_table("toolhall calls", ["id", "started", "tool", "status", "duration", "subject", "truncated"], rows)


def _summary(record: Any) -> dict[str, Any]:
    full: dict[str, Any] = record.to_dict()
    for key in ("output", "data", "input"):
        full.pop(key, None)
    return full


@log_app.command("show")
def show(
    call_id: Annotated[str, typer.Argument(help="The call id (as `toolhall log` lists it).")],
    as_json: JsonOption = False,
    config: ConfigOption = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Print one call in full: arguments, subjects, output, error.

    Example: toolhall log show call_3f2a9c...
    """
    store = _store(config, workspace)
    try:
        record = store.get(call_id)
    finally:
        store.close()
    if record is None:
        raise fail(f"no call with id {call_id!r} in the log", hint="list ids with `toolhall log`")
    data = record.to_dict()
    if as_json or not is_terminal():
        emit_json(data)
        return
    for key, value in data.items():
        if key in ("output",) or value in (None, [], ""):
            continue
        typer.echo(f"{key:>14}: {value}")
    if record.output:
        typer.echo("        output:")
        typer.echo(record.output)


@log_app.command("prune")
def prune(
    older_than: Annotated[str, typer.Option("--older-than", help="Delete calls older than this: 30d, 12h.")] = "30d",
    as_json: JsonOption = False,
    config: ConfigOption = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Delete old calls (and old approval requests) so the log stays bounded.

    Example: toolhall log prune --older-than 30d
    """
    age = parse_age(older_than, "--older-than")
    store = _store(config, workspace)
    try:
        deleted = store.prune(age)
    finally:
        store.close()
    if as_json or not is_terminal():
        emit_json({"deleted": deleted, "older_than": older_than})
    else:
        typer.echo(f"deleted {deleted} call(s) older than {older_than}")


def register(app: typer.Typer) -> None:
    """Add the `log` command group."""
    app.add_typer(log_app)
