"""Approval over MCP: elicitation where the client supports it, the console queue otherwise, never a silent yes.

Elicitation is a server-to-client request, which the handshake-era protocol (what clients use today,
`mode="legacy"` here) carries; a 2026-07-28 connection has no back-channel for it, so such a client's
calls fall back to the queue or are denied (`test_without_elicitation_or_fallback_the_call_is_denied`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from toolhall import Policy, Session, Toolbox, tool
from toolhall.console import QueueApprover
from toolhall.mcp import build_server
from toolhall.mcp._approval import ElicitingApprover
from toolhall.testing import MemoryLog

pytestmark = pytest.mark.anyio

ran: list[str] = []


@tool
def launch(target: str) -> str:
    """Not read-only, so it needs approval."""
    ran.append(target)
    return f"launched {target}"


def answering(decision: str | None, action: str = "accept") -> Any:
    """An elicitation callback that answers with `decision`."""

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        content = {"decision": decision} if decision else None
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return callback


def session_with(approver: Any, log: MemoryLog | None = None) -> Session:
    """A session whose one tool needs approval."""
    return Session(Toolbox([launch]), policy=Policy(), approver=approver, log=log or MemoryLog())


@pytest.mark.parametrize(("decision", "runs"), [("approve", True), ("deny", False), ("approve_session", True)])
async def test_client_answers_by_elicitation(decision: str, runs: bool) -> None:
    """A client that supports elicitation is asked, and its answer decides."""
    ran.clear()
    server = build_server(session_with(ElicitingApprover()))
    async with Client(server, mode="legacy", elicitation_callback=answering(decision)) as client:
        result = await client.call_tool("launch", {"target": "moon"})
    assert result.is_error is not runs
    assert ran == (["moon"] if runs else [])


async def test_declining_in_the_client_denies() -> None:
    """Declining the form is a denial."""
    ran.clear()
    server = build_server(session_with(ElicitingApprover()))
    async with Client(server, mode="legacy", elicitation_callback=answering(None, "decline")) as c:
        result = await c.call_tool("launch", {"target": "mars"})
    assert result.is_error and ran == []


async def test_without_elicitation_or_fallback_the_call_is_denied() -> None:
    """A client that cannot elicit and no fallback: denied, never a silent yes."""
    ran.clear()
    async with Client(build_server(session_with(ElicitingApprover()))) as client:
        result = await client.call_tool("launch", {"target": "venus"})
    assert result.is_error and ran == []


async def test_the_console_queue_answers_when_the_client_cannot() -> None:
    """With the queue as fallback, an answer written to the store (by the console) lets the call run."""
    ran.clear()
    log = MemoryLog()
    session = session_with(ElicitingApprover(fallback=QueueApprover(log, timeout=10)), log)

    async def console() -> None:
        while not log.pending_approvals():
            await asyncio.sleep(0.01)
        [pending] = log.pending_approvals()
        assert pending.tool == "launch"
        log.answer_approval(pending.call_id, "approve", answered_by="console:test")

    async with Client(build_server(session)) as client:
        answer = asyncio.create_task(console())
        result = await client.call_tool("launch", {"target": "jupiter"})
        await answer
    assert not result.is_error and ran == ["jupiter"]


async def test_first_answer_wins_between_client_and_console() -> None:
    """When both can answer, the client's quick answer wins and the queue entry is closed."""
    ran.clear()
    log = MemoryLog()
    session = session_with(ElicitingApprover(fallback=QueueApprover(log, timeout=10)), log)
    async with Client(build_server(session), mode="legacy", elicitation_callback=answering("approve")) as client:
        result = await client.call_tool("launch", {"target": "saturn"})
    assert not result.is_error and ran == ["saturn"]
    assert log.pending_approvals() == []


@pytest.mark.parametrize(("decision", "runs"), [("approve", True), ("deny", False)])
async def test_modern_clients_answer_through_an_input_required_round(decision: str, runs: bool) -> None:
    """On a 2026-07-28 connection the call asks with InputRequiredResult; the client's retry carries the answer."""
    ran.clear()
    log = MemoryLog()
    async with Client(
        build_server(session_with(ElicitingApprover(), log)), elicitation_callback=answering(decision)
    ) as c:
        assert c.protocol_version == "2026-07-28"
        result = await c.call_tool("launch", {"target": "pluto"})
    assert result.is_error is not runs
    assert ran == (["pluto"] if runs else [])
    statuses = [record.status for record in log.calls()]
    assert statuses.count("ok") == (1 if runs else 0)


async def test_a_modern_answer_counts_only_for_the_call_it_was_given_for() -> None:
    """A retry whose arguments differ from the asked call does not inherit the approval."""
    import mcp_types as types

    ran.clear()
    session = session_with(ElicitingApprover())
    async with Client(build_server(session), elicitation_callback=answering("approve")) as client:
        first = await client.session.call_tool("launch", {"target": "a"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        approved = {"toolhall_approval": types.ElicitResult(action="accept", content={"decision": "approve"})}
        swapped = await client.session.call_tool(
            "launch", {"target": "b"}, input_responses=approved, request_state=first.request_state,
            allow_input_required=True,
        )  # fmt: skip
        assert isinstance(swapped, types.InputRequiredResult)
    assert ran == []
