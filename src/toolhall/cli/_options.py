"""Options shared by several commands."""

from __future__ import annotations

from typing import Annotated

import typer

ConfigOption = Annotated[
    str | None, typer.Option("--config", "-c", help="The toolhall.toml to read (default: ./toolhall.toml if present).")
]
WorkspaceOption = Annotated[
    str | None, typer.Option("--workspace", "-w", help="The folder tools work in (default: [workspace] root, or .).")
]
RoleOption = Annotated[str | None, typer.Option("--role", help="Only the tools this role may use.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (the default when output is piped).")]
