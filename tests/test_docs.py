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


def test_readme_server_example_builds_a_working_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The 'server in ten lines' builds a session that serves the file tools and the example's `add`."""
    import toolhall.mcp

    served: list[object] = []

    async def fake_serve_stdio(target: object) -> None:
        served.append(target)

    monkeypatch.setattr(toolhall.mcp, "serve_stdio", fake_serve_stdio)
    monkeypatch.chdir(tmp_path)
    first, server = _python_blocks(README)[:2]
    namespace: dict[str, object] = {}
    exec(compile(first + "\n" + server, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
    capsys.readouterr()
    [session] = served
    names = [entry["name"] for entry in session.schemas("mcp")]  # type: ignore[attr-defined]
    assert "read_file" in names and "add" in names
    assert session.call_sync("add", {"a": 2, "b": 3}).output == "5"  # type: ignore[attr-defined]
    assert session.call_sync("delete_file", {"path": "x"}).error.code == "denied"  # type: ignore[attr-defined]
