"""Task chains: the life cycle, the role matrix in every provider format, and spawning impl sessions."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import toolhall
from toolhall import ConfigError, Toolbox, ToolContext
from toolhall.tools import chains

CONTROL = ["chain:status", "task:list", "task:start", "task:approve", "spawn_impl_session"]
IMPL = ["chain:status", "task:status", "task:complete"]
FORMATS = ["openai", "openai-responses", "anthropic", "gemini", "mcp", "json"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with chain CH-1 holding an impl task T-1, an impl task T-2 and a control task T-3."""
    chains.new_task(tmp_path, "CH-1", "T-1", "Build the parser", body="Parse the thing.\n")
    chains.new_task(tmp_path, "CH-1", "T-2", "Write docs")
    chains.new_task(tmp_path, "CH-1", "T-3", "Review", type="control")
    return tmp_path


@pytest.fixture
def tb(project: Path) -> Toolbox:
    """Chain tools for the project (no spawn command)."""
    return chains.toolbox(project=project)


def run(tb: Toolbox, name: str, worker: str = "boss", **args: Any) -> toolhall.ToolResult:
    """Call a chain tool as `worker`."""
    return tb.call_sync(name, args, context=ToolContext(worker=worker))


def exported_names(tb: Toolbox, fmt: str) -> list[str]:
    """The tool names a provider format carries."""
    names = []
    for entry in tb.schemas(fmt):
        fn = entry.get("function", entry)
        names.append(fn["name"])
    return names


def test_role_matrix_is_exact(tb: Toolbox) -> None:
    """Each tool carries exactly the roles of the issue's table."""
    assert tb.for_role("control").names() == CONTROL
    assert tb.for_role("impl").names() == IMPL
    assert tb.for_role("other").names() == []


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("role", "expected"), [("control", CONTROL), ("impl", IMPL)])
def test_every_provider_export_carries_only_the_role_column(tb: Toolbox, fmt: str, role: str,
                                                            expected: list[str]) -> None:
    """Exports for a role hold only its tools, under names the provider accepts that map back."""
    boxed = tb.for_role(role)
    names = exported_names(boxed, fmt)
    assert len(names) == len(expected)
    assert [boxed[n].name for n in names] == expected
    if fmt in ("openai", "openai-responses", "anthropic", "gemini"):
        assert all(":" not in n for n in names)
    for entry in boxed.schemas("json"):
        assert entry["input_schema"]["type"] == "object"
        assert "chain_id" in entry["input_schema"]["properties"]


def test_session_with_impl_role_sees_only_impl_tools(tb: Toolbox) -> None:
    """A Session with role="impl" lists and calls only the impl column."""
    session = toolhall.Session(tb, role="impl")
    exported = [exported_names_from(e) for e in session.schemas("anthropic")]
    assert [tb[name].name for name in exported] == IMPL
    refused = session.call_sync("task:start", {"chain_id": "CH-1", "task_id": "T-1"})
    assert refused.error.code == "not_found"


def exported_names_from(entry: dict[str, Any]) -> str:
    """The name of one exported tool entry."""
    return str(entry.get("function", entry)["name"])


def test_full_life_cycle_records_who_and_when(tb: Toolbox, project: Path) -> None:
    """pending → in_progress → complete → approved, with stamps, a summary and an approval note."""
    assert run(tb, "task:start", chain_id="CH-1", task_id="T-1").data == {
        "chain_id": "CH-1", "task_id": "T-1", "status": "in_progress", "previous": "pending"}
    assert run(tb, "task:complete", worker="dev", chain_id="CH-1", task_id="T-1", summary="Parser done.").ok
    assert run(tb, "task:approve", chain_id="CH-1", task_id="T-1", note="Looks good.").ok
    status = run(tb, "task:status", chain_id="CH-1", task_id="T-1").data
    assert status["status"] == "approved"
    assert status["meta"]["started_by"] == "boss" and status["meta"]["completed_by"] == "dev"
    assert status["body"] == "Parse the thing.\n\n## Summary\n\nParser done.\n\n## Approval\n\nLooks good.\n"
    text = (project / ".lore" / "chains" / "CH-1" / "T-1.md").read_text()
    assert text.startswith("---\nid: T-1\ntitle: Build the parser\nstatus: approved\ntype: impl\n")


