"""`toolhall resolve` and `toolhall decisions` through the real CLI app."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolhall import ToolContext
from toolhall.cli import app
from toolhall.tools import decisions

runner = CliRunner()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with a worker manifest and a folder of toolbox modules."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "worker.toml").write_text(
        'name = "reviewer"\ndomain_toolboxes = ["git"]\nbuiltin_tools = ["WebSearch"]\n')
    (tmp_path / "toolboxes").mkdir()
    (tmp_path / "toolboxes" / "git.py").write_text(textwrap.dedent('''
        from toolhall import Toolbox, tool

        @tool
        def git_log() -> str:
            """Show the log."""
            return "log"

        toolbox = Toolbox([git_log])
    '''))
    return tmp_path


def test_resolve_json_lists_tools_sources_and_builtins(workdir: Path) -> None:
    """--json prints every tool with its source, and the built-in tools."""
    result = runner.invoke(app, ["resolve", "worker.toml", "-p", "toolboxes", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["worker"] == "reviewer" and data["builtin_tools"] == ["WebSearch"]
    sources = {row["name"]: row["source"] for row in data["tools"]}
    assert sources["git_log"] == "git" and sources["read_memory"] == "memory"
    assert sources["record_decision"] == "decisions"


def test_resolve_plain_output_is_tab_separated(workdir: Path) -> None:
    """Piped output is a header plus one tab-separated row per tool, built-ins last."""
    result = runner.invoke(app, ["resolve", "worker.toml", "--packages", "toolboxes"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "tool\tsource\troles\tdescription"
    assert "git_log\tgit\t*\tShow the log." in lines
    assert lines[-1] == "WebSearch\tbuiltin\t*\t"


def test_resolve_missing_toolbox_exits_1_naming_it(workdir: Path) -> None:
    """A missing domain toolbox is exit code 1 with the package named on stderr."""
    result = runner.invoke(app, ["resolve", "worker.toml", "--no-entry-points"])
    assert result.exit_code == 1
    assert "missing domain toolbox(es): git" in result.stderr


def test_resolve_bad_manifest_exits_1(workdir: Path) -> None:
    """An invalid manifest is reported with its problem."""
    (workdir / "bad.toml").write_text('nme = "x"\n')
    result = runner.invoke(app, ["resolve", "bad.toml"])
    assert result.exit_code == 1 and "unknown key 'nme'" in result.stderr


def test_decisions_prints_markdown_and_json(workdir: Path) -> None:
    """`toolhall decisions MEETING` renders the log as Markdown, or JSON with --json."""
    tb = decisions.toolbox(root=workdir / ".toolhall", meeting="planning")
    tb.call_sync("record_decision", {"question": "Ship?", "decision": "Yes", "reasoning": "Tests pass."},
                 context=ToolContext(worker="lead"))
    result = runner.invoke(app, ["decisions", "planning"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# Decisions: planning\n")
    assert "## 1. Ship?" in result.stdout and "**Decision:** Yes" in result.stdout
    as_json = runner.invoke(app, ["decisions", "planning", "--json"])
    entries = json.loads(as_json.stdout)
    assert entries[0]["worker"] == "lead" and entries[0]["reasoning"] == "Tests pass."


def test_decisions_root_option_and_config(workdir: Path) -> None:
    """--root picks the state folder; [tools.decisions] root in toolhall.toml does too."""
    decisions.toolbox(root=workdir / "state", meeting="m").call_sync(
        "record_decision", {"question": "q", "decision": "d", "reasoning": "r"})
    assert runner.invoke(app, ["decisions", "m", "--root", "state"]).exit_code == 0
    (workdir / "toolhall.toml").write_text('[tools.decisions]\nroot = "state"\n')
    assert "## 1. q" in runner.invoke(app, ["decisions", "m"]).stdout


def test_decisions_unknown_meeting_exits_1(workdir: Path) -> None:
    """A meeting with no log is exit code 1 saying where it looked."""
    result = runner.invoke(app, ["decisions", "nothing"])
    assert result.exit_code == 1 and "no decisions recorded for meeting 'nothing'" in result.stderr
    bad = runner.invoke(app, ["decisions", "../x"])
    assert bad.exit_code == 1 and "meeting id" in bad.stderr


def test_commands_have_help_with_an_example() -> None:
    """Both commands document themselves with an example."""
    for command in ("resolve", "decisions"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "Example: toolhall " + command in result.stdout
