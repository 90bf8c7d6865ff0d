"""`toolhall list` and `toolhall schema`: what tools there are, in any provider's format."""

from __future__ import annotations

from typing import Annotated, Literal

import anyio
import typer

from ._app import load_app, open_toolbox
from ._options import ConfigOption, JsonOption, RoleOption, WorkspaceOption
from ._render import emit_json, fail, is_terminal, print_table

__all__ = ["register"]

FORMATS = ("openai", "openai-responses", "anthropic", "gemini", "mcp", "json")
FormatName = Literal["table", "openai", "openai-responses", "anthropic", "gemini", "mcp", "json"]


def _flags(annotations: object) -> str:
    names = [n for n in ("read_only", "destructive", "idempotent", "open_world") if getattr(annotations, n)]
    return ",".join(name.replace("_", "-") for name in names)


def list_tools(
    role: RoleOption = None,
    format: Annotated[  # noqa: A002 - the option is called --format
        FormatName, typer.Option("--format", "-f", help="table, or a provider format to print schemas in.")
    ] = "table",
    strict: Annotated[bool, typer.Option("--strict", help="OpenAI strict-mode schemas.")] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    workspace: WorkspaceOption = None,
) -> None:
    """List the tools toolhall serves for this folder.

    Example: toolhall list --role impl --format anthropic
    """
    app = load_app(config, workspace)

    async def run() -> None:
        async with open_toolbox(app) as toolbox:
            tb = toolbox.for_role(role) if role else toolbox
            if format != "table":
                emit_json(tb.schemas(format, strict=strict))
                return
            if as_json or not is_terminal():
                emit_json(
                    [
                        {
                            "name": t.name,
                            "description": t.description.split("\n")[0],
                            "roles": sorted(t.roles),
                            "annotations": _flags(t.annotations),
                        }
                        for t in tb
                    ]
                )
                return
            rows = [
                (t.name, _flags(t.annotations), ",".join(sorted(t.roles)) or "*", t.description.split("\n")[0][:80])
                for t in tb
            ]
            print_table(f"{len(rows)} tools", ["tool", "annotations", "roles", "description"], rows)

    anyio.run(run)


def schema(
    tool: Annotated[str, typer.Argument(help="The tool's name.")],
    format: Annotated[str, typer.Option("--format", "-f", help=f"One of: {', '.join(FORMATS)}.")] = "json",  # noqa: A002
    strict: Annotated[bool, typer.Option("--strict", help="OpenAI strict-mode schema.")] = False,
    config: ConfigOption = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Print one tool's schema in a provider's format.

    Example: toolhall schema read_file --format openai --strict
    """
    if format not in FORMATS:
        raise fail(f"unknown format {format!r}", code=2, hint=f"use one of: {', '.join(FORMATS)}")
    app = load_app(config, workspace)

    async def run() -> None:
        async with open_toolbox(app) as toolbox:
            found = toolbox.get(tool)
            if found is None:
                raise fail(f"no tool named {tool!r}", hint="toolhall list shows the tools there are")
            emit_json(found.schema(format, strict=strict))

    anyio.run(run)


def register(app: typer.Typer) -> None:
    """Add `list` and `schema`."""
    app.command("list")(list_tools)
    app.command("schema")(schema)