@pytest.mark.parametrize(
    ("steps", "tool", "current"),
    [
        ([], "task:complete", "pending"),
        ([], "task:approve", "pending"),
        (["task:start"], "task:start", "in_progress"),
        (["task:start"], "task:approve", "in_progress"),
        (["task:start", "task:complete"], "task:complete", "complete"),
        (["task:start", "task:complete", "task:approve"], "task:start", "approved"),
    ],
)
def test_illegal_moves_are_refused_clearly(tb: Toolbox, project: Path, steps: list[str], tool: str,
                                           current: str) -> None:
    """A move that skips or repeats a step fails with the current state and the life cycle."""
    for step in steps:
        extra_step = {"summary": "s"} if step == "task:complete" else {}
        assert run(tb, step, chain_id="CH-1", task_id="T-2", **extra_step).ok
    before = (project / ".lore" / "chains" / "CH-1" / "T-2.md").read_text()
    extra = {"summary": "s"} if tool == "task:complete" else {}
    result = run(tb, tool, chain_id="CH-1", task_id="T-2", **extra)
    assert not result.ok and result.error.details["reason"] == "illegal_transition"
    assert result.error.details["from"] == current
    assert "pending → in_progress → complete → approved" in result.error.message
    assert (project / ".lore" / "chains" / "CH-1" / "T-2.md").read_text() == before


def test_chain_status_and_list_summarise_tasks(tb: Toolbox) -> None:
    """chain:status counts tasks per state; task:list filters by status."""
    run(tb, "task:start", chain_id="CH-1", task_id="T-2")
    status = run(tb, "chain:status", chain_id="CH-1").data
    assert status["counts"] == {"pending": 2, "in_progress": 1, "complete": 0, "approved": 0}
    assert [t["id"] for t in status["tasks"]] == ["T-1", "T-2", "T-3"] and status["done"] is False
    assert [t["id"] for t in run(tb, "task:list", chain_id="CH-1", status="pending").data["tasks"]] == ["T-1", "T-3"]
    assert len(run(tb, "task:list", chain_id="CH-1").data["tasks"]) == 3
    assert run(tb, "task:list", chain_id="CH-1", status="done").error.code == "invalid_input"


def test_unknown_chain_task_and_bad_ids(tb: Toolbox, tmp_path: Path) -> None:
    """Missing chains and tasks are not_found; ids that are paths are invalid_input."""
    assert run(tb, "chain:status", chain_id="CH-9").error.details["reason"] == "no_chain"
    assert run(tb, "task:status", chain_id="CH-1", task_id="T-9").error.details["reason"] == "no_task"
    for bad in ("../CH-1", "CH-1/T-1", ".hidden", ""):
        assert run(tb, "chain:status", chain_id=bad).error.code == "invalid_input", bad
    assert run(chains.toolbox(project=tmp_path / "empty"), "chain:status", chain_id="X").error.code == "not_found"


def test_concurrent_starts_let_exactly_one_win(tb: Toolbox) -> None:
    """Two controllers starting one task at once: one succeeds, the other sees an illegal move."""
    results: list[toolhall.ToolResult] = []
    barrier = threading.Barrier(6)

    def start() -> None:
        barrier.wait()
        results.append(run(tb, "task:start", chain_id="CH-1", task_id="T-1"))

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r.ok for r in results) == 1


