"""The interactive terminal approver for `toolhall call`: y / n / always for this tool."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

__all__ = ["TerminalApprover"]


class TerminalApprover:
    """Ask on the terminal before a tool that is not read-only runs."""

    def __init__(self, *, assume_yes: bool = False) -> None:
        self.assume_yes = assume_yes

    def __call__(self, request: Any) -> str:
        """Show the call and read the answer (`approve`, `deny` or `approve_session`)."""
        if self.assume_yes:
            return "approve"
        if not sys.stdin.isatty():
            typer.echo("denied: the tool needs approval and stdin is not a terminal (pass --yes)", err=True)
            return "deny"
        tool = getattr(request, "tool", None)
        name = getattr(tool, "name", None) or getattr(request, "tool_name", "?")
        arguments = getattr(request, "arguments", {})
        subjects = getattr(request, "subjects", [])
        typer.echo(f"toolhall wants to run {name}", err=True)
        typer.echo(f"  arguments: {json.dumps(arguments, default=str)[:2000]}", err=True)
        if subjects:
            typer.echo(f"  subjects:  {', '.join(map(str, subjects))}", err=True)
        answer = typer.prompt("Allow? [y]es / [n]o / [a]lways for this tool", default="n", err=True)
        choice = answer.strip().lower()[:1]
        if choice == "y":
            return "approve"
        if choice == "a":
            return "approve_session"
        return "deny"
