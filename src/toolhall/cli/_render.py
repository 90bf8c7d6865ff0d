"""Output shared by every command: rich tables on a terminal, plain text or JSON when piped."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import typer

__all__ = ["emit_json", "fail", "is_terminal", "print_table"]


def is_terminal() -> bool:
    """Whether stdout is a terminal (rich output) rather than a pipe (plain output)."""
    return sys.stdout.isatty()


def emit_json(value: Any) -> None:
    """Print a value as JSON."""
    typer.echo(json.dumps(value, indent=2, default=str, ensure_ascii=False))


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table: rich on a terminal, tab-separated when piped."""
    if is_terminal():
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title)
        for column in columns:
            table.add_column(column)
        for row in rows:
            table.add_row(*("" if cell is None else str(cell) for cell in row))
        Console().print(table)
        return
    typer.echo("\t".join(columns))
    for row in rows:
        typer.echo("\t".join("" if cell is None else str(cell).replace("\n", " ") for cell in row))


def fail(message: str, *, code: int = 1, hint: str | None = None) -> typer.Exit:
    """Print an error (and a hint) to stderr; return the Exit to raise."""
    typer.echo(f"error: {message}", err=True)
    if hint:
        typer.echo(f"hint: {hint}", err=True)
    return typer.Exit(code)
