"""The `toolhall` command as a person meets it: through a real terminal (pexpect) and through pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

PROMPT = r"Allow\? \[y\]es / \[n\]o / \[a\]lways for this tool"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLHALL_")}
    env.update(COLUMNS="200", TERM="xterm")
    return env


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A folder with a file to read, and no toolhall.toml."""
    (tmp_path / "notes.txt").write_text("first line\nsecond line\n")
    return tmp_path


def terminal(workspace: Path, *args: str) -> pexpect.spawn:
    """`toolhall ARGS` on a real pseudo-terminal in the workspace."""
    return pexpect.spawn(
        sys.executable, ["-m", "toolhall", *args], cwd=str(workspace), env=_env(), encoding="utf-8", timeout=60,
        dimensions=(50, 200),
    )  # fmt: skip


def finish(child: pexpect.spawn) -> tuple[int, str]:
    """Wait for the end; returns (exit code, everything printed after the last expect)."""
    child.expect(pexpect.EOF)
    child.close()
    return int(child.exitstatus if child.exitstatus is not None else -1), str(child.before)


def piped(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`toolhall ARGS` with stdin, stdout and stderr all pipes."""
    return subprocess.run(  # noqa: S603 - our own command line
        [sys.executable, "-m", "toolhall", *args], cwd=workspace, env=_env(), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


WRITE = ("call", "write_file", "--arg", "path=out.txt", "--arg", "content=written")


def test_terminal_asks_before_a_write_and_yes_runs_it(workspace: Path) -> None:
    """On a terminal a write shows the call and asks; `y` runs it and prints the result."""
    child = terminal(workspace, *WRITE)
    child.expect(PROMPT)
    shown = str(child.before)
    assert "toolhall wants to run write_file" in shown and '"path": "out.txt"' in shown and "out.txt" in shown
    child.sendline("y")
    code, printed = finish(child)
    assert code == 0 and '"created":true' in printed.replace(" ", "")
    assert (workspace / "out.txt").read_text() == "written"


def test_terminal_no_denies_the_write(workspace: Path) -> None:
    """`n` refuses: nothing is written, the refusal is printed and the exit code is 1."""
    child = terminal(workspace, *WRITE)
    child.expect(PROMPT)
    child.sendline("n")
    code, printed = finish(child)
    assert code == 1 and "denied" in printed
    assert not (workspace / "out.txt").exists()


def test_terminal_always_approves_the_tool(workspace: Path) -> None:
    """`a` (always for this tool) runs the call."""
    child = terminal(workspace, *WRITE)
    child.expect(PROMPT)
    child.sendline("a")
    code, _ = finish(child)
    assert code == 0 and (workspace / "out.txt").read_text() == "written"


def test_terminal_empty_answer_defaults_to_no(workspace: Path) -> None:
    """Just pressing Enter is a no: the default never runs a write."""
    child = terminal(workspace, *WRITE)
    child.expect(PROMPT)
    child.sendline("")
    code, _ = finish(child)
    assert code == 1 and not (workspace / "out.txt").exists()


def test_terminal_yes_flag_and_read_only_tools_do_not_ask(workspace: Path) -> None:
    """`--yes` runs a write without a prompt; a read-only tool never asks and prints its text."""
    child = terminal(workspace, *WRITE, "--yes")
    code, printed = finish(child)
    assert code == 0 and "Allow?" not in printed and (workspace / "out.txt").exists()
    child = terminal(workspace, "call", "read_file", "--arg", "path=notes.txt")
    code, printed = finish(child)
    assert code == 0 and "Allow?" not in printed and "second line" in printed


def test_terminal_dry_run_neither_asks_nor_writes(workspace: Path) -> None:
    """`--dry-run` reports what policy would do, asks nothing and leaves the folder alone."""
    child = terminal(workspace, *WRITE, "--dry-run")
    code, printed = finish(child)
    assert code == 0 and "Allow?" not in printed and "dry run" in printed
    assert not (workspace / "out.txt").exists()


def test_piped_call_prints_json_and_exit_codes(workspace: Path) -> None:
    """Piped output is JSON; a failed call exits 1 with the error code in the JSON."""
    done = piped(workspace, "call", "read_file", '{"path": "notes.txt"}')
    result = json.loads(done.stdout)
    assert done.returncode == 0 and result["ok"] is True and "second line" in result["output"]
    failed = piped(workspace, "call", "read_file", "--arg", "path=missing.txt")
    error = json.loads(failed.stdout)
    assert failed.returncode == 1 and error["ok"] is False and error["error"]["code"] == "not_found"


def test_piped_write_without_a_terminal_is_denied_with_a_hint(workspace: Path) -> None:
    """With no terminal to ask on, a write is denied (never run) and the hint says to pass --yes."""
    done = piped(workspace, *WRITE)
    assert done.returncode == 1 and json.loads(done.stdout)["error"]["code"] == "denied"
    assert "--yes" in done.stderr and not (workspace / "out.txt").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("call", "read_file", "{not json"), "not valid JSON"),
        (("call", "read_file", "[1, 2]"), "must be a JSON object"),
        (("call", "read_file", "--arg", "novalue"), "is not key=value"),
        (("call",), "Missing argument"),
        (("list", "--format", "yaml"), "'yaml' is not one of"),
        (("schema", "read_file", "--format", "yaml"), "unknown format"),
        (("call", "read_file", "--no-such-option"), "No such option"),
    ],
)
def test_usage_errors_exit_2_with_a_hint_and_no_traceback(workspace: Path, args: tuple[str, ...], needle: str) -> None:
    """Bad command lines: exit 2, the problem, a hint, never a traceback."""
    done = piped(workspace, *args)
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr
    assert "hint:" in done.stderr or "--help" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_init_then_doctor_reports_the_written_config(workspace: Path) -> None:
    """`init` writes a toml that `doctor --json` then reads; a second `init` refuses without --force."""
    assert piped(workspace, "init").returncode == 0
    again = piped(workspace, "init")
    assert again.returncode == 1 and "--force" in again.stderr
    done = piped(workspace, "doctor", "--json")
    report: dict[str, Any] = json.loads(done.stdout)
    assert done.returncode == 0
    assert report["config"] == str(workspace / "toolhall.toml")
    assert report["effective"]["serve"]["port"] == 8765
    assert {"isolation", "optional", "store", "problems"} <= set(report)


def test_init_template_is_a_valid_config_with_every_section(workspace: Path) -> None:
    """The commented template loads cleanly and names every section a user may need."""
    from toolhall._config import load_config

    assert piped(workspace, "init").returncode == 0
    text = (workspace / "toolhall.toml").read_text()
    for section in ("[workspace]", "[policy]", "[store]", "[limits]", "[serve]", "[tools.http]", "[[mcp.servers]]"):
        assert section in text
    assert load_config(workspace / "toolhall.toml", environ={}).limits.max_output_chars == 50_000


def test_list_formats_give_each_providers_shape(workspace: Path) -> None:
    """`list --format` prints the tools as OpenAI, Anthropic and MCP expect; piped `list` is JSON."""
    openai = json.loads(piped(workspace, "list", "--format", "openai").stdout)
    assert openai[0]["type"] == "function" and "parameters" in openai[0]["function"]
    anthropic = {t["name"]: t for t in json.loads(piped(workspace, "list", "--format", "anthropic").stdout)}
    assert anthropic["read_file"]["input_schema"]["properties"]["path"]["type"] == "string"
    mcp = {t["name"]: t for t in json.loads(piped(workspace, "list", "--format", "mcp").stdout)}
    assert mcp["read_file"]["annotations"]["readOnlyHint"] is True
    plain = json.loads(piped(workspace, "list").stdout)
    assert {"name", "description", "roles", "annotations"} <= set(plain[0])
    assert {t["name"] for t in plain} == set(anthropic) == set(mcp)


def test_schema_of_one_tool_and_of_an_unknown_one(workspace: Path) -> None:
    """`schema TOOL --format gemini` prints one declaration; an unknown tool exits 1 with a hint."""
    done = piped(workspace, "schema", "read_file", "--format", "gemini")
    assert done.returncode == 0 and json.loads(done.stdout)["name"] == "read_file"
    missing = piped(workspace, "schema", "nope")
    assert missing.returncode == 1 and "no tool named 'nope'" in missing.stderr and "hint:" in missing.stderr
