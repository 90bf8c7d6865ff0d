"""`Session`: one agent's run, composing role, validation, policy, approval, logging and invocation.

Each call goes through a fixed pipeline:

1. look the tool up within the session's role (outside it: `not_found`);
2. parse and validate the arguments (`toolhall._invoke.validate`);
3. decide with the policy (deny / ask / allow), consulting remembered session approvals;
4. when asking, write the row as `pending` and the request to the approval queue, then ask the approver;
5. write the row as `running` and wait until it is committed (durable before the handler starts);
6. run the handler with its timeout (`toolhall._invoke.execute`);
7. store the full output in the row, then truncate it for the model.

Refused and invalid calls get a row too, with the reason. A failing store never fails a call.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Self

import anyio
import anyio.to_thread

from ._context import ToolContext
from ._invoke import ValidatedCall, error_result, execute, validate
from ._result import ToolCall, ToolResult
from ._session_record import RecordBook, ordered_call_id, status_of
from ._tool import Tool
from ._toolbox import CallLike, Toolbox, gather_calls, run_sync
from ._truncate import truncate
from .policy import Approval, ApprovalMemory, ApprovalRequest, Approver, Decision, Policy
from .policy._approval import ask_approver, pending_from

__all__ = ["DEFAULT_MAX_OUTPUT_CHARS", "Session"]

DEFAULT_MAX_OUTPUT_CHARS = 50_000
"""How much output the model sees by default (the log keeps the full output)."""

_SUBJECT_ERROR = "\x00subjects could not be computed\x00"


class Session:
    """One agent's run over a toolbox: role gating, policy, approval, a durable log, truncation.

    Example:
        ```python
        session = Session(
            toolbox,
            workspace=".",
            policy=Policy(allow=["read_file"], deny=["run_command(rm *)"]),
            approver=lambda request: request.tool_name != "delete_file",
            log=SqliteLog(".toolhall/state.db"),
            role="reviewer",
        )
        result = await session.call("read_file", {"path": "README.md"})
        ```

    Args:
        toolbox: the tools.
        workspace: a `Workspace` or a folder, given to tools through their context.
        policy: the rules (default: read-only tools run, others ask).
        approver: answers calls policy asks about (none: those calls are `approval_required`).
        log: a `LogStore`; None uses `SqliteLog` at `.toolhall/state.db` in the workspace when there is
            one (and no log without a workspace); False turns logging off.
        role: only tools for this role are visible and callable.
        worker: the worker name (or a `WorkerSpec`, whose name and role are used).
        session_id: the id rows are logged under (default: a new one).
        max_output_chars: how much output the model sees; the log keeps it all.
        dry_run: validate, decide and log, but run only read-only tools.
        default_timeout: seconds for tools that declare no timeout.
        extra: runtime data for tools (`ctx.extra`), such as the project or meeting.
    """

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        workspace: Any = None,
        policy: Policy | None = None,
        approver: Approver | None = None,
        log: Any = None,
        role: str | None = None,
        worker: Any = None,
        session_id: str | None = None,
        max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
        dry_run: bool = False,
        default_timeout: float | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(toolbox, Toolbox):
            raise TypeError(f"Session needs a Toolbox; got {type(toolbox).__name__}")
        if max_output_chars is not None and (isinstance(max_output_chars, bool) or max_output_chars < 1):
            raise ValueError(f"max_output_chars must be a positive integer or None; got {max_output_chars!r}")
        if approver is not None and not callable(approver):
            raise TypeError(f"approver must be a callable (sync or async); got {type(approver).__name__}")
        if worker is not None and not isinstance(worker, str):
            role = role if role is not None else getattr(worker, "role", None)
            worker = getattr(worker, "name", None) or str(worker)
        self.workspace = _coerce_workspace(workspace)
        self.role = role
        self.worker: str | None = worker
        self.session_id = session_id or "sess_" + uuid.uuid4().hex[:20]
        self.policy = policy if policy is not None else Policy()
        self.approver = approver
        self.max_output_chars = max_output_chars
        self.dry_run = dry_run
        self.default_timeout = default_timeout
        self.extra: Mapping[str, Any] = dict(extra or {})
        self.toolbox = toolbox.for_role(role) if role is not None else toolbox
        self._owns_log = False
        self.log = self._open_log(log)
        self._book = RecordBook(self.log, self)
        self.approvals = ApprovalMemory(self.log, self.session_id)

    def _open_log(self, log: Any) -> Any:
        if log is False:
            return None
        if log is not None:
            return log
        if self.workspace is None:
            return None
        from .log import SqliteLog

        self._owns_log = True
        return SqliteLog(self.workspace.root / ".toolhall" / "state.db")

    def __repr__(self) -> str:
        return f"Session(id={self.session_id!r}, role={self.role!r}, tools={len(self.toolbox)}, log={self.log!r})"

    # -- exporting ---------------------------------------------------------------------------------
    def schemas(self, format: str = "openai", *, strict: bool = False) -> list[dict[str, Any]]:  # noqa: A002
        """The schemas of the tools this session's role can call, in a provider's format."""
        return self.toolbox.schemas(format, strict=strict)

    # -- calling -----------------------------------------------------------------------------------
    async def call(
        self,
        name_or_call: str | ToolCall,
        arguments: str | dict[str, Any] | None = None,
        *,
        parent_id: str | None = None,
        limiter: anyio.CapacityLimiter | None = None,
        context: ToolContext | None = None,
    ) -> ToolResult:
        """Run one call through the pipeline; never raises (only the caller's own cancellation does).

        `context` lends the call what the caller knows (a progress reporter, `extra` data, such as the MCP
        server's); the session sets ids, role, workspace and store itself.
        """
        if isinstance(name_or_call, ToolCall):
            name, arguments, call_id = name_or_call.name, name_or_call.arguments, name_or_call.id
        else:
            name, call_id = name_or_call, None
        call_id = call_id or ordered_call_id()
        found = self.toolbox.lookup(name)
        if isinstance(found, ToolResult):
            result = dataclasses.replace(found, call_id=call_id)
            await self._book.refused(str(name), None, call_id, parent_id, arguments, result)
            return result
        validated = validate(found, arguments, call_id)
        if not isinstance(validated, ValidatedCall):
            await self._book.refused(found.name, found, call_id, parent_id, arguments, validated)
            return validated
        return await self._decide_and_run(found, validated, parent_id, limiter, context)

    async def _decide_and_run(
        self,
        tool: Tool,
        validated: ValidatedCall,
        parent_id: str | None,
        limiter: anyio.CapacityLimiter | None,
        lent: ToolContext | None = None,
    ) -> ToolResult:
        kwargs = validated.kwargs
        subjects = _subjects(tool, kwargs)
        decision = self.policy.decide(tool, subjects)
        entry = self._book.start(tool, validated, parent_id, kwargs, subjects)
        try:
            return await self._steps(entry, tool, validated, kwargs, subjects, decision, limiter, lent)
        except anyio.get_cancelled_exc_class():
            # Cancelled at any step (waiting for approval or for the row's commit, or running): the row
            # must not stay pending or running forever.
            await self._book.cancelled(entry, validated)
            raise

    async def _steps(
        self,
        entry: Any,
        tool: Tool,
        validated: ValidatedCall,
        kwargs: dict[str, Any],
        subjects: list[str],
        decision: Decision,
        limiter: anyio.CapacityLimiter | None,
        lent: ToolContext | None,
    ) -> ToolResult:
        if decision.action == "deny":
            return await self._refuse(entry, validated, "denied", decision.reason, decision)
        if self.dry_run and (decision.action == "ask" or not _read_only(tool)):
            return await self._dry_run(entry, validated, decision)
        how = "policy"
        if decision.action == "ask":
            approval, how = await self._approve(entry, tool, validated, kwargs, subjects, decision)
            if approval is None:
                message = f"{tool.name} needs approval and this session has no approver ({decision.reason})"
                return await self._refuse(entry, validated, "approval_required", message, decision)
            if approval.decision == "deny":
                reason = approval.reason or "the approver declined"
                return await self._refuse(
                    entry, validated, "denied", f"{tool.name} was denied: {reason}", decision, how
                )
        return await self._run(entry, tool, validated, limiter, how, lent)

    async def _approve(
        self,
        entry: Any,
        tool: Tool,
        validated: ValidatedCall,
        kwargs: dict[str, Any],
        subjects: list[str],
        decision: Decision,
    ) -> tuple[Approval | None, str]:
        key = tuple(subjects)
        remembered = self.approvals.lookup(tool.name, key)
        if remembered is not None:
            return remembered, "session"
        if self.approver is None:
            return None, "none"
        request = ApprovalRequest(
            tool=tool,
            arguments=kwargs,
            subjects=key,
            call_id=validated.call_id,
            session_id=self.session_id,
            reason=decision.reason,
            annotations=dataclasses.asdict(tool.annotations),
        )
        await self._book.pending(entry, pending_from(request))
        approval = await ask_approver(self.approver, request)
        self._book.answered(validated.call_id, approval)
        self.approvals.remember(tool.name, key, approval)
        return approval, "approver"

    async def _run(
        self,
        entry: Any,
        tool: Tool,
        validated: ValidatedCall,
        limiter: anyio.CapacityLimiter | None,
        how: str,
        lent: ToolContext | None = None,
    ) -> ToolResult:
        await self._book.running(entry, how)
        context = self._context(validated, lent) if tool.context_param is not None else None
        result = await execute(validated, context, timeout=tool.timeout or self.default_timeout, limiter=limiter)
        await self._book.finish(entry, result, status=status_of(result))
        return self._for_model(result)

    def _for_model(self, result: ToolResult) -> ToolResult:
        output, cut = truncate(result.output, self.max_output_chars, result.call_id)
        if not cut:
            return result
        return dataclasses.replace(result, output=output, truncated=True)

    async def _refuse(
        self,
        entry: Any,
        validated: ValidatedCall,
        code: Any,
        message: str,
        decision: Decision,
        how: str = "policy",
    ) -> ToolResult:
        result = error_result(
            code, message, tool_name=validated.tool.name, call_id=validated.call_id, started=validated.started,
            started_at=validated.started_at, details={"rule": decision.rule} if decision.rule else None,
        )  # fmt: skip
        await self._book.finish(entry, result, status="denied", approval=how)
        return result

    async def _dry_run(self, entry: Any, validated: ValidatedCall, decision: Decision) -> ToolResult:
        name = validated.tool.name
        message = f"dry run: {name} was not run (policy would {decision.action}: {decision.reason})"
        data = {"dry_run": True, "decision": decision.action, "reason": decision.reason, "rule": decision.rule}
        result = dataclasses.replace(
            error_result("denied", message, tool_name=name, call_id=validated.call_id, started=validated.started,
                         started_at=validated.started_at),
            ok=True, error=None, data=data,
        )  # fmt: skip
        await self._book.finish(entry, result, status="ok", approval="dry_run")
        return result

    def _context(self, validated: ValidatedCall, lent: ToolContext | None = None) -> ToolContext:
        context = ToolContext(
            call_id=validated.call_id, session_id=self.session_id, role=self.role, worker=self.worker,
            workspace=self.workspace, extra=self.extra, store=self.log, caller=self._nested,
        )  # fmt: skip
        if lent is None:
            return context
        return context.child(progress=lent.progress, extra={**self.extra, **lent.extra})

    async def _nested(self, name: str | ToolCall, arguments: Any = None, *, parent_id: str | None = None) -> ToolResult:
        return await self.call(name, arguments, parent_id=parent_id)

    def call_sync(self, name_or_call: str | ToolCall, arguments: str | dict[str, Any] | None = None) -> ToolResult:
        """`call` from synchronous code."""
        result: ToolResult = run_sync(lambda: self.call(name_or_call, arguments))
        return result

    async def call_many(self, calls: Sequence[CallLike], concurrency: int = 8) -> list[ToolResult]:
        """Run calls concurrently (at most `concurrency` at once), results in the calls' order."""
        return await gather_calls(self.call, calls, concurrency)

    # -- lifetime ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Commit what the log has queued; close the log if the session opened it."""
        if self.log is None:
            return
        if self._owns_log:
            self.log.close()
        else:
            flush = getattr(self.log, "flush", None)
            if flush is not None:
                flush()

    async def aclose(self) -> None:
        """`close` without blocking the event loop."""
        await anyio.to_thread.run_sync(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _coerce_workspace(workspace: Any) -> Any:
    if workspace is None:
        return None
    from ._workspace import Workspace

    return Workspace.coerce(workspace)


def _subjects(tool: Tool, kwargs: dict[str, Any]) -> list[str]:
    try:
        return tool.subjects(kwargs)
    except Exception:  # noqa: BLE001 - a subject function that fails must not let the call through unchecked
        return [_SUBJECT_ERROR]


def _read_only(tool: Tool) -> bool:
    from .policy._policy import UNTRUSTED_TAG

    return bool(tool.annotations.read_only) and UNTRUSTED_TAG not in tool.tags
