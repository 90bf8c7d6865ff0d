"""Docs that cannot drift: the README's example runs, and every command has help with an example."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolhall.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_example_runs_and_prints_what_it_says(tmp_path: Path) -> None:
    """The twenty-line example runs as written and prints the `# 42` its comments promise."""
    example = _python_blocks(README)[0]
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    expected = re.findall(r"print\(.*\)\s+# (.+)", example)
    assert done.stdout.split("\n")[: len(expected)] == expected


def test_readme_names_the_two_setup_commands() -> None:
    """The README promises `make run` and `make test`."""
    assert "make run" in README and "make test" in README


sys.path.insert(0, str(ROOT / "docs"))
from gen_cli import command_names, render  # noqa: E402 - the generator lives beside the page it writes

COMMANDS = command_names()


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command: str) -> None:
    """`toolhall COMMAND --help` works and shows an example."""
    result = CliRunner().invoke(app, [command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Example" in result.output


def test_cli_reference_is_current() -> None:
    """docs/cli.md is exactly what `make docs` generates from the commands' help."""
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == render(), "run `make docs`"
