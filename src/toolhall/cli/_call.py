"""`toolhall call`: run one tool through a session (policy, approval and the log apply)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import anyio
import typer

from .._result import ToolCall
from ._app import load_app, open_toolbox
from ._approver import TerminalApprover
from ._options import ConfigOption, JsonOption, RoleOption, WorkspaceOption
from ._render import emit_json, fail, is_terminal

__all__ = ["register"]


def _parse_args(raw_json: str | None, pairs: list[str]) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    if raw_json:
        try:
            loaded = json.loads(raw_json)
        except json.JSONDecodeError as exc:
            raise fail(
                f"ARGUMENTS is not valid JSON: {exc}", code=2, hint='quote it: \'{"path": "README.md"}\''
            ) from exc
        if not isinstance(loaded, dict):
            raise fail("ARGUMENTS must be a JSON object", code=2, hint='for example \'{"path": "README.md"}\'')
        arguments.update(loaded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise fail(f"--arg {pair!r} is not key=value", code=2, hint="for example --arg path=README.md")
        try:
            arguments[key] = json.loads(value)
        except json.JSONDecodeError:
            arguments[key] = value
    return arguments


def call(
    tool: Annotated[str, typer.Argument(help="The tool to run.")],
    arguments: Annotated[str | None, typer.Argument(help="Arguments as a JSON object.")] = None,
    arg: Annotated[list[str] | None, typer.Option("--arg", "-a", help="An argument as key=value (repeatable).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve without asking.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Validate, apply policy and log; run only read-only tools.")
    ] = False,
    role: RoleOption = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Run a tool and print its result (exit code 1 when the call fails).

    Example: toolhall call read_file '{"path": "README.md"}'   or   toolhall call read_file --arg path=README.md
    """
    from .._session import Session

    parsed = _parse_args(arguments, arg or [])
    app = load_app(config, workspace)

    async def run() -> Any:
        async with open_toolbox(app) as toolbox:
            session = Session(
                toolbox,
                workspace=app.workspace,
                policy=app.policy(),
                approver=TerminalApprover(assume_yes=yes),
                log=app.log_store(),
                role=role or app.config.role,
                max_output_chars=app.config.limits.max_output_chars,
                default_timeout=app.config.limits.timeout,
                dry_run=dry_run,
            )
            try:
                return await session.call(ToolCall(tool, parsed))
            finally:
                await session.aclose()

    result = anyio.run(run)
    if as_json or not is_terminal():
        emit_json(result.to_dict())
    elif result.ok:
        typer.echo(result.output)
    else:
        assert result.error is not None
        typer.echo(f"{result.error.code}: {result.error.message}", err=True)
    if not result.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add `call`."""
    app.command("call")(call)
