"""What a tool can learn about the call it serves, injected into a parameter annotated `ToolContext`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._result import ToolCall, ToolResult

__all__ = ["CancelSignal", "ToolContext"]

_logger = logging.getLogger("toolhall.tool")


class CancelSignal:
    """Set when a call is cancelled or times out, so a sync tool in a thread can stop early.

    Async tools are cancelled for real; sync tools cannot be interrupted, so they should poll
    `is_set()` (or `wait(seconds)` instead of `time.sleep`) in long loops.
    """

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        """Ask the tool to stop."""
        self._event.set()

    def is_set(self) -> bool:
        """Whether the tool has been asked to stop."""
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to `timeout` seconds, waking early when asked to stop; returns whether it was."""
        return self._event.wait(timeout)


ProgressReporter = Callable[[float, "float | None", "str | None"], Awaitable[None]]
NestedCaller = Callable[..., Awaitable["ToolResult"]]


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """The call a tool is serving: ids, who is calling, where, and how to report back.

    Example:
        ```python
        @tool
        async def slow(n: int, ctx: ToolContext) -> str:
            for i in range(n):
                await ctx.report_progress(i, n)
            return "done"
        ```
    """

    call_id: str = ""
    """This call's id."""
    session_id: str | None = None
    """The session the call belongs to, when it runs in one."""
    parent_id: str | None = None
    """The call that made this one, for nested calls."""
    role: str | None = None
    """The role the session runs as."""
    worker: str | None = None
    """The worker the session runs for."""
    workspace: Any = None
    """The session's `Workspace`, when it has one."""
    cancel: CancelSignal = field(default_factory=CancelSignal)
    """Set when the call is cancelled or times out."""
    logger: logging.Logger = _logger
    """A logger for the tool's own messages."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Runtime data such as the project or meeting."""
    store: Any = None
    """The session's log store (for per-session state such as cookie jars), or None."""
    progress: ProgressReporter = _no_progress
    """Where progress goes (an MCP client, say)."""
    caller: NestedCaller | None = None
    """How nested calls are made: set by the session or toolbox running this call."""

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report how far the call has come (shown by MCP clients that ask for progress)."""
        await self.progress(progress, total, message)

    async def call(self, name: str | ToolCall, arguments: str | dict[str, Any] | None = None) -> ToolResult:
        """Call another tool as part of this one; the log records this call as its parent."""
        if self.caller is None:
            from ._result import ToolError, ToolResult

            return ToolResult(
                ok=False,
                output="nested calls are not available here",
                error=ToolError(code="not_found", message="nested calls are not available in this context"),
                tool_name=name if isinstance(name, str) else name.name,
            )
        return await self.caller(name, arguments, parent_id=self.call_id)

    def child(self, **changes: Any) -> ToolContext:
        """A copy with some fields changed (used for nested calls)."""
        return replace(self, **changes)
