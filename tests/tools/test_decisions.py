"""Decision log: entries, meeting selection, Markdown rendering, and 8 concurrent writer processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolhall import ConfigError, ToolContext
from toolhall.tools import decisions

ARGS = {"question": "Which database?", "decision": "Postgres", "reasoning": "We need row-level locks."}


def test_record_appends_a_full_entry(tmp_path: Path) -> None:
    """An entry holds the timestamp, worker, meeting, session id and the three fields, one JSON line each."""
    tb = decisions.toolbox(root=tmp_path, meeting="m-1")
    ctx = ToolContext(worker="planner", session_id="s-9")
    assert tb.call_sync("record_decision", ARGS, context=ctx).ok
    assert tb.call_sync("record_decision", {**ARGS, "decision": "SQLite"}, context=ctx).ok
    lines = (tmp_path / "decisions" / "m-1.jsonl").read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["worker"] == "planner" and first["session_id"] == "s-9" and first["meeting"] == "m-1"
    assert first["question"] == "Which database?" and first["timestamp"].endswith("Z")
    log = decisions.read_decisions(tmp_path, "m-1")
    assert [e.decision for e in log.entries] == ["Postgres", "SQLite"] and log.skipped == 0


def test_meeting_falls_back_to_context_then_session(tmp_path: Path) -> None:
    """Without a factory meeting, extra["meeting"] is used, then the session id."""
    tb = decisions.toolbox(root=tmp_path)
    tb.call_sync("record_decision", ARGS, context=ToolContext(extra={"meeting": "standup"}, session_id="s1"))
    tb.call_sync("record_decision", ARGS, context=ToolContext(session_id="s2"))
    assert (tmp_path / "decisions" / "standup.jsonl").exists()
    assert (tmp_path / "decisions" / "s2.jsonl").exists()
    result = tb.call_sync("record_decision", ARGS)
    assert result.error.code == "invalid_input" and result.error.details == {"reason": "no_meeting"}


def test_bad_meeting_ids_are_refused(tmp_path: Path) -> None:
    """A meeting id that could not be a file name is refused, at the factory and from the context."""
    with pytest.raises(ConfigError, match="meeting id"):
        decisions.toolbox(root=tmp_path, meeting="../escape")
    tb = decisions.toolbox(root=tmp_path)
    result = tb.call_sync("record_decision", ARGS, context=ToolContext(extra={"meeting": "a/b"}))
    assert result.error.code == "invalid_input"
    assert not (tmp_path / "decisions").exists() or list((tmp_path / "decisions").iterdir()) == []


def test_empty_fields_are_invalid(tmp_path: Path) -> None:
    """question, decision and reasoning are required and non-empty."""
    tb = decisions.toolbox(root=tmp_path, meeting="m")
    assert tb.call_sync("record_decision", {**ARGS, "reasoning": ""}).error.code == "invalid_input"
    assert tb.call_sync("record_decision", {"question": "q"}).error.code == "invalid_input"


def test_symlinked_log_is_not_written_through(tmp_path: Path) -> None:
    """A log file replaced by a symlink is refused rather than appended through."""
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    (tmp_path / "decisions").mkdir()
    (tmp_path / "decisions" / "m.jsonl").symlink_to(target)
    result = decisions.toolbox(root=tmp_path, meeting="m").call_sync("record_decision", ARGS)
    assert result.error.code == "denied" and target.read_text() == "keep\n"


def test_markdown_rendering_and_unreadable_lines(tmp_path: Path) -> None:
    """to_markdown numbers entries under headings; torn lines are skipped and counted."""
    tb = decisions.toolbox(root=tmp_path, meeting="m")
    tb.call_sync("record_decision", ARGS, context=ToolContext(worker="w"))
    with (tmp_path / "decisions" / "m.jsonl").open("a") as f:
        f.write('{"torn": \n')
    log = decisions.read_decisions(tmp_path, "m")
    text = decisions.to_markdown(log)
    assert text.startswith("# Decisions: m\n")
    assert "## 1. Which database?" in text and "**Decision:** Postgres" in text
    assert "**Reasoning:** We need row-level locks." in text
    assert log.skipped == 1 and "1 unreadable line(s) skipped" in text
    empty = decisions.to_markdown(decisions.read_decisions(tmp_path, "none"))
    assert "No decisions recorded" in empty


WRITER = textwrap.dedent("""
    import sys
    from toolhall import ToolContext
    from toolhall.tools import decisions
    root, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tb = decisions.toolbox(root=root, meeting="busy")
    ctx = ToolContext(worker=worker)
    big = "x" * 9000  # larger than PIPE_BUF, so atomicity is not an accident of small writes
    for i in range(count):
        r = tb.call_sync("record_decision", {"question": f"{worker}-{i}", "decision": "d", "reasoning": big},
                         context=ctx)
        assert r.ok, r.output
""")


def test_eight_processes_never_interleave_or_lose_entries(tmp_path: Path) -> None:
    """8 processes appending at once leave every entry intact on its own line, none lost."""
    count = 60
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), f"w{n}", str(count)])
             for n in range(8)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 8
    lines = (tmp_path / "decisions" / "busy.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b""
    entries = [json.loads(line) for line in lines[:-1]]
    assert len(entries) == 8 * count
    assert sorted(e["question"] for e in entries) == sorted(f"w{n}-{i}" for n in range(8) for i in range(count))
    for n in range(8):  # each writer's own entries stay in its order
        mine = [int(e["question"].split("-")[1]) for e in entries if e["worker"] == f"w{n}"]
        assert mine == list(range(count))
