"""The `toolhall` command.

Each command group lives in its own private module exposing `register(app)`; this module wires them.
"""

from __future__ import annotations

import importlib

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="toolhall",
    help="The tool layer for LLM agents: list, call and serve tools safely.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Modules are added by the issues that build them; missing ones are skipped until they land.
_COMMAND_MODULES = ("_tools", "_call", "_serve", "_log", "_graph", "_workers", "_init")


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        module.register(app)


_register_all()


def main() -> None:
    """Run the `toolhall` command: a `ToolhallError` is a one-line error and exit code 1, never a traceback.

    Usage errors are typer's own: the usage line, the problem, a hint to `--help`, and exit code 2.
    """
    from .._errors import ToolhallError

    try:
        app()
    except ToolhallError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
