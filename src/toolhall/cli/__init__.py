"""The `toolhall` command.

Each command group lives in its own private module exposing `register(app)`; this module wires them.
Heavy dependencies load inside the commands, so `toolhall --help` stays quick.
"""

from __future__ import annotations

import typer

from . import _call, _graph, _init, _log, _serve, _tools, _workers

__all__ = ["app", "main"]

app = typer.Typer(
    name="toolhall",
    help="The tool layer for LLM agents: list, call and serve tools safely.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in (_tools, _call, _serve, _log, _graph, _workers, _init):
    _module.register(app)


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
