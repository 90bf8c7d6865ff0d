"""Approval over MCP: ask the client through elicitation when it can, else fall back (never a silent yes)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio
import mcp_types as types

from ..policy import Approval
from ._rounds import APPROVAL_SCHEMA, current_round
from .server import current_request

__all__ = ["ElicitingApprover"]

_logger = logging.getLogger("toolhall.mcp")


def _message(request: Any) -> str:
    tool = getattr(request, "tool", None)
    name = getattr(tool, "name", None) or getattr(request, "tool_name", "tool")
    arguments = json.dumps(getattr(request, "arguments", {}), default=str)[:1500]
    return f"toolhall: allow {name} with {arguments}?"


def _client_can_elicit(ctx: Any) -> bool:
    try:
        wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        return bool(ctx.session.check_client_capability(wanted))
    except Exception:  # noqa: BLE001 - an old or odd client simply cannot be asked
        return False


class ElicitingApprover:
    """An approver for `toolhall serve`: ask the MCP client by elicitation, and/or wait for the fallback.

    `fallback` is `"deny"` (refuse with a reason) or an approver such as the console's `QueueApprover`.
    When the client can elicit and a fallback approver exists, both are asked at once and the first
    answer wins (a person may answer in the client or in the console).
    """

    def __init__(self, fallback: Literal["deny"] | Callable[[Any], Awaitable[Any]] = "deny") -> None:
        self.fallback = fallback

    async def __call__(self, request: Any) -> Any:
        """Answer one pending call."""
        ctx = current_request()
        can_elicit = ctx is not None and _client_can_elicit(ctx)
        fallback = self.fallback
        round_ = current_round()
        if round_ is not None and round_.modern:
            # 2026-07-28: no mid-call requests; ask through the result and take the answer on the retry.
            if round_.answer is not None:
                return round_.answer
            if can_elicit:
                round_.asked.append(_message(request))
                return Approval("deny", reason="waiting for the client's answer (it retries the call with it)")
            return await fallback(request) if callable(fallback) else "deny"
        if not callable(fallback):
            return await _elicit(ctx, request) if can_elicit else "deny"
        if not can_elicit:
            return await fallback(request)
        answers: list[Any] = []
        async with anyio.create_task_group() as group:

            async def first(ask: Callable[[], Awaitable[Any]]) -> None:
                answer = await ask()
                if answer is not None and not answers:
                    answers.append(answer)
                    group.cancel_scope.cancel()

            group.start_soon(first, lambda: _elicit(ctx, request, quiet_decline=True))
            group.start_soon(first, lambda: fallback(request))
        return answers[0] if answers else "deny"


async def _elicit(ctx: Any, request: Any, *, quiet_decline: bool = False) -> Any:
    """The client's answer; with `quiet_decline`, a client that cannot answer yields None (keep waiting)."""
    try:
        answer = await ctx.session.elicit_form(_message(request), APPROVAL_SCHEMA)
    except Exception as exc:  # noqa: BLE001 - a client that fails to answer has not approved
        _logger.warning("elicitation failed: %s", exc)
        if quiet_decline:
            await anyio.sleep_forever()
        return "deny"
    if answer.action == "accept" and answer.content:
        return str(answer.content.get("decision", "deny"))
    if answer.action == "cancel" and quiet_decline:
        await anyio.sleep_forever()  # dismissed in the client: the console may still answer
    return "deny"
