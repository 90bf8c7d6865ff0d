"""What the SQLite and PostgreSQL stores share: group-commit writes, queries, state and approvals.

Subclasses provide the connection handling (`_write_plan`, `_commit_inline`, `_fetch`, `_change`) and the
timestamp conversion; every statement here is written once with `?` placeholders and translated for the dialect.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Self

import anyio
import anyio.to_thread

from .._errors import LogStoreError
from .._redact import Redactor
from ._callwrites import CallWrites
from ._migrations import Dialect
from ._record import CALL_STATUSES, ApprovalDecision, ApprovalScope, CallRecord, CallStatus, PendingApproval
from ._rows import APPROVAL_COLUMNS, CALL_COLUMNS, UPDATE_COLUMNS, RowCodec, utc_now
from ._writer import ThreadWaker

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "UPDATE_CALL",
    "UPSERT_CALL",
    "SqlLogBase",
    "check_limit",
    "cutoff",
    "wrap_error",
]

DEFAULT_MAX_OUTPUT_BYTES = 10 * 1024 * 1024
"""The default cap on a stored output: 10 MB."""

_APPROVAL_POLL_S = 0.05  # how often a waiting call looks for an answer written by another process

UPSERT_CALL = (
    f"INSERT INTO toolhall_calls ({', '.join(CALL_COLUMNS)}) VALUES ({', '.join('?' * len(CALL_COLUMNS))}) "
    f"ON CONFLICT (id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in CALL_COLUMNS[1:])}"
)
UPDATE_CALL = f"UPDATE toolhall_calls SET {', '.join(f'{c} = ?' for c in UPDATE_COLUMNS)} WHERE id = ?"
"""A call's later write: only the columns that change, found by id."""
_SELECT_CALLS = f"SELECT {', '.join(CALL_COLUMNS)} FROM toolhall_calls"
_SELECT_APPROVALS = f"SELECT {', '.join(APPROVAL_COLUMNS)} FROM toolhall_approvals"


def cutoff(value: datetime | timedelta, name: str) -> datetime:
    """An aware UTC datetime from a datetime or an age (`timedelta`), checked."""
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise ValueError(f"{name} must be a non-negative age or a datetime; got {value!r}")
        return utc_now() - value
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.astimezone()
    raise TypeError(f"{name} must be a datetime or a timedelta; got {type(value).__name__}")


