"""How a `Session` keeps a call's log row current, without ever letting the store fail the call."""

from __future__ import annotations

import dataclasses
import logging
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from ._invoke import ValidatedCall
from ._redact import REDACTED
from ._result import ToolResult
from ._tool import Tool
from .log._record import CallRecord, CallStatus, PendingApproval
from .policy import Approval

__all__ = ["RecordBook", "status_of"]

_log = logging.getLogger("toolhall.log")

_STATUS_BY_CODE: dict[str, CallStatus] = {
    "timeout": "timeout",
    "cancelled": "cancelled",
    "denied": "denied",
    "approval_required": "denied",
}


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


class Entry:
    """The current row of one call, as the fields of its next `CallRecord`.

    A dict updated in place is much cheaper than `dataclasses.replace` on a 21-field frozen record, and
    this runs several times per call.
    """

    __slots__ = ("fields",)

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def record(self, **changes: Any) -> CallRecord:
        """Apply changes and build the record to write."""
        self.fields.update(changes)
        return CallRecord(**self.fields)


class RecordBook:
    """Writes a session's rows; every store error is reported once and swallowed."""

    def __init__(self, store: Any, session: Any) -> None:
        self.store = store
        self.session = session
        self._secrets: dict[str, frozenset[str]] = {}
        self._failed = False

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
            id=validated.call_id, tool=tool.name, status="running", started_at=validated.started_at,
            session_id=session.session_id, parent_id=parent_id, worker=session.worker, role=session.role,
            tool_version=tool.version, input=self._masked(tool, kwargs), subjects=tuple(subjects),
        )  # fmt: skip

    async def _write(self, record: CallRecord, *, durable: bool) -> None:
        if self.store is None:
            return
        try:
            await self.store.write(record, durable=durable)
        except Exception as exc:  # noqa: BLE001 - a failing store never fails a call
            if not self._failed:
                self._failed = True
                _log.error("the log store %r failed; calls go on unlogged: %s", self.store, exc)

    async def pending(self, entry: Entry | None, request: PendingApproval) -> None:
        """Mark the row `pending` and queue the approval request in the store."""
        if entry is None:
            return
        await self._write(entry.record(status="pending"), durable=True)
        await self._call_store(self.store.request_approval, self.redacted_request(request))

    def redacted_request(self, request: PendingApproval) -> PendingApproval:
        """The request with schema-secret arguments masked."""
        tool = self.session.toolbox.get(request.tool)
        return dataclasses.replace(request, arguments=self._masked(tool, request.arguments))

    def answered(self, call_id: str, approval: Approval) -> None:
        """Record the approver's answer in the queue (a no-op when another process answered it)."""
        if self.store is None:
            return
        try:
            self.store.answer_approval(
                call_id, approval.decision, scope=approval.scope, reason=approval.reason, answered_by="approver"
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
            await self._write(entry.record(status="running", approval=how), durable=True)

    async def finish(
        self, entry: Entry | None, result: ToolResult, *, status: CallStatus, approval: str | None = None
    ) -> None:
        """Store the outcome (the full output, before truncation)."""
        if entry is None:
            return
        error = result.error
        record = entry.record(
            status=status, output=result.output, data=result.data,
            error_code=error.code if error else None, error_message=error.message if error else None,
            error_details=error.details if error else None, approval=approval or entry.fields.get("approval"),
            ended_at=result.ended_at or datetime.now(UTC), duration_ms=result.duration_ms,
            truncated=result.truncated, output_chars=len(result.output),
        )  # fmt: skip
        await self._write(record, durable=False)

    async def refused(
        self, name: str, tool: Tool | None, call_id: str, parent_id: str | None, arguments: Any, result: ToolResult
    ) -> None:
        """The row of a call that never got past lookup or validation."""
        if self.store is None:
            return
        session = self.session
        entry = Entry(
            id=call_id, tool=name, status="error", started_at=result.started_at or datetime.now(UTC),
            session_id=session.session_id, parent_id=parent_id, worker=session.worker, role=session.role,
            tool_version=tool.version if tool else None, input=self._masked(tool, arguments),
        )  # fmt: skip
        await self.finish(entry, result, status=status_of(result))
