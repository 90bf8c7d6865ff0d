"""JSON shapes the console sends: call summaries (for the feed), full calls, approvals, and the stats."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from ..log._record import CallRecord, PendingApproval

__all__ = ["ERROR_STATUSES", "approval_dict", "call_detail", "compute_stats", "cut", "summarize"]

ERROR_STATUSES = frozenset({"error", "timeout"})
"""Statuses counted in error rates (a denial is a decision, not a failure)."""

_PREVIEW_CHARS = 160
_MESSAGE_CHARS = 300
_MINUTES = 30
_SLOWEST = 8
_SESSIONS = 50


def cut(text: str | None, limit: int) -> str | None:
    """`text` cut to `limit` characters (with an ellipsis), or None."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def _preview(value: Any) -> str:
    if value is None:
        return ""
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return cut(text, _PREVIEW_CHARS) or ""


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def summarize(record: CallRecord) -> dict[str, Any]:
    """What the feed shows of a call (no full input or output: those are fetched when a call is opened)."""
    return {
        "id": record.id,
        "parent_id": record.parent_id,
        "session_id": record.session_id,
        "worker": record.worker,
        "role": record.role,
        "tool": record.tool,
        "status": record.status,
        "subjects": list(record.subjects[:20]),
        "input_preview": _preview(record.input),
        "started_at": _iso(record.started_at),
        "ended_at": _iso(record.ended_at),
        "duration_ms": record.duration_ms,
        "truncated": record.truncated,
        "output_chars": record.output_chars,
        "error_code": record.error_code,
        "error_message": cut(record.error_message, _MESSAGE_CHARS),
        "approval": record.approval,
    }


def approval_dict(request: PendingApproval, timeout: float | None) -> dict[str, Any]:
    """An approval request (answered or not) as JSON; `expires_at` when the console times requests out."""
    expires = request.requested_at + timedelta(seconds=timeout) if timeout is not None else None
    return {
        "call_id": request.call_id,
        "tool": request.tool,
        "session_id": request.session_id,
        "arguments": request.arguments,
        "subjects": list(request.subjects),
        "annotations": dict(request.annotations),
        "reason": request.reason,
        "requested_at": _iso(request.requested_at),
        "expires_at": _iso(expires),
        "decision": request.decision,
        "scope": request.scope,
        "answer_reason": request.answer_reason,
        "answered_by": request.answered_by,
        "answered_at": _iso(request.answered_at),
    }


def call_detail(record: CallRecord, approval: PendingApproval | None, timeout: float | None) -> dict[str, Any]:
    """A call in full (input, output, data, error) with its approval request, when it had one."""
    detail = record.to_dict()
    detail["approval_request"] = approval_dict(approval, timeout) if approval is not None else None
    return detail


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))
    return ordered[index]


def compute_stats(entries: Iterable[tuple[datetime, dict[str, Any]]], now: datetime) -> dict[str, Any]:
    """Sessions, calls per minute (the last 30 minutes) and the slowest tools, over the calls given."""
    sessions: dict[str, dict[str, Any]] = {}
    minutes: list[dict[str, Any]] = [
        {"minute": _iso(_minute(now) - timedelta(minutes=i)), "calls": 0, "errors": 0} for i in range(_MINUTES)
    ]
    minutes.reverse()
    first_minute = _minute(now) - timedelta(minutes=_MINUTES - 1)
    durations: dict[str, list[float]] = {}
    totals = {"calls": 0, "errors": 0, "denied": 0, "running": 0, "pending": 0}
    for started, call in entries:
        status = call["status"]
        totals["calls"] += 1
        if status in ERROR_STATUSES:
            totals["errors"] += 1
        if status in ("denied", "running", "pending"):
            totals[status] += 1
        _add_session(sessions, started, call)
        offset = int((_minute(started) - first_minute).total_seconds() // 60)
        if 0 <= offset < _MINUTES:
            bucket = minutes[offset]
            bucket["calls"] += 1
            bucket["errors"] += status in ERROR_STATUSES
        if call["duration_ms"] is not None and status not in ("denied", "pending"):
            durations.setdefault(call["tool"], []).append(float(call["duration_ms"]))
    return {
        "totals": totals,
        "sessions": _session_rows(sessions),
        "per_minute": minutes,
        "slowest_tools": _slowest(durations),
    }


def _minute(value: datetime) -> datetime:
    return value.replace(second=0, microsecond=0)


def _add_session(sessions: dict[str, dict[str, Any]], started: datetime, call: dict[str, Any]) -> None:
    key = call["session_id"] or "(no session)"
    row = sessions.get(key)
    if row is None:
        row = sessions[key] = {
            "session_id": key, "worker": call["worker"], "role": call["role"], "calls": 0, "errors": 0,
            "finished": 0, "total_ms": 0.0, "first": started, "last": started,
        }  # fmt: skip
    row["calls"] += 1
    if call["status"] not in ("pending", "running"):
        row["finished"] += 1
    row["errors"] += call["status"] in ERROR_STATUSES
    if call["duration_ms"] is not None:
        row["total_ms"] += float(call["duration_ms"])
    row["first"] = min(row["first"], started)
    row["last"] = max(row["last"], started)


def _session_rows(sessions: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = sorted(sessions.values(), key=lambda row: row["last"], reverse=True)[:_SESSIONS]
    return [
        {
            **{k: v for k, v in row.items() if k not in ("first", "last", "finished")},
            "error_rate": row["errors"] / row["finished"] if row["finished"] else 0.0,
            "total_ms": round(row["total_ms"], 1),
            "first": _iso(row["first"]),
            "last": _iso(row["last"]),
        }
        for row in rows
    ]


def _slowest(durations: dict[str, list[float]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {
            "tool": tool,
            "calls": len(values),
            "avg_ms": round(sum(values) / len(values), 1),
            "p95_ms": round(_percentile(values, 0.95), 1),
            "max_ms": round(max(values), 1),
        }
        for tool, values in durations.items()
    ]
    rows.sort(key=lambda row: row["avg_ms"], reverse=True)
    return rows[:_SLOWEST]
