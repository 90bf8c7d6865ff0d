"""Mapping between `CallRecord` / `PendingApproval` and table rows, with redaction and the output cap."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, Protocol

from .._redact import Redactor
from ._record import CallRecord, PendingApproval

__all__ = [
    "APPROVAL_COLUMNS",
    "CALL_COLUMNS",
    "UPDATE_COLUMNS",
    "CallRow",
    "RowCodec",
    "cap_text",
    "to_json",
]

CALL_COLUMNS = (
    "id", "parent_id", "session_id", "worker", "role", "tool", "tool_version", "status", "input", "subjects",
    "output", "data", "error_code", "error_message", "error_details", "approval", "started_at", "ended_at",
    "duration_ms", "truncated", "output_chars",
)  # fmt: skip

UPDATE_COLUMNS = (
    "status", "output", "data", "error_code", "error_message", "error_details", "approval", "ended_at", "duration_ms",
    "truncated", "output_chars",
)  # fmt: skip
"""The columns a call's later writes change; the others are fixed when its row is inserted."""

APPROVAL_COLUMNS = (
    "call_id", "session_id", "tool", "arguments", "subjects", "annotations", "reason", "requested_at",
    "decision", "scope", "answer_reason", "answered_by", "answered_at",
)  # fmt: skip

Timestamp = Callable[[datetime | None], Any]


class CallRow(Protocol):
    """What a store reads to write a call's row: a `CallRecord`, or a session's live entry of the call.

    A live entry changes between writes of its call, never while one is queued: each durable write returns
    before the session changes the entry again, and the final (lazy) write is the last change.
    """

    @property
    def id(self) -> str: ...  # noqa: D102
    @property
    def parent_id(self) -> str | None: ...  # noqa: D102
    @property
    def session_id(self) -> str | None: ...  # noqa: D102
    @property
    def worker(self) -> str | None: ...  # noqa: D102
    @property
    def role(self) -> str | None: ...  # noqa: D102
    @property
    def tool(self) -> str: ...  # noqa: D102
    @property
    def tool_version(self) -> str | None: ...  # noqa: D102
    @property
    def status(self) -> str: ...  # noqa: D102
    @property
    def input(self) -> Any: ...  # noqa: D102
    @property
    def subjects(self) -> tuple[str, ...]: ...  # noqa: D102
    @property
    def output(self) -> str | None: ...  # noqa: D102
    @property
    def data(self) -> Any: ...  # noqa: D102
    @property
    def error_code(self) -> str | None: ...  # noqa: D102
    @property
    def error_message(self) -> str | None: ...  # noqa: D102
    @property
    def error_details(self) -> dict[str, Any] | None: ...  # noqa: D102
    @property
    def approval(self) -> str | None: ...  # noqa: D102
    @property
    def started_at(self) -> datetime: ...  # noqa: D102
    @property
    def ended_at(self) -> datetime | None: ...  # noqa: D102
    @property
    def duration_ms(self) -> float | None: ...  # noqa: D102
    @property
    def truncated(self) -> bool: ...  # noqa: D102
    @property
    def output_chars(self) -> int | None: ...  # noqa: D102


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
# The C encoder behind `_ENCODER`, built once: `JSONEncoder.encode` builds a new one per call, which cost
# more than encoding a small argument dict. Without a circular-reference check (a cycle raises
# RecursionError, and the slow path then reports it as `_ENCODER` would).
_C_ENCODE = c_make_encoder(None, str, encode_basestring, None, ":", ",", False, False, True) if c_make_encoder else None


def to_json(value: Any) -> str | None:
    """JSON text for a column; values JSON cannot express are written as their `str()`."""
    if value is None:
        return None
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if kind is int:
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    if _C_ENCODE is not None:
        try:
            return "".join(_C_ENCODE(value, 0))
        except RecursionError:
            pass
    return _ENCODER.encode(value)


def _from_json(text: Any) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def cap_text(text: str, cap: int) -> tuple[str, bool]:
    """Cut text to at most `cap` UTF-8 bytes (on a character boundary); returns it and whether it was cut."""
    if len(text) * 4 <= cap:
        return text, False
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= cap:
        return text, False
    return raw[:cap].decode("utf-8", "ignore"), True


