"""Session: the pipeline order, role gating, approval, dry run, nested calls, truncation, logging."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import SecretStr

from toolhall import Approval, Policy, Session, SqliteLog, Toolbox, ToolCall, ToolContext, tool
from toolhall.testing import MemoryLog, ScriptedApprover

EFFECTS: list[str] = []


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(subject="path")
def write_file(path: str, content: str) -> str:
    """Write (records the side effect instead)."""
    EFFECTS.append(path)
    return f"wrote {path}"


@tool(roles={"admin"}, read_only=True)
def admin_only() -> str:
    """Only for admins."""
    return "secret"


@tool
async def outer(ctx: ToolContext) -> str:
    """Calls add through its context."""
    inner = await ctx.call("add", {"a": 2, "b": 3})
    return f"{ctx.session_id}:{ctx.worker}:{ctx.role}:{inner.output}"


@tool(read_only=True)
def big() -> str:
    """A long output."""
    return "x" * 10_000


@tool
async def slow() -> str:
    """Sleeps long."""
    await anyio.sleep(10)
    return "late"


@tool(read_only=True)
def login(user: str, password: SecretStr) -> str:
    """Takes a secret."""
    return user


@pytest.fixture(autouse=True)
def _clear() -> None:
    EFFECTS.clear()


def toolbox() -> Toolbox:
    return Toolbox([add, write_file, admin_only, outer, big, slow, login])


@pytest.mark.anyio
async def test_an_allowed_call_runs_and_its_row_is_durable_before_the_handler() -> None:
    """The running row is written with durable=True before the handler, then the final row."""
    log = MemoryLog()
    seen: list[Any] = []

    @tool(read_only=True)
    def probe(ctx: ToolContext) -> str:
        seen.append(ctx.store.get(ctx.call_id))
        return "ok"

    result = await Session(Toolbox([probe]), log=log).call("probe")
    assert result.ok
    assert seen[0].status == "running" and log.writes[0][1] is True
    assert log.get(result.call_id or "").status == "ok"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_denied_call_never_runs_and_is_logged_with_the_rule() -> None:
    """Deny rules refuse before the handler (tested by side effect)."""
    log = MemoryLog()
    session = Session(toolbox(), log=log, policy=Policy(deny=["write_file(.git/**)"]), approver=lambda r: True)
    result = await session.call("write_file", {"path": ".git/config", "content": "x"})
    assert not result.ok and result.error and result.error.code == "denied"
    assert EFFECTS == []
    row = log.get(result.call_id or "")
    assert row is not None and row.status == "denied" and ".git/**" in (row.error_message or "")


@pytest.mark.anyio
async def test_without_an_approver_asking_calls_are_approval_required() -> None:
    """No approver: non-read-only calls are refused with approval_required."""
    result = await Session(toolbox(), log=False).call("write_file", {"path": "a", "content": "x"})
    assert result.error and result.error.code == "approval_required" and EFFECTS == []


@pytest.mark.anyio
async def test_the_approver_decides_and_a_denial_never_runs_the_handler() -> None:
    """Approve runs, deny refuses with the reason; the row was pending meanwhile."""
    log = MemoryLog()
    approver = ScriptedApprover([True, Approval("deny", reason="not there")])
    session = Session(toolbox(), log=log, approver=approver)
    ok = await session.call("write_file", {"path": "a", "content": "x"})
    no = await session.call("write_file", {"path": "b", "content": "x"})
    assert ok.ok and EFFECTS == ["a"]
    assert no.error and no.error.code == "denied" and "not there" in no.error.message
    assert approver.asked == ["write_file", "write_file"]
    statuses = [w.status for w, _ in log.writes if w.id == ok.call_id]
    assert statuses == ["pending", "running", "ok"]
    assert log.get_approval(ok.call_id or "").decision == "approve"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_session_scoped_approvals_are_remembered() -> None:
    """approve_session covers later calls of the tool; subject scope only those subjects."""
    approver = ScriptedApprover(["approve_session"])
    session = Session(toolbox(), log=False, approver=approver)
    for path in ("a", "b", "c"):
        assert (await session.call("write_file", {"path": path, "content": ""})).ok
    assert approver.asked == ["write_file"]
    subject = ScriptedApprover([Approval("approve", scope="subject")], default="deny")
    session2 = Session(toolbox(), log=False, approver=subject)
    assert (await session2.call("write_file", {"path": "a", "content": ""})).ok
    assert (await session2.call("write_file", {"path": "a", "content": ""})).ok
    assert not (await session2.call("write_file", {"path": "z", "content": ""})).ok
    assert subject.asked == ["write_file", "write_file"]


@pytest.mark.anyio
async def test_async_approvers_work_and_a_raising_approver_denies() -> None:
    """An async approver is awaited; one that raises is a denial."""

    async def yes(request: Any) -> str:
        return "approve"

    def broken(request: Any) -> str:
        raise RuntimeError("boom")

    assert (await Session(toolbox(), log=False, approver=yes).call("write_file", {"path": "a", "content": ""})).ok
    result = await Session(toolbox(), log=False, approver=broken).call("write_file", {"path": "b", "content": ""})
    assert result.error and result.error.code == "denied" and "boom" in result.error.message


@pytest.mark.anyio
async def test_role_hides_tools_from_schemas_and_calls() -> None:
    """A tool outside the role is not_found and absent from schemas."""
    session = Session(toolbox(), log=False, role="viewer")
    assert "admin_only" not in [s["function"]["name"] for s in session.schemas("openai")]
    result = await session.call("admin_only")
    assert result.error and result.error.code == "not_found"
    assert (await Session(toolbox(), log=False, role="admin").call("admin_only")).ok


@pytest.mark.anyio
async def test_invalid_and_unknown_calls_get_rows_with_the_reason() -> None:
    """Refused and invalid calls are logged too."""
    log = MemoryLog()
    session = Session(toolbox(), log=log)
    bad = await session.call("add", '{"a": "x"}')
    missing = await session.call(ToolCall("nope", None, id="c-missing"))
    assert bad.error and bad.error.code == "invalid_input"
    assert missing.call_id == "c-missing"
    assert log.get(bad.call_id or "").error_code == "invalid_input"  # type: ignore[union-attr]
    assert log.get("c-missing").error_code == "not_found"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_dry_run_runs_only_read_only_tools() -> None:
    """Dry run: read-only allowed tools run; others are reported, not run, and logged."""
    log = MemoryLog()
    session = Session(toolbox(), log=log, dry_run=True, approver=lambda r: True)
    assert (await session.call("add", {"a": 1, "b": 1})).output == "2"
    result = await session.call("write_file", {"path": "a", "content": ""})
    assert result.ok and result.data["dry_run"] and result.data["decision"] == "ask"
    assert EFFECTS == [] and log.get(result.call_id or "").approval == "dry_run"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_nested_calls_record_their_parent_and_see_the_session() -> None:
    """ctx.call goes through the session; the inner row has parent_id."""
    log = MemoryLog()
    session = Session(toolbox(), log=log, worker="w1", session_id="s-9", policy=Policy(allow=["outer"]))
    result = await session.call("outer")
    assert result.output == "s-9:w1:None:5"
    [inner] = log.calls(tool="add")
    assert inner.parent_id == result.call_id and inner.session_id == "s-9"


@pytest.mark.anyio
async def test_output_is_truncated_for_the_model_but_logged_in_full() -> None:
    """The model gets max_output_chars; the log keeps all 10,000 characters."""
    log = MemoryLog()
    result = await Session(toolbox(), log=log, max_output_chars=500).call("big")
    assert result.truncated and len(result.output) <= 500 and (result.call_id or "?") in result.output
    row = log.get(result.call_id or "")
    assert row is not None and len(row.output or "") == 10_000 and row.output_chars == 10_000


@pytest.mark.anyio
async def test_secret_arguments_are_masked_in_the_log() -> None:
    """SecretStr arguments (writeOnly in the schema) never reach the store."""
    log = MemoryLog()
    result = await Session(toolbox(), log=log).call("login", {"user": "bob", "password": "hunter2"})
    assert result.ok
    assert log.get(result.call_id or "").input == {"user": "bob", "password": "[REDACTED]"}  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_cancelling_the_caller_logs_cancelled_and_propagates() -> None:
    """The caller's cancellation propagates after the row says cancelled."""
    log = MemoryLog()
    session = Session(toolbox(), log=log, policy=Policy(allow=["slow"]))
    task = asyncio.ensure_future(session.call("slow"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [row] = log.calls(tool="slow")
    assert row.status == "cancelled"


@pytest.mark.anyio
async def test_timeouts_are_logged_as_timeout() -> None:
    """A tool that outlives the default timeout gives a timeout row."""
    log = MemoryLog()
    result = await Session(toolbox(), log=log, policy=Policy(allow=["slow"]), default_timeout=0.05).call("slow")
    assert result.error and result.error.code == "timeout"
    assert log.get(result.call_id or "").status == "timeout"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_session_with_a_workspace_logs_to_its_state_db(tmp_path: Path) -> None:
    """The default log is .toolhall/state.db in the workspace."""
    async with Session(toolbox(), workspace=tmp_path) as session:
        result = await session.call("add", {"a": 1, "b": 2})
    with SqliteLog(tmp_path / ".toolhall" / "state.db") as log:
        assert log.get(result.call_id or "").status == "ok"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_call_many_keeps_order_and_isolates_failures() -> None:
    """call_many returns results in order; one failure does not affect the rest."""
    session = Session(toolbox(), log=MemoryLog())
    results = await session.call_many([("add", {"a": 1, "b": 1}), ("nope", {}), ("add", {"a": 2, "b": 2})])
    assert [r.output for r in results][::2] == ["2", "4"] and not results[1].ok


def test_call_sync_works_from_sync_code() -> None:
    """call_sync runs the pipeline without an event loop."""
    assert Session(toolbox(), log=False).call_sync("add", {"a": 4, "b": 5}).output == "9"


def test_bad_constructor_arguments_are_clear_errors() -> None:
    """Wrong types name the argument."""
    with pytest.raises(TypeError, match="Toolbox"):
        Session([add])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_output_chars"):
        Session(toolbox(), max_output_chars=0)
    with pytest.raises(TypeError, match="approver"):
        Session(toolbox(), approver="yes")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_call_ids_are_unique_well_formed_and_sort_by_time() -> None:
    """Ids the session makes look like any call id and sort in call order (the log's id index grows at its end)."""
    import re

    session = Session(toolbox(), log=False)
    ids = []
    for _ in range(3):
        ids += [r.call_id or "" for r in await session.call_many([("add", {"a": 1, "b": 1})] * 300)]
        await anyio.sleep(0.002)
    assert len(set(ids)) == len(ids) == 900
    assert all(re.fullmatch(r"call_[0-9a-f]{24}", i) for i in ids)
    assert ids[0] < ids[300] < ids[600]
    given = await session.call(ToolCall(id="call_from_the_model", name="add", arguments={"a": 1, "b": 2}))
    assert given.call_id == "call_from_the_model"


@pytest.mark.anyio
async def test_a_call_cancelled_while_awaiting_approval_ends_its_row_and_its_request(tmp_path: Path) -> None:
    """Cancelled before the handler ran: the row says cancelled (not pending forever), the request is closed."""
    asked = asyncio.Event()

    async def approver(request: Any) -> bool:
        asked.set()
        await asyncio.sleep(60)
        return True

    with SqliteLog(tmp_path / "s.db") as log:
        session = Session(toolbox(), log=log, approver=approver)
        task = asyncio.ensure_future(session.call("write_file", {"path": "a.txt", "content": "x"}))
        await asyncio.wait_for(asked.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        [row] = log.calls(tool="write_file")
        request = log.get_approval(row.id)
    assert row.status == "cancelled" and row.error_code == "cancelled" and "a.txt" not in EFFECTS
    assert request is not None and request.decision == "deny" and request.answered_by == "session"
