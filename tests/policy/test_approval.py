"""Approval answers: every accepted form, session memory, and the store-backed queue."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from toolhall import Approval
from toolhall.policy import ApprovalMemory, ApprovalRequest, QueueApprover, coerce_answer
from toolhall.testing import MemoryLog


@pytest.mark.parametrize(
    ("answer", "decision", "scope"),
    [
        (True, "approve", "call"),
        (False, "deny", "call"),
        ("approve", "approve", "call"),
        ("deny", "deny", "call"),
        ("approve_session", "approve", "tool"),
        (Approval("approve", scope="subject"), "approve", "subject"),
        ("yes please", "deny", "call"),
        (None, "deny", "call"),
    ],
)
def test_every_answer_form_becomes_an_approval(answer: Any, decision: str, scope: str) -> None:
    """Accepted forms map as documented; anything else fails closed."""
    got = coerce_answer(answer)
    assert (got.decision, got.scope) == (decision, scope)


def test_approval_refuses_unknown_decisions_and_scopes() -> None:
    """Approval checks its fields."""
    with pytest.raises(ValueError, match="decision"):
        Approval("maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="scope"):
        Approval("approve", scope="forever")  # type: ignore[arg-type]


def test_memory_remembers_tool_and_subject_scopes_in_the_store() -> None:
    """Session answers cover later calls and survive a new memory over the same store."""
    store = MemoryLog()
    memory = ApprovalMemory(store, "s1")
    memory.remember("write_file", ("a.txt",), Approval("approve", scope="subject"))
    memory.remember("run_shell", ("ls",), Approval("deny", scope="tool"))
    memory.remember("http_request", ("x",), Approval("approve"))  # call scope: not kept
    again = ApprovalMemory(store, "s1")
    assert again.lookup("write_file", ("a.txt",)).decision == "approve"  # type: ignore[union-attr]
    assert again.lookup("write_file", ("a.txt", "b.txt")) is None
    assert again.lookup("run_shell", ("anything",)).decision == "deny"  # type: ignore[union-attr]
    assert again.lookup("http_request", ("x",)) is None
    assert ApprovalMemory(store, "other").lookup("run_shell", ("ls",)) is None


@pytest.mark.anyio
async def test_queue_approver_waits_for_an_answer_in_the_store() -> None:
    """The queued request is answered by someone else and the approver returns that answer."""
    store = MemoryLog()
    approver = QueueApprover(store, timeout=5)
    request = ApprovalRequest(tool=_Named("write_file"), arguments={"path": "a"}, call_id="c1", session_id="s1")
    answers: list[Approval] = []

    async def ask() -> None:
        answers.append(await approver(request))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        while not store.pending_approvals():
            await anyio.sleep(0.01)
        [pending] = store.pending_approvals()
        assert pending.tool == "write_file" and pending.requested_at <= datetime.now(UTC)
        store.answer_approval("c1", "deny", reason="not today", answered_by="console")
    assert answers == [Approval("deny", reason="not today", scope="call")]


@pytest.mark.anyio
async def test_queue_approver_denies_after_its_timeout() -> None:
    """No answer in time is a denial that says so."""
    approver = QueueApprover(MemoryLog(), timeout=0.05)
    got = await approver(ApprovalRequest(tool=_Named("t"), arguments={}, call_id="c9"))
    assert got.decision == "deny" and "no answer" in (got.reason or "")


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name