class RowCodec:
    """Turns records into row tuples (redacting and capping) and rows back into records.

    Args:
        redactor: what to redact before writing.
        max_output_bytes: the cap on stored output (and on stored data, as JSON).
        ts_in: converts an aware datetime to the column value.
        ts_out: converts a column value back to an aware datetime.
    """

    def __init__(self, redactor: Redactor, max_output_bytes: int, ts_in: Timestamp, ts_out: Timestamp) -> None:
        self.redactor = redactor
        self.cap = max_output_bytes
        self.ts_in = ts_in
        self.ts_out = ts_out

    def call_row(self, record: CallRow) -> tuple[Any, ...]:
        """The whole row for a record (`CALL_COLUMNS` order): redacted input, output and data; output capped."""
        output, data, message, details, truncated = self._outcome(record)
        subjects, ended = record.subjects, record.ended_at
        return (
            record.id, record.parent_id, record.session_id, record.worker, record.role, record.tool,
            record.tool_version, record.status, to_json(self.redactor.value(record.input)),
            to_json(list(subjects)) if subjects else None, output, data, record.error_code, message, details,
            record.approval, self.ts_in(record.started_at), self.ts_in(ended) if ended is not None else None,
            record.duration_ms, truncated, record.output_chars,
        )  # fmt: skip

    def finish_row(self, record: CallRow) -> tuple[Any, ...]:
        """What a later write of a call changes (`UPDATE_COLUMNS` order), then the id."""
        output, data, message, details, truncated = self._outcome(record)
        ended = record.ended_at
        return (
            record.status, output, data, record.error_code, message, details, record.approval,
            self.ts_in(ended) if ended is not None else None, record.duration_ms, truncated, record.output_chars,
            record.id,
        )  # fmt: skip

    def _outcome(self, record: CallRow) -> tuple[str | None, str | None, str | None, str | None, bool]:
        """Output, data (JSON), error message, error details (JSON): redacted and capped; and the truncated flag."""
        redact = self.redactor
        output, truncated = record.output, bool(record.truncated)
        if output:
            output, cut = cap_text(redact.text(output), self.cap)
            truncated = truncated or cut
        data_json = None
        if record.data is not None:
            data_json = to_json(redact.value(record.data))
            if data_json is not None and len(data_json) > self.cap // 4:
                _, cut = cap_text(data_json, self.cap)
                if cut:  # cut JSON would not parse: keep a marker instead
                    data_json = to_json({"truncated": True, "bytes": len(data_json.encode("utf-8", "replace"))})
                    truncated = True
        details = to_json(redact.value(record.error_details)) if record.error_details else None
        message = redact.text(record.error_message) if record.error_message else record.error_message
        return output, data_json, message, details, truncated

    def call_from_row(self, row: Sequence[Any]) -> CallRecord:
        """A record from a row in `CALL_COLUMNS` order."""
        r = dict(zip(CALL_COLUMNS, row, strict=True))
        subjects = _from_json(r["subjects"]) or []
        return CallRecord(
            id=r["id"], parent_id=r["parent_id"], session_id=r["session_id"], worker=r["worker"],
            role=r["role"], tool=r["tool"], tool_version=r["tool_version"], status=r["status"],
            input=_from_json(r["input"]), subjects=tuple(str(s) for s in subjects), output=r["output"],
            data=_from_json(r["data"]), error_code=r["error_code"], error_message=r["error_message"],
            error_details=_from_json(r["error_details"]), approval=r["approval"],
            started_at=self.ts_out(r["started_at"]), ended_at=self.ts_out(r["ended_at"]),
            duration_ms=r["duration_ms"], truncated=bool(r["truncated"]), output_chars=r["output_chars"],
        )  # fmt: skip

    def approval_row(self, request: PendingApproval) -> tuple[Any, ...]:
        """The row for a new approval request (arguments redacted)."""
        return (
            request.call_id, request.session_id, request.tool, to_json(self.redactor.value(request.arguments)),
            to_json(list(request.subjects)), to_json(request.annotations), request.reason,
            self.ts_in(request.requested_at), request.decision, request.scope, request.answer_reason,
            request.answered_by, self.ts_in(request.answered_at),
        )  # fmt: skip

    def approval_from_row(self, row: Sequence[Any]) -> PendingApproval:
        """An approval from a row in `APPROVAL_COLUMNS` order."""
        r = dict(zip(APPROVAL_COLUMNS, row, strict=True))
        return PendingApproval(
            call_id=r["call_id"], session_id=r["session_id"], tool=r["tool"], arguments=_from_json(r["arguments"]),
            subjects=tuple(_from_json(r["subjects"]) or ()), annotations=_from_json(r["annotations"]) or {},
            reason=r["reason"], requested_at=self.ts_out(r["requested_at"]), decision=r["decision"],
            scope=r["scope"], answer_reason=r["answer_reason"], answered_by=r["answered_by"],
            answered_at=self.ts_out(r["answered_at"]),
        )  # fmt: skip


def utc_now() -> datetime:
    """The current time, aware, in UTC."""
    return datetime.now(UTC)
