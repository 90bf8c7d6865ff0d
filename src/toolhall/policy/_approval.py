"""Approval: what an approver is given, the answers it may give, and session-wide memory of answers."""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from ..log._record import ApprovalDecision, ApprovalScope, PendingApproval

__all__ = [
    "Approval",
    "ApprovalMemory",
    "ApprovalRequest",
    "Approver",
    "QueueApprover",
    "ask_approver",
    "coerce_answer",
]

_log = logging.getLogger("toolhall.policy")
_STATE_KEY = "toolhall.approvals"


@dataclass(frozen=True, slots=True)
class Approval:
    """An approver's answer.

    Example:
        ```python
        Approval("approve", scope="subject")  # this tool on these subjects, for the rest of the session
        Approval("deny", reason="not on main")
        ```
    """

    decision: ApprovalDecision
    """`approve` or `deny`."""
    reason: str | None = None
    """Why (shown to the model for a denial, and logged)."""
    scope: ApprovalScope = "call"
    """`call` (this call only), `tool` (every call of the tool in this session), or `subject` (the tool
    on these subjects in this session)."""

    def __post_init__(self) -> None:
        if self.decision not in ("approve", "deny"):
            raise ValueError(f"Approval decision must be 'approve' or 'deny'; got {self.decision!r}")
        if self.scope not in ("call", "tool", "subject"):
            raise ValueError(f"Approval scope must be 'call', 'tool' or 'subject'; got {self.scope!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """The call an approver is asked about."""

    tool: Any
    """The `Tool` (its name, description and annotations)."""
    arguments: dict[str, Any]
    """The validated arguments."""
    subjects: tuple[str, ...] = ()
    """What the call touches (paths, commands, URLs, statements)."""
    call_id: str = ""
    """The call's id (the key of the pending approval in the store)."""
    session_id: str | None = None
    """The session asking."""
    reason: str = ""
    """Why approval is needed (the rule, or the tool's annotations)."""
    annotations: Mapping[str, Any] = field(default_factory=dict)
    """The tool's annotations as a mapping (read_only, destructive, idempotent, open_world)."""

    @property
    def tool_name(self) -> str:
        """The tool's name."""
        return str(self.tool.name)


Answer = bool | str | Approval | None
Approver = Callable[[ApprovalRequest], Answer | Awaitable[Answer]]
"""A sync or async callable answering an `ApprovalRequest`."""


def coerce_answer(value: Any) -> Approval:
    """Any accepted answer (bool, `"approve"`, `"deny"`, `"approve_session"`, `Approval`) as an `Approval`.

    Anything else is a denial that says why, so a buggy approver fails closed.
    """
    if isinstance(value, Approval):
        return value
    if value is True:
        return Approval("approve")
    if value is False:
        return Approval("deny", reason="the approver declined")
    if isinstance(value, str):
        word = value.strip().lower()
        if word == "approve":
            return Approval("approve")
        if word == "deny":
            return Approval("deny", reason="the approver declined")
        if word == "approve_session":
            return Approval("approve", scope="tool")
    return Approval("deny", reason=f"the approver gave an answer that is not a decision ({value!r})")


async def ask_approver(approver: Approver, request: ApprovalRequest) -> Approval:
    """Ask a sync (in a thread) or async approver; an approver that raises has denied."""
    try:
        if _is_async(approver):
            answer = await approver(request)  # type: ignore[misc]
        else:
            answer = await anyio.to_thread.run_sync(approver, request)
            if inspect.isawaitable(answer):
                answer = await answer
    except Exception as exc:  # noqa: BLE001 - a broken approver must not fail the session: deny instead
        _log.warning("approver raised; denying %s: %r", request.tool_name, exc)
        return Approval("deny", reason=f"the approver failed: {exc}")
    return coerce_answer(answer)


def _is_async(approver: Any) -> bool:
    call = type(approver).__call__ if not inspect.isfunction(approver) else approver
    return inspect.iscoroutinefunction(approver) or inspect.iscoroutinefunction(call)


class ApprovalMemory:
    """Session-wide answers: for a whole tool, or for a tool and particular subjects.

    Kept in the store's per-session state when there is one, so a resumed session remembers them.
    """

    def __init__(self, store: Any = None, session_id: str | None = None) -> None:
        self._store = store if session_id is not None else None
        self._session_id = session_id
        self._tools: dict[str, ApprovalDecision] = {}
        self._subjects: dict[str, dict[str, ApprovalDecision]] = {}
        self._loaded = False

    def lookup(self, tool_name: str, subjects: tuple[str, ...]) -> Approval | None:
        """A remembered answer covering this call, or None."""
        self._load()
        whole = self._tools.get(tool_name)
        if whole is not None:
            return Approval(whole, reason=f"{whole}d for {tool_name} earlier in this session", scope="tool")
        known = self._subjects.get(tool_name)
        if not known or not subjects:
            return None
        answers = {known.get(s) for s in subjects}
        if "deny" in answers:
            return Approval("deny", reason="denied for these subjects earlier in this session", scope="subject")
        if answers == {"approve"}:
            return Approval("approve", reason="approved for these subjects earlier in this session", scope="subject")
        return None

    def remember(self, tool_name: str, subjects: tuple[str, ...], approval: Approval) -> None:
        """Keep a session-scoped answer (call-scoped answers are not kept)."""
        if approval.scope == "call":
            return
        self._load()
        if approval.scope == "tool" or not subjects:
            self._tools[tool_name] = approval.decision
        else:
            bucket = self._subjects.setdefault(tool_name, {})
            bucket.update(dict.fromkeys(subjects, approval.decision))
        self._save()

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self._store is None or self._session_id is None:
            return
        try:
            text = self._store.get_state(self._session_id, _STATE_KEY)
            if text:
                saved = json.loads(text)
                self._tools.update(saved.get("tools", {}))
                for name, bucket in saved.get("subjects", {}).items():
                    self._subjects.setdefault(name, {}).update(bucket)
        except Exception as exc:  # noqa: BLE001 - a failing store only loses remembered answers
            _log.warning("could not read session approvals: %s", exc)

    def _save(self) -> None:
        if self._store is None or self._session_id is None:
            return
        try:
            text = json.dumps({"tools": self._tools, "subjects": self._subjects})
            self._store.set_state(self._session_id, _STATE_KEY, text)
        except Exception as exc:  # noqa: BLE001 - a failing store only loses remembered answers
            _log.warning("could not save session approvals: %s", exc)


class QueueApprover:
    """An approver that puts the call in the store's approval queue and waits for an answer there.

    Another process (the console, `toolhall`) lists `store.pending_approvals()` and answers with
    `store.answer_approval(call_id, "approve" | "deny", scope=..., reason=...)`; the waiting call
    notices within 50 ms. No answer within `timeout` seconds is a denial.

    Example:
        ```python
        log = SqliteLog(".toolhall/state.db")
        session = Session(toolbox, log=log, approver=QueueApprover(log, timeout=600))
        ```
    """

    def __init__(self, store: Any, *, timeout: float | None = 300.0) -> None:
        self.store = store
        self.timeout = timeout

    async def __call__(self, request: ApprovalRequest) -> Approval:
        """Queue the request (if the session has not already) and wait for its answer."""
        pending = pending_from(request)
        await anyio.to_thread.run_sync(self.store.request_approval, pending)
        answer = await self.store.wait_for_answer(request.call_id, timeout=self.timeout)
        if answer is None or answer.decision is None:
            return Approval("deny", reason=f"no answer within {self.timeout:g} s")
        return Approval(answer.decision, reason=answer.answer_reason, scope=answer.scope)


def pending_from(request: ApprovalRequest) -> PendingApproval:
    """The store entry for an approval request."""
    return PendingApproval(
        call_id=request.call_id,
        tool=request.tool_name,
        requested_at=datetime.now(UTC),
        session_id=request.session_id,
        arguments=request.arguments,
        subjects=request.subjects,
        annotations=dict(request.annotations),
        reason=request.reason,
    )