def wait_for(path: Path, timeout: float = 10.0) -> str:
    """Poll for a file the spawned worker writes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def test_spawn_starts_the_command_with_arguments_and_environment(project: Path) -> None:
    """The configured command runs with placeholders filled and TOOLHALL_* variables; the task records it."""
    out = project / "spawned.txt"
    script = ("import os, sys; open(sys.argv[1], 'w').write(' '.join(sys.argv[2:] + "
              "[os.environ['TOOLHALL_CHAIN_ID'], os.environ['TOOLHALL_TASK_ID'], os.environ['TOOLHALL_ROLE'], "
              "os.environ['TOOLHALL_SESSION_ID'], os.getcwd()])); print('worker log line')")
    tb = chains.toolbox(project=project, spawn_command=[sys.executable, "-c", script, str(out), "{chain_id}",
                                                         "{task_id}", "{session_id}"])
    result = run(tb, "spawn_impl_session", chain_id="CH-1", task_id="T-1")
    assert result.ok, result.output
    session_id = result.data["session_id"]
    words = wait_for(out).split()
    assert words == ["CH-1", "T-1", session_id, "CH-1", "T-1", "impl", session_id, str(project.absolute())]
    task = run(tb, "task:status", chain_id="CH-1", task_id="T-1").data
    assert task["status"] == "in_progress" and task["meta"]["session_id"] == session_id
    assert task["meta"]["session_pid"] == result.data["pid"]
    assert wait_for(Path(result.data["log"])).strip() == "worker log line"


def test_spawn_refuses_control_tasks_and_finished_tasks(project: Path) -> None:
    """Only impl tasks that are pending or in progress get an impl session."""
    tb = chains.toolbox(project=project, spawn_command=[sys.executable, "-c", "pass"])
    assert run(tb, "spawn_impl_session", chain_id="CH-1", task_id="T-3").error.details["reason"] == "not_impl_task"
    run(tb, "task:start", chain_id="CH-1", task_id="T-2")
    run(tb, "task:complete", chain_id="CH-1", task_id="T-2", summary="done")
    refused = run(tb, "spawn_impl_session", chain_id="CH-1", task_id="T-2")
    assert refused.error.details == {"reason": "illegal_transition", "from": "complete"}


def test_spawn_without_command_or_with_a_missing_program_fails_clearly(project: Path) -> None:
    """No configured command, or a program that does not exist, is an error; the task stays pending."""
    assert "spawn_command" in run(chains.toolbox(project=project), "spawn_impl_session",
                                  chain_id="CH-1", task_id="T-1").error.message
    tb = chains.toolbox(project=project, spawn_command="/nonexistent/agent --task {task_id}")
    failed = run(tb, "spawn_impl_session", chain_id="CH-1", task_id="T-1")
    assert failed.error.details["reason"] == "spawn_failed" and "No such file" in failed.error.message
    assert run(tb, "task:status", chain_id="CH-1", task_id="T-1").data["status"] == "pending"


def test_spawn_command_placeholders_are_checked_at_configuration(project: Path) -> None:
    """Unknown placeholders and empty commands are ConfigErrors naming the option."""
    with pytest.raises(ConfigError, match=r"unknown placeholder.*'taskid'"):
        chains.toolbox(project=project, spawn_command=["agent", "{taskid}"])
    with pytest.raises(ConfigError, match="spawn_command"):
        chains.toolbox(project=project, spawn_command=[])


def test_new_task_refuses_duplicates(project: Path) -> None:
    """Creating a task id that exists is an error, leaving the original intact."""
    with pytest.raises(ValueError, match="already exists"):
        chains.new_task(project, "CH-1", "T-1", "Again")
    assert "Build the parser" in (project / ".lore" / "chains" / "CH-1" / "T-1.md").read_text()


def test_hand_written_task_files_keep_their_comments(project: Path, tb: Toolbox) -> None:
    """A task file a human wrote keeps its comments and layout through status changes."""
    path = project / ".lore" / "chains" / "CH-1" / "T-4.md"
    path.write_text("---\n# written by hand\nid: T-4\ntitle: 'Hand made'\nstatus: pending  # not yet\n"
                    "type: impl\ncreated: 2026-11-01\n---\nDo it.\n")
    run(tb, "task:start", chain_id="CH-1", task_id="T-4")
    text = path.read_text()
    assert text.startswith("---\n# written by hand\nid: T-4\ntitle: 'Hand made'\nstatus: in_progress  # not yet\n"
                           "type: impl\ncreated: 2026-11-01\nstarted: ")
