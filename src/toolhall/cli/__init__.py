"""The `toolhall` command.

Each command group lives in its own private module exposing `register(app)`; this module wires them.
"""

from __future__ import annotations

import importlib

import click
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
    """Run the `toolhall` command: a `ToolhallError` is a one-line error and exit code 1, never a traceback."""
    from .._errors import ToolhallError

    try:
        app(standalone_mode=False)
    except click.exceptions.UsageError as exc:
        exc.show()
        typer.echo("hint: toolhall COMMAND --help shows the options and an example", err=True)
        raise SystemExit(2) from None
    except click.exceptions.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except click.exceptions.Abort:
        typer.echo("aborted", err=True)
        raise SystemExit(1) from None
    except ToolhallError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    except click.exceptions.ClickException as exc:
        exc.show()
        raise SystemExit(exc.exit_code) from None
