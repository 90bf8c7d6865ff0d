"""Write docs/cli.md from the commands' own help (run `make docs`; tests/test_docs.py checks it is current)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer.main
from typer.testing import CliRunner

from toolhall.cli import app

HEADER = """# The `toolhall` command

Generated from each command's `--help` by `docs/gen_cli.py` (`make docs`); `tests/test_docs.py` fails when
this file is out of date. Output is rich on a terminal and plain or `--json` when piped. Errors exit with
code 1, bad usage with code 2 and a hint.
"""


def command_names() -> list[str]:
    """Every top-level command and group, sorted."""
    group = typer.main.get_command(app)
    return sorted(group.commands)  # type: ignore[attr-defined]


def render() -> str:
    """The whole page."""
    runner = CliRunner()
    parts = [HEADER]
    for name in command_names():
        result = runner.invoke(app, [name, "--help"], terminal_width=100, env={"NO_COLOR": "1", "TERM": "dumb"})
        text = "\n".join(line.rstrip() for line in result.output.strip().splitlines())
        parts.append(f"## toolhall {name}\n\n```text\n{text}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    target = Path(__file__).with_name("cli.md")
    target.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {target}\n")
