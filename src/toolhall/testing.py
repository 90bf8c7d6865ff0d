"""Test doubles for code built on toolhall: an in-memory log store and a scripted approver.

Example:
    ```python
    from toolhall.testing import MemoryLog, ScriptedApprover

    log, approver = MemoryLog(), ScriptedApprover(["approve", "deny"])
    session = Session(toolbox, log=log, approver=approver)
    ...
    assert [r.status for r in log.calls()] == ["denied", "ok"]
    assert approver.requests[0].tool_name == "write_file"
    ```
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

import anyio

from ._redact import Redactor
from .log._record import CALL_STATUSES, ApprovalDecision, ApprovalScope, CallRecord, CallStatus, PendingApproval
from .log._sqlbase import check_limit, cutoff
from .policy._approval import Answer, ApprovalRequest

__all__ = ["MemoryLog", "ScriptedApprover"]


class MemoryLog:
    """A `LogStore` in memory: the same behaviour as `SqliteLog` (redaction included), nothing on disk."""

    def __init__(self, *, redact: bool = True, redactor: Redactor | None = None) -> None:
        self.redactor = redactor or Redactor(defaults=redact)
        self._lock = threading.Lock()
        self._calls: dict[str, CallRecord] = {}
        self._state: dict[tuple[str, str], str] = {}
        self._approvals: dict[str, PendingApproval] = {}
        self.writes: list[tuple[CallRecord, bool]] = []
        """Every write as received (before redaction), with its `durable` flag: for asserting order."""

    def _redacted(self, record: CallRecord) -> CallRecord:
        r = self.redactor
        return dataclasses.replace(
            record,
            input=r.value(record.input),
            output=r.text(record.output) if record.output is not None else None,
            data=r.value(record.data),
        )

    async def write(self, record: CallRecord, *, durable: bool = False) -> None:
        """Keep the row (redacted)."""
        with self._lock:
            self.writes.append((record, durable))
            self._calls[record.id] = self._redacted(record)

    def flush(self) -> None:
        """Nothing is queued in memory."""

    def calls(
        self,
        *,
        session_id: str | None = None,
        tool: str | None = None,
        status: CallStatus | str | None = None,
        since: datetime | timedelta | None = None,
        limit: int | None = 100,
    ) -> list[CallRecord]:
        """Recorded calls, newest first, filtered like `SqliteLog.calls`."""
        if status is not None and status not in CALL_STATUSES:
            raise ValueError(f"status must be one of {', '.join(sorted(CALL_STATUSES))}; got {status!r}")
        check_limit(limit)
        start = cutoff(since, "since") if since is not None else None
        with self._lock:
            rows = list(self._calls.values())
        rows = [
            r for r in rows
            if (session_id is None or r.session_id == session_id) and (tool is None or r.tool == tool)
            and (status is None or r.status == status) and (start is None or r.started_at >= start)
        ]  # fmt: skip
        rows.reverse()
        rows.sort(key=lambda r: r.started_at, reverse=True)
        return rows if limit is None else rows[:limit]

    def get(self, call_id: str) -> CallRecord | None:
        """One call by id."""
        with self._lock:
            return self._calls.get(call_id)

    def prune(self, older_than: timedelta | datetime) -> int:
        """Forget calls and approvals from before the cutoff."""
        limit = cutoff(older_than, "older_than")
        with self._lock:
            old = [k for k, r in self._calls.items() if r.started_at < limit]
            for key in old:
                del self._calls[key]
            for key in [k for k, a in self._approvals.items() if a.requested_at < limit]:
                del self._approvals[key]
        return len(old)

    def get_state(self, session_id: str, key: str) -> str | None:
        """A session's value under `key`."""
        with self._lock:
            return self._state.get((session_id, key))

    def set_state(self, session_id: str, key: str, value: str) -> None:
        """Store a session's value."""
        if not isinstance(value, str):
            raise TypeError(f"state values are strings (serialise them first); got {type(value).__name__}")
        with self._lock:
            self._state[(session_id, key)] = value

    def delete_state(self, session_id: str, key: str) -> None:
        """Remove a session's value."""
        with self._lock:
            self._state.pop((session_id, key), None)

    def request_approval(self, request: PendingApproval) -> None:
        """Queue an approval (an existing one is kept)."""
        with self._lock:
            self._approvals.setdefault(
                request.call_id, dataclasses.replace(request, arguments=self.redactor.value(request.arguments))
            )

    def pending_approvals(self, session_id: str | None = None) -> list[PendingApproval]:
        """Unanswered approvals, oldest first."""
        with self._lock:
            items = [a for a in self._approvals.values() if not a.answered]
        return [a for a in items if session_id is None or a.session_id == session_id]

    def get_approval(self, call_id: str) -> PendingApproval | None:
        """One approval by call id."""
        with self._lock:
            return self._approvals.get(call_id)

    def answer_approval(
        self,
        call_id: str,
        decision: ApprovalDecision,
        *,
        scope: ApprovalScope = "call",
        reason: str | None = None,
        answered_by: str | None = None,
    ) -> bool:
        """Answer a pending approval; False when there is none or it was answered."""
        if decision not in ("approve", "deny"):
            raise ValueError(f"decision must be 'approve' or 'deny'; got {decision!r}")
        with self._lock:
            current = self._approvals.get(call_id)
            if current is None or current.answered:
                return False
            self._approvals[call_id] = dataclasses.replace(
                current, decision=decision, scope=scope, answer_reason=reason, answered_by=answered_by,
                answered_at=datetime.now(UTC),
            )  # fmt: skip
        return True

    async def wait_for_answer(self, call_id: str, *, timeout: float | None = None) -> PendingApproval | None:
        """Poll (every 10 ms) until the approval is answered; None on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            current = self.get_approval(call_id)
            if current is not None and current.answered:
                return current
            if deadline is not None and time.monotonic() >= deadline:
                return None
            await anyio.sleep(0.01)

    def close(self) -> None:
        """Nothing to release."""


class ScriptedApprover:
    """An approver that answers from a script and remembers what it was asked.

    Args:
        answers: answers given in order (bool, `"approve"`, `"deny"`, `"approve_session"`, `Approval`),
            or a mapping of tool name → answer.
        default: the answer once the script runs out (or for tools the mapping does not name).
    """

    def __init__(self, answers: Iterable[Answer] | Mapping[str, Answer] = (), *, default: Answer = "deny") -> None:
        self._by_tool: Mapping[str, Answer] | None = answers if isinstance(answers, Mapping) else None
        self._queue: list[Answer] = [] if isinstance(answers, Mapping) else list(answers)
        self.default = default
        self.requests: list[ApprovalRequest] = []
        """Every request received, in order."""

    def __call__(self, request: ApprovalRequest) -> Answer:
        """Answer the next request from the script."""
        self.requests.append(request)
        if self._by_tool is not None:
            return self._by_tool.get(request.tool_name, self.default)
        return self._queue.pop(0) if self._queue else self.default

    @property
    def asked(self) -> list[str]:
        """The tool names asked about, in order."""
        return [request.tool_name for request in self.requests]