def check_limit(limit: int | None) -> None:
    """Refuse a limit that is not a positive integer (or None for no limit)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None; got {limit!r}")


class SqlLogBase(CallWrites):
    """The shared body of `SqliteLog` and `PostgresLog`."""

    _dialect: Dialect

    def __init__(
        self,
        *,
        redact: bool = True,
        redact_fields: Iterable[str] = (),
        redact_patterns: Iterable[str] = (),
        redactor: Redactor | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    ) -> None:
        if isinstance(max_output_bytes, bool) or not isinstance(max_output_bytes, int) or max_output_bytes < 0:
            raise ValueError(f"max_output_bytes must be a non-negative integer; got {max_output_bytes!r}")
        if redactor is None:
            redactor = Redactor(redact_fields, redact_patterns, defaults=redact)
        self._codec = RowCodec(redactor, max_output_bytes, self._ts_in, self._ts_out)
        self._answer_waiters: dict[str, list[ThreadWaker]] = {}
        self._waiters_lock = threading.Lock()
        self._init_writes(f"toolhall-log-{type(self).__name__}", self._maintain)

    # -- dialect hooks -----------------------------------------------------------------------------
    def _ts_in(self, value: datetime | None) -> Any:
        raise NotImplementedError

    def _ts_out(self, value: Any) -> Any:
        raise NotImplementedError

    def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a query and return its rows."""
        raise NotImplementedError

    def _change(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one committed statement and return the number of rows it changed."""
        raise NotImplementedError

    def _close_connections(self) -> None:
        raise NotImplementedError

    def _maintain(self) -> None:
        """Housekeeping run on the writer thread when asked (SQLite: a WAL checkpoint)."""

    # -- calls -------------------------------------------------------------------------------------
    def calls(
        self,
        *,
        session_id: str | None = None,
        tool: str | None = None,
        status: CallStatus | str | None = None,
        since: datetime | timedelta | None = None,
        limit: int | None = 100,
    ) -> list[CallRecord]:
        """Recorded calls, newest first, filtered by the arguments given.

        Example:
            ```python
            log.calls(tool="run_command", status="error", since=timedelta(hours=1), limit=20)
            ```

        Args:
            session_id: only calls of this session.
            tool: only calls of this tool.
            status: only calls with this status (`pending`, `running`, `ok`, `error`, `denied`,
                `timeout` or `cancelled`).
            since: only calls started at or after this time, or within this age.
            limit: at most this many (None for all).
        """
        if status is not None and status not in CALL_STATUSES:
            raise ValueError(f"status must be one of {', '.join(sorted(CALL_STATUSES))}; got {status!r}")
        check_limit(limit)
        where, params = [], []
        for column, value in (("session_id", session_id), ("tool", tool), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            where.append("started_at >= ?")
            params.append(self._ts_in(cutoff(since, "since")))
        sql = _SELECT_CALLS + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY started_at DESC, seq DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        self.flush()
        return [self._codec.call_from_row(row) for row in self._fetch(sql, params)]

    def get(self, call_id: str) -> CallRecord | None:
        """One call by id, or None."""
        self.flush()
        rows = self._fetch(_SELECT_CALLS + " WHERE id = ?", (call_id,))
        return self._codec.call_from_row(rows[0]) if rows else None

    def prune(self, older_than: timedelta | datetime) -> int:
        """Delete calls and approval requests from before the cutoff; returns the number of calls deleted.

        Example:
            ```python
            log.prune(timedelta(days=30))
            ```
        """
        limit = self._ts_in(cutoff(older_than, "older_than"))
        self.flush()
        deleted = self._change("DELETE FROM toolhall_calls WHERE started_at < ?", (limit,))
        self._change("DELETE FROM toolhall_approvals WHERE requested_at < ?", (limit,))
        return deleted

    # -- per-session state -------------------------------------------------------------------------
    def get_state(self, session_id: str, key: str) -> str | None:
        """A session's value under `key`, or None."""
        rows = self._fetch("SELECT value FROM toolhall_state WHERE session_id = ? AND key = ?", (session_id, key))
        return str(rows[0][0]) if rows else None

    def set_state(self, session_id: str, key: str, value: str) -> None:
        """Store a session's value under `key`."""
        if not isinstance(value, str):
            raise TypeError(f"state values are strings (serialise them first); got {type(value).__name__}")
        self._change(
            "INSERT INTO toolhall_state (session_id, key, value, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            (session_id, key, value, self._ts_in(utc_now())),
        )

    def delete_state(self, session_id: str, key: str) -> None:
        """Remove a session's value under `key`."""
        self._change("DELETE FROM toolhall_state WHERE session_id = ? AND key = ?", (session_id, key))

    # -- pending approvals -------------------------------------------------------------------------
    def request_approval(self, request: PendingApproval) -> None:
        """Put a call in the approval queue (an existing request for the call is kept)."""
        placeholders = ", ".join("?" * len(APPROVAL_COLUMNS))
        self._change(
            f"INSERT INTO toolhall_approvals ({', '.join(APPROVAL_COLUMNS)}) VALUES ({placeholders}) "
            "ON CONFLICT (call_id) DO NOTHING",
            self._codec.approval_row(request),
        )

    def pending_approvals(self, session_id: str | None = None) -> list[PendingApproval]:
        """Unanswered approvals, oldest first (of one session, when given)."""
        sql, params = _SELECT_APPROVALS + " WHERE decision IS NULL", []
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        rows = self._fetch(sql + " ORDER BY requested_at, call_id", params)
        return [self._codec.approval_from_row(row) for row in rows]

    def get_approval(self, call_id: str) -> PendingApproval | None:
        """One approval request by call id, or None."""
        rows = self._fetch(_SELECT_APPROVALS + " WHERE call_id = ?", (call_id,))
        return self._codec.approval_from_row(rows[0]) if rows else None

    def answer_approval(
        self,
        call_id: str,
        decision: ApprovalDecision,
        *,
        scope: ApprovalScope = "call",
        reason: str | None = None,
        answered_by: str | None = None,
    ) -> bool:
        """Answer a pending approval; False when there is none or it was already answered.

        Example:
            ```python
            log.answer_approval(call_id, "deny", reason="not on a Friday", answered_by="console")
            ```
        """
        if decision not in ("approve", "deny"):
            raise ValueError(f"decision must be 'approve' or 'deny'; got {decision!r}")
        if scope not in ("call", "tool", "subject"):
            raise ValueError(f"scope must be 'call', 'tool' or 'subject'; got {scope!r}")
        changed = self._change(
            "UPDATE toolhall_approvals SET decision = ?, scope = ?, answer_reason = ?, answered_by = ?, "
            "answered_at = ? WHERE call_id = ? AND decision IS NULL",
            (decision, scope, reason, answered_by, self._ts_in(utc_now()), call_id),
        )
        with self._waiters_lock:
            waiters = self._answer_waiters.pop(call_id, [])
        for waiter in waiters:
            waiter.wake()
        return changed == 1

    async def wait_for_answer(self, call_id: str, *, timeout: float | None = None) -> PendingApproval | None:
        """Wait until the approval is answered, here or by another process; None on timeout.

        An answer given in this process wakes the call at once; one from another process is noticed
        within 50 ms.
        """
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        while True:
            waker = ThreadWaker()
            with self._waiters_lock:
                self._answer_waiters.setdefault(call_id, []).append(waker)
            try:
                request = await anyio.to_thread.run_sync(self.get_approval, call_id)
                if request is not None and request.answered:
                    return request
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                with anyio.move_on_after(min(_APPROVAL_POLL_S, remaining)):
                    await waker.wait()
            finally:
                self._forget_waiter(call_id, waker)

    def _forget_waiter(self, call_id: str, waker: ThreadWaker) -> None:
        with self._waiters_lock:
            waiters = self._answer_waiters.get(call_id)
            if waiters and waker in waiters:
                waiters.remove(waker)
                if not waiters:
                    del self._answer_waiters[call_id]

    # -- lifetime ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Commit what is queued, stop the writer thread and close connections."""
        self._writer.close()
        self._close_connections()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wrap_error(exc: Exception, what: str) -> LogStoreError:
    """A `LogStoreError` naming what failed."""
    return LogStoreError(f"log store failed while {what}: {exc}")
