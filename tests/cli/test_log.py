"""`toolhall log`: list, filter, show, prune, JSON output and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolhall import Policy, Session, Toolbox, tool
from toolhall.cli import app


@tool(read_only=True, subject="path")
def peek(path: str) -> str:
    """Pretend to read."""
    return f"contents of {path}"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace whose log holds two calls."""
    with Session(Toolbox([peek]), workspace=tmp_path, policy=Policy()) as session:
        session.call_sync("peek", {"path": "a.txt"})
        session.call_sync("nope")
    return tmp_path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_log_lists_calls_as_json_when_piped(workspace: Path) -> None:
    """Both calls are listed, newest first, without their outputs."""
    code, out = run("log", "--workspace", str(workspace), "--json")
    rows = json.loads(out)
    assert code == 0 and [r["tool"] for r in rows] == ["nope", "peek"]
    assert "output" not in rows[0] and rows[1]["subjects"] == ["a.txt"]


def test_log_filters_by_tool_status_and_age(workspace: Path) -> None:
    """--tool, --status and --since narrow the list."""
    _, out = run("log", "-w", str(workspace), "--status", "error", "--since", "1h", "--json")
    assert [r["tool"] for r in json.loads(out)] == ["nope"]
    _, out = run("log", "-w", str(workspace), "--tool", "peek", "--limit", "1", "--json")
    assert [r["status"] for r in json.loads(out)] == ["ok"]


def test_log_show_prints_one_call_in_full(workspace: Path) -> None:
    """show ID gives the whole row, output included."""
    _, out = run("log", "-w", str(workspace), "--tool", "peek", "--json")
    call_id = json.loads(out)[0]["id"]
    code, shown = run("log", "show", call_id, "-w", str(workspace), "--json")
    assert code == 0 and json.loads(shown)["output"] == "contents of a.txt"


def test_log_prune_deletes_old_calls(workspace: Path) -> None:
    """prune --older-than 0s removes everything so far."""
    code, out = run("log", "prune", "--older-than", "0s", "-w", str(workspace), "--json")
    assert code == 0 and json.loads(out)["deleted"] == 2


def test_a_bad_age_is_a_usage_error(workspace: Path) -> None:
    """--since 3x names the option and the accepted units."""
    code, out = run("log", "-w", str(workspace), "--since", "3x")
    assert code == 2


def test_a_bad_status_is_a_usage_error(workspace: Path) -> None:
    """An unknown status lists the allowed ones."""
    code, _ = run("log", "-w", str(workspace), "--status", "done")
    assert code == 2
