"""The values a log store keeps: one `CallRecord` per call, and the pending-approval queue's entries."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

__all__ = [
    "CALL_STATUSES",
    "FINAL_STATUSES",
    "ApprovalDecision",
    "ApprovalScope",
    "CallRecord",
    "CallStatus",
    "PendingApproval",
]

CallStatus = Literal["pending", "running", "ok", "error", "denied", "timeout", "cancelled"]
"""Where a call is: `pending` (awaiting approval) → `running` → one of the final statuses."""

CALL_STATUSES: frozenset[str] = frozenset(get_args(CallStatus))
FINAL_STATUSES: frozenset[str] = CALL_STATUSES - {"pending", "running"}

ApprovalDecision = Literal["approve", "deny"]
"""What a person (or an approver) answered."""

ApprovalScope = Literal["call", "tool", "subject"]
"""How far an answer reaches: this call only, every call of the tool in the session, or the tool and
these subjects in the session."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRecord:
    """One call as the log keeps it: a row written when the call is validated and kept current.

    Example:
        ```python
        for record in log.calls(tool="run_command", status="error", limit=20):
            print(record.id, record.error_message)
        ```
    """

    id: str
    """The call's id (the `ToolResult.call_id`)."""
    tool: str
    """The tool's own name (or the name asked for, when no tool has it)."""
    status: CallStatus
    """`pending`, `running`, `ok`, `error`, `denied`, `timeout` or `cancelled`."""
    started_at: datetime
    """When the call was received (UTC)."""
    session_id: str | None = None
    """The session the call ran in."""
    parent_id: str | None = None
    """The call that made this one, for nested calls."""
    worker: str | None = None
    """The worker the session ran for."""
    role: str | None = None
    """The role the session ran as."""
    tool_version: str | None = None
    """The tool's version hash (name, description and schema) at the time of the call."""
    input: Any = None
    """The arguments, redacted: a JSON-safe value (the raw text when it was not valid JSON)."""
    subjects: tuple[str, ...] = ()
    """What policy rules matched against (paths, commands, URLs, statements)."""
    output: str | None = None
    """The full output before truncation for the model, redacted, up to the store's cap."""
    data: Any = None
    """The structured value, JSON-safe, redacted."""
    error_code: str | None = None
    """The `ToolError` code of a failed call."""
    error_message: str | None = None
    """The `ToolError` message of a failed call (the reason, for refused calls)."""
    error_details: dict[str, Any] | None = None
    """The `ToolError` details of a failed call."""
    approval: str | None = None
    """Why the call was allowed or refused: `policy`, `read_only`, `approver`, `session`, `dry_run`, ..."""
    ended_at: datetime | None = None
    """When the call ended (UTC), once it has."""
    duration_ms: float | None = None
    """How long the call took, once it ended."""
    truncated: bool = False
    """True when the model saw a truncated output (or the store cut the output at its cap)."""
    output_chars: int | None = None
    """The length of the full output, in characters."""

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-safe data (timestamps in ISO 8601)."""
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "session_id": self.session_id,
            "worker": self.worker,
            "role": self.role,
            "tool": self.tool,
            "tool_version": self.tool_version,
            "status": self.status,
            "input": self.input,
            "subjects": list(self.subjects),
            "output": self.output,
            "data": self.data,
            "error_code": self.error_code,
            "error_message": self.error_message,
            "error_details": self.error_details,
            "approval": self.approval,
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
            "duration_ms": self.duration_ms,
            "truncated": self.truncated,
            "output_chars": self.output_chars,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingApproval:
    """A call waiting for a person's answer, kept in the store so another process can answer it.

    Example:
        ```python
        for pending in log.pending_approvals():
            log.answer_approval(pending.call_id, "approve", answered_by="console")
        ```
    """

    call_id: str
    """The call waiting for the answer."""
    tool: str
    """The tool it calls."""
    requested_at: datetime
    """When the approval was requested (UTC)."""
    session_id: str | None = None
    """The session the call belongs to."""
    arguments: Any = None
    """The arguments, redacted, as JSON-safe data."""
    subjects: tuple[str, ...] = ()
    """What the call touches (paths, commands, URLs, statements)."""
    annotations: dict[str, Any] = field(default_factory=dict)
    """The tool's annotations (read_only, destructive, idempotent, open_world)."""
    reason: str | None = None
    """Why approval is needed (the rule that asked, say)."""
    decision: ApprovalDecision | None = None
    """The answer, once there is one."""
    scope: ApprovalScope = "call"
    """How far the answer reaches."""
    answer_reason: str | None = None
    """The reason given with the answer."""
    answered_by: str | None = None
    """Who answered (free text: `console`, `cli`, a user name)."""
    answered_at: datetime | None = None
    """When it was answered."""

    @property
    def answered(self) -> bool:
        """Whether there is an answer."""
        return self.decision is not None
