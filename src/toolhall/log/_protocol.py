"""The `LogStore` protocol: what a session needs from a store, and what consoles and tools may use.

A store keeps three things: one row per call (`CallRecord`), the pending-approval queue
(`PendingApproval`, so a console or a second process can answer a waiting call), and small per-session
state (HTTP cookie jars, session-wide approvals).

Rules every implementation keeps:

- `write(record, durable=True)` returns only once the row is committed (group commit: concurrent
  writers share one commit); `durable=False` queues the row and returns at once.
- A failing store never fails a call: `write` swallows its errors and reports them once to the
  `toolhall.log` logger. Query and state methods may raise `LogStoreError`.
- Inputs, outputs, data and approval arguments are redacted before anything is written.
- `wait_for_answer` notices an answer written by another process promptly (well under a second).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from ._record import (
    ApprovalDecision,
    ApprovalScope,
    CallRecord,
    CallStatus,
    PendingApproval,
)

__all__ = ["ApprovalDecision", "ApprovalScope", "CallRecord", "CallStatus", "LogStore", "PendingApproval"]


@runtime_checkable
class LogStore(Protocol):
    """A durable log of calls, a pending-approval queue and per-session state.

    `SqliteLog`, `PostgresLog` and `toolhall.testing.MemoryLog` implement it.
    """

    # -- calls -------------------------------------------------------------------------------------
    async def write(self, record: CallRecord, *, durable: bool = False) -> None:
        """Insert or replace the call's row (by `record.id`); with `durable`, wait for its commit."""
        ...

    def flush(self) -> None:
        """Block until every queued row is committed."""
        ...

    def calls(
        self,
        *,
        session_id: str | None = None,
        tool: str | None = None,
        status: CallStatus | str | None = None,
        since: datetime | timedelta | None = None,
        limit: int | None = 100,
    ) -> list[CallRecord]:
        """Recorded calls, newest first, filtered by the arguments given (`since` may be an age)."""
        ...

    def get(self, call_id: str) -> CallRecord | None:
        """One call by id, or None."""
        ...

    def prune(self, older_than: timedelta | datetime) -> int:
        """Delete calls (and answered approvals) that started before the cutoff; returns rows deleted."""
        ...

    # -- per-session state -------------------------------------------------------------------------
    def get_state(self, session_id: str, key: str) -> str | None:
        """A session's value under `key`, or None."""
        ...

    def set_state(self, session_id: str, key: str, value: str) -> None:
        """Store a session's value under `key` (committed before returning)."""
        ...

    def delete_state(self, session_id: str, key: str) -> None:
        """Remove a session's value under `key` (no error when absent)."""
        ...

    # -- pending approvals -------------------------------------------------------------------------
    def request_approval(self, request: PendingApproval) -> None:
        """Put a call in the approval queue (committed before returning)."""
        ...

    def pending_approvals(self, session_id: str | None = None) -> list[PendingApproval]:
        """Unanswered approvals, oldest first."""
        ...

    def get_approval(self, call_id: str) -> PendingApproval | None:
        """One approval request (answered or not) by call id, or None."""
        ...

    def answer_approval(
        self,
        call_id: str,
        decision: ApprovalDecision,
        *,
        scope: ApprovalScope = "call",
        reason: str | None = None,
        answered_by: str | None = None,
    ) -> bool:
        """Answer a pending approval; False when there is none or it was already answered."""
        ...

    async def wait_for_answer(self, call_id: str, *, timeout: float | None = None) -> PendingApproval | None:
        """Wait until the approval is answered (by any process); None on timeout."""
        ...

    # -- lifetime ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Commit what is queued and release connections and threads."""
        ...
