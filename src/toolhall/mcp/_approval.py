"""Approval over MCP: ask the client through elicitation when it can, else fall back (never a silent yes)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import mcp_types as types

from .server import current_request

__all__ = ["ElicitingApprover"]

_logger = logging.getLogger("toolhall.mcp")

_SCHEMA: dict[str, Any] = {
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


def _client_can_elicit(ctx: Any) -> bool:
    try:
        wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        return bool(ctx.session.check_client_capability(wanted))
    except Exception:  # noqa: BLE001 - an old or odd client simply cannot be asked
        return False


class ElicitingApprover:
    """An approver for `toolhall serve`: elicitation first, then the configured fallback.

    `fallback` is `"deny"` (refuse with a reason), or a callable (such as the console's queue) that answers.
    """

    def __init__(self, fallback: Literal["deny"] | Callable[[Any], Awaitable[Any]] = "deny") -> None:
        self.fallback = fallback

    async def __call__(self, request: Any) -> Any:
        """Answer one pending call."""
        ctx = current_request()
        if ctx is not None and _client_can_elicit(ctx):
            tool = getattr(request, "tool", None)
            name = getattr(tool, "name", None) or getattr(request, "tool_name", "tool")
            arguments = json.dumps(getattr(request, "arguments", {}), default=str)[:1500]
            message = f"toolhall: allow {name} with {arguments}?"
            try:
                answer = await ctx.session.elicit_form(message, _SCHEMA)
            except Exception as exc:  # noqa: BLE001 - a client that fails to answer has not approved
                _logger.warning("elicitation failed, falling back: %s", exc)
            else:
                if answer.action == "accept" and answer.content:
                    return str(answer.content.get("decision", "deny"))
                return "deny"
        if callable(self.fallback):
            return await self.fallback(request)
        return "deny"
