"""Approval on 2026-07-28 connections, which have no back-channel for a mid-call elicitation request.

The call that needs approval ends with an `InputRequiredResult` carrying an elicitation form; the client asks
its user and retries the call with the answer. The answer counts only for the same tool and arguments: the
`request_state` we hand out is an HMAC (keyed per server process) of the tool's name and arguments.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import json
import os
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["APPROVAL_KEY", "APPROVAL_SCHEMA", "ApprovalRound", "RoundKeeper", "current_round"]

APPROVAL_KEY = "toolhall_approval"

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "enum": ["approve", "deny", "approve_session"],
            "description": "approve this call, deny it, or approve this tool for the rest of the session",
        }
    },
    "required": ["decision"],
}


@dataclass(slots=True)
class ApprovalRound:
    """What the approver may use during one `tools/call` on a 2026-07-28 connection."""

    modern: bool
    answer: str | None = None
    """The client's answer from a verified retry, if this call is one."""
    asked: list[str] = field(default_factory=list)
    """Messages the approver wants put to the client (turned into an `InputRequiredResult`)."""


_round: contextvars.ContextVar[ApprovalRound | None] = contextvars.ContextVar("toolhall_mcp_round", default=None)


def current_round() -> ApprovalRound | None:
    """The approval round of the call being served, or None outside an MCP call."""
    return _round.get()


class RoundKeeper:
    """Starts rounds for calls, verifies retries, and builds the `InputRequiredResult`."""

    def __init__(self) -> None:
        self._key = os.urandom(32)

    def _state(self, params: types.CallToolRequestParams) -> str:
        canonical = json.dumps([params.name, params.arguments or {}], sort_keys=True, default=str)
        return hmac.new(self._key, canonical.encode(), hashlib.sha256).hexdigest()

    def begin(self, ctx: Any, params: types.CallToolRequestParams) -> contextvars.Token[ApprovalRound | None]:
        """Open the round for this call (set for the duration of the call)."""
        modern = getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS
        answer = self._answer(params) if modern else None
        return _round.set(ApprovalRound(modern=modern, answer=answer))

    def end(self, token: contextvars.Token[ApprovalRound | None]) -> ApprovalRound | None:
        """Close the round, returning it."""
        finished = _round.get()
        _round.reset(token)
        return finished

    def _answer(self, params: types.CallToolRequestParams) -> str | None:
        state = params.request_state
        responses = params.input_responses or {}
        if not state or APPROVAL_KEY not in responses or not hmac.compare_digest(state, self._state(params)):
            return None
        response = responses[APPROVAL_KEY]
        action = getattr(response, "action", None)
        content = getattr(response, "content", None) or {}
        if action != "accept":
            return "deny"
        decision = str(content.get("decision", "deny"))
        return decision if decision in ("approve", "deny", "approve_session") else "deny"

    def input_required(self, finished: ApprovalRound, params: types.CallToolRequestParams) -> types.InputRequiredResult:
        """The result that asks the client to approve and retry."""
        form = types.ElicitRequestFormParams(message=finished.asked[-1], requested_schema=APPROVAL_SCHEMA)
        request = types.ElicitRequest(params=form)
        return types.InputRequiredResult(input_requests={APPROVAL_KEY: request}, request_state=self._state(params))
