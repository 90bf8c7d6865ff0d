"""How a `Session` keeps a call's log row current, without ever letting the store fail the call."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from ._invoke import ValidatedCall, error_result
from ._redact import REDACTED
from ._result import ToolResult
from ._tool import Tool
from .log._record import CallRecord, CallStatus, PendingApproval
from .policy import Approval

__all__ = ["RecordBook", "ordered_call_id", "status_of"]

_log = logging.getLogger("toolhall.log")

_STATUS_BY_CODE: dict[str, CallStatus] = {
    "timeout": "timeout",
    "cancelled": "cancelled",
    "denied": "denied",
    "approval_required": "denied",
}


_SUFFIXES: list[str] = []
# A forked child must not hand out the suffixes its parent still holds.
os.register_at_fork(after_in_child=_SUFFIXES.clear)


def ordered_call_id() -> str:
    """A call id shaped like any other (`call_` + 24 hex digits) whose first 12 digits are the time in ms.

    A session's ids then sort by time, so the log's unique index on ids grows at its end: a random id
    dirties a random index page per row (measured: 15-20 µs of CPU per row in grouped commits once the
    table holds 100,000 rows). 48 random bits per millisecond keep ids unique.
    """
    try:
        suffix = _SUFFIXES.pop()  # atomic: two threads never get the same suffix
    except IndexError:
        raw = os.urandom(6 * 256).hex()  # one getrandom() for 256 ids
        _SUFFIXES.extend(raw[i : i + 12] for i in range(12, len(raw), 12))
        suffix = raw[:12]
    return f"call_{time.time_ns() // 1_000_000:012x}{suffix}"


def status_of(result: ToolResult) -> CallStatus:
    """The row status for a finished call."""
    if result.ok:
        return "ok"
    code = result.error.code if result.error is not None else "execution_error"
    return _STATUS_BY_CODE.get(code, "error")


def _secret_fields(tool: Tool) -> frozenset[str]:
    """Arguments the schema marks secret (pydantic `SecretStr` gives `writeOnly` / `format: password`)."""
    props = tool.input_schema.get("properties") if isinstance(tool.input_schema, dict) else None
    if not isinstance(props, dict):
        return frozenset()
    return frozenset(
        name
        for name, spec in props.items()
        if isinstance(spec, dict) and (spec.get("writeOnly") is True or spec.get("format") == "password")
    )


_FIELDS = tuple(f.name for f in dataclasses.fields(CallRecord))


class Entry:
    """The live row of one call: changed in place at each step, written as it stands.

    SQL stores read it directly (`write_row`), so a call builds no `CallRecord` per write; other stores get
    a `CallRecord` snapshot. Each durable write returns before the entry changes again, and the final write
    (lazy) is its last change, so a queued entry never changes under the store.
    """

    __slots__ = _FIELDS
    id: str
    tool: str
    status: CallStatus
    started_at: datetime
    session_id: str | None
    parent_id: str | None
    worker: str | None
    role: str | None
    tool_version: str | None
    input: Any
    subjects: tuple[str, ...]
    output: str | None
    data: Any
    error_code: str | None
    error_message: str | None
    error_details: dict[str, Any] | None
    approval: str | None
    ended_at: datetime | None
    duration_ms: float | None
    truncated: bool
    output_chars: int | None

    def __init__(
        self, id: str, tool: str, status: CallStatus, started_at: datetime, session_id: str | None,  # noqa: A002
        parent_id: str | None, worker: str | None, role: str | None, tool_version: str | None, input: Any,  # noqa: A002
        subjects: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        self.id, self.tool, self.status, self.started_at = id, tool, status, started_at
        self.session_id, self.parent_id, self.worker, self.role = session_id, parent_id, worker, role
        self.tool_version, self.input, self.subjects = tool_version, input, subjects
        self.output = self.data = self.error_code = self.error_message = self.error_details = None
        self.approval = self.ended_at = self.duration_ms = self.output_chars = None
        self.truncated = False

    def record(self) -> CallRecord:
        """A `CallRecord` of the entry as it stands."""
        return CallRecord(**{name: getattr(self, name) for name in _FIELDS})


class RecordBook:
    """Writes a session's rows; every store error is reported once and swallowed."""

    def __init__(self, store: Any, session: Any) -> None:
        self.store = store
        self.session = session
        self._secrets: dict[str, frozenset[str]] = {}
        self._failed = False
        # SQL stores take the live entry itself; any other `LogStore` gets a `CallRecord` per write.
        self._write_row = getattr(store, "write_row", None)

    def _masked(self, tool: Tool | None, arguments: Any) -> Any:
        if tool is None or not isinstance(arguments, dict):
            return arguments
        secrets = self._secrets.get(tool.version)
        if secrets is None:
            secrets = self._secrets[tool.version] = _secret_fields(tool)
        if not secrets or not secrets.intersection(arguments):
            return arguments
        return {k: (REDACTED if k in secrets else v) for k, v in arguments.items()}

    def start(
        self, tool: Tool, validated: ValidatedCall, parent_id: str | None, kwargs: Any, subjects: list[str]
    ) -> Entry | None:
        """The row of a validated call (written by the next step); None without a store."""
        if self.store is None:
            return None
        session = self.session
        return Entry(
            validated.call_id, tool.name, "running", validated.started_at, session.session_id, parent_id,
            session.worker, session.role, tool.version, self._masked(tool, kwargs), tuple(subjects),
        )  # fmt: skip

    async def _write(self, entry: Entry, *, durable: bool) -> None:
        if self.store is None:
            return
        try:
            if self._write_row is not None:
                await self._write_row(entry, durable=durable)
            else:
                await self.store.write(entry.record(), durable=durable)
        except Exception as exc:  # noqa: BLE001 - a failing store never fails a call
            if not self._failed:
                self._failed = True
                _log.error("the log store %r failed; calls go on unlogged: %s", self.store, exc)

    async def pending(self, entry: Entry | None, request: PendingApproval) -> None:
        """Mark the row `pending` and queue the approval request in the store."""
        if entry is None:
            return
        entry.status = "pending"
        await self._write(entry, durable=True)
        await self._call_store(self.store.request_approval, self.redacted_request(request))

    def redacted_request(self, request: PendingApproval) -> PendingApproval:
        """The request with schema-secret arguments masked."""
        tool = self.session.toolbox.get(request.tool)
        return dataclasses.replace(request, arguments=self._masked(tool, request.arguments))

    def answered(self, call_id: str, approval: Approval, answered_by: str = "approver") -> None:
        """Record the approver's answer in the queue (a no-op when another process answered it)."""
        if self.store is None:
            return
        try:
            self.store.answer_approval(
                call_id, approval.decision, scope=approval.scope, reason=approval.reason, answered_by=answered_by
            )
        except Exception as exc:  # noqa: BLE001 - a failing store never fails a call
            _log.warning("could not record the approval answer for %s: %s", call_id, exc)

    async def _call_store(self, fn: Any, *args: Any) -> None:
        try:
            await anyio.to_thread.run_sync(fn, *args)
        except Exception as exc:  # noqa: BLE001 - a failing store never fails a call
            _log.warning("the log store failed (%s): %s", getattr(fn, "__name__", fn), exc)

    async def running(self, entry: Entry | None, how: str) -> None:
        """Mark the row `running` and wait until it is committed."""
        if entry is not None:
            entry.status, entry.approval = "running", how
            await self._write(entry, durable=True)

    async def finish(
        self, entry: Entry | None, result: ToolResult, *, status: CallStatus, approval: str | None = None
    ) -> None:
        """Store the outcome (the full output, before truncation)."""
        if entry is None:
            return
        entry.status, entry.output, entry.data = status, result.output, result.data
        error = result.error
        if error is not None:
            entry.error_code, entry.error_message, entry.error_details = error.code, error.message, error.details
        if approval is not None:
            entry.approval = approval
        entry.ended_at, entry.duration_ms = result.ended_at or datetime.now(UTC), result.duration_ms
        entry.truncated, entry.output_chars = result.truncated, len(result.output)
        await self._write(entry, durable=False)

    async def cancelled(self, entry: Entry | None, validated: ValidatedCall) -> None:
        """End the row of a call cancelled before it finished (and withdraw its approval request)."""
        if entry is None or entry.status not in ("pending", "running"):
            return  # no store, or the row already has its final status
        if entry.status == "pending":
            self.answered(entry.id, Approval("deny", reason="the call was cancelled"), answered_by="session")
        name = validated.tool.name
        result = error_result(
            "cancelled", f"{name} was cancelled", tool_name=name, call_id=validated.call_id,
            started=validated.started, started_at=validated.started_at,
        )  # fmt: skip
        await self.finish(entry, result, status="cancelled")

    async def refused(
        self, name: str, tool: Tool | None, call_id: str, parent_id: str | None, arguments: Any, result: ToolResult
    ) -> None:
        """The row of a call that never got past lookup or validation."""
        if self.store is None:
            return
        session = self.session
        entry = Entry(
            call_id, name, "error", result.started_at or datetime.now(UTC), session.session_id, parent_id,
            session.worker, session.role, tool.version if tool else None, self._masked(tool, arguments),
        )  # fmt: skip
        await self.finish(entry, result, status=status_of(result))
