"""Validate, then execute: the never-raising heart of every call.

`validate()` turns raw arguments into a `ValidatedCall` or an error result; `execute()` runs a validated
call with its timeout and builds the result. A `Session` puts logging, policy and approval between the two.
Nothing raises out of either, except the caller's own cancellation, which propagates after the tool is
cancelled (so task groups and outer timeouts keep working).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread
import pydantic

from ._codes import ErrorCode
from ._context import CancelSignal, ToolContext
from ._errormap import error_from_exception
from ._errors import ArgumentsError
from ._output import render
from ._result import ToolError, ToolResult, ok_result
from ._tool import Tool

__all__ = [
    "MAX_STRAY_THREADS",
    "ValidatedCall",
    "error_result",
    "execute",
    "new_call_id",
    "stray_threads",
    "validate",
]

MAX_STRAY_THREADS = 64
"""Sync tools still running after their call timed out; past this, new sync calls are refused."""


_ID_BATCH = 256
_ID_POOL: list[str] = []
# A forked child must not hand out the ids its parent still holds.
os.register_at_fork(after_in_child=_ID_POOL.clear)


def new_call_id() -> str:
    """A fresh call id: 96 random bits, as `call_` + 24 hex digits."""
    try:
        return _ID_POOL.pop()  # atomic: two threads never get the same id
    except IndexError:
        # One getrandom() for 256 ids: the syscall per id was a tenth of a call's overhead.
        raw = os.urandom(12 * _ID_BATCH).hex()
        fresh = ["call_" + raw[i : i + 24] for i in range(0, len(raw), 24)]
        _ID_POOL.extend(fresh[1:])
        return fresh[0]


@dataclass(slots=True, kw_only=True)
class ValidatedCall:
    """A call whose arguments passed validation, ready to run."""

    tool: Tool
    call_id: str
    arguments: Any
    """Keyword arguments (a dict), or the validated model for `Tool.from_model` tools."""
    started: float = field(default_factory=time.perf_counter)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def kwargs(self) -> dict[str, Any]:
        """The arguments as a dict (a model's fields for model tools), for logs and policy."""
        args = self.arguments
        if isinstance(args, pydantic.BaseModel):
            return args.model_dump(mode="json")
        return args  # type: ignore[no-any-return]


def error_result(
    code: ErrorCode,
    message: str,
    *,
    tool_name: str,
    call_id: str | None,
    started: float | None = None,
    started_at: datetime | None = None,
    details: dict[str, Any] | None = None,
    data: Any = None,
    exception: BaseException | None = None,
) -> ToolResult:
    """A failed result, timed from `started` (now when not given)."""
    now = time.perf_counter()
    ended_at = datetime.now(UTC)
    return ToolResult(
        ok=False,
        output=message,
        data=data,
        error=ToolError(code=code, message=message, details=details),
        duration_ms=(now - started) * 1000 if started is not None else 0.0,
        call_id=call_id,
        tool_name=tool_name,
        started_at=started_at or ended_at,
        ended_at=ended_at,
        exception=exception,
    )


def _validation_message(tool: Tool, exc: pydantic.ValidationError) -> tuple[str, dict[str, Any]]:
    problems = []
    errors = []
    for err in exc.errors(include_url=False, include_context=False):
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        got = err.get("input")
        shown = "" if err["type"] == "missing" else f" (got {json.dumps(got, default=repr)[:80]})"
        problems.append(f"{where}: {err['msg']}{shown}")
        errors.append({"loc": list(err["loc"]), "msg": err["msg"], "type": err["type"]})
    return f"invalid arguments for {tool.name}: " + "; ".join(problems), {"errors": errors}


def validate(tool: Tool, arguments: Any, call_id: str | None = None) -> ValidatedCall | ToolResult:
    """Parse and validate raw arguments (JSON text, a dict, or None) for `tool`."""
    call_id = call_id or new_call_id()
    started = time.perf_counter()
    started_at = datetime.now(UTC)
    try:
        if type(arguments) is str and arguments[:1] == "{":  # the hot path: a JSON object's text
            value = (tool._lazy.validate_json or tool.validators()[0])(arguments)
        elif isinstance(arguments, str):
            validate_json, validate_python = tool.validators()
            value = validate_python({}) if not arguments.strip() else validate_json(arguments)
        elif arguments is None:
            value = tool.validators()[1]({})
        elif isinstance(arguments, dict):
            value = tool.validators()[1](arguments)
        else:
            return error_result(
                "invalid_input",
                f"arguments for {tool.name} must be a JSON object (as text or a dict), got {type(arguments).__name__}",
                tool_name=tool.name,
                call_id=call_id,
                started=started,
                started_at=started_at,
            )
    except pydantic.ValidationError as exc:
        message, details = _validation_message(tool, exc)
        return error_result(
            "invalid_input",
            message,
            tool_name=tool.name,
            call_id=call_id,
            started=started,
            started_at=started_at,
            details=details,
            exception=exc,
        )
    except json.JSONDecodeError as exc:
        return error_result(
            "invalid_input",
            f"arguments for {tool.name} are not valid JSON: {exc}",
            tool_name=tool.name,
            call_id=call_id,
            started=started,
            started_at=started_at,
            exception=exc,
        )
    except ValueError as exc:  # from_schema validators report schema violations as ValueError subclasses
        return error_result(
            "invalid_input",
            f"invalid arguments for {tool.name}: {exc}",
            tool_name=tool.name,
            call_id=call_id,
            started=started,
            started_at=started_at,
            details={"errors": exc.errors} if isinstance(exc, ArgumentsError) else None,
            exception=exc,
        )
    except Exception as exc:  # noqa: BLE001 - a broken validator must not raise out of a call
        return error_result(
            "execution_error",
            f"validating arguments for {tool.name} failed: {exc!r}",
            tool_name=tool.name,
            call_id=call_id,
            started=started,
            started_at=started_at,
            exception=exc,
        )
    if tool.kind != "model" and not isinstance(value, dict):
        return error_result(
            "invalid_input",
            f"arguments for {tool.name} must be a JSON object",
            tool_name=tool.name,
            call_id=call_id,
            started=started,
            started_at=started_at,
        )
    return ValidatedCall(tool=tool, call_id=call_id, arguments=value, started=started, started_at=started_at)


class _StrayThreads:
    """Counts sync tool threads that outlived their call, so a tool that ignores cancellation is bounded."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def add(self, delta: int) -> None:
        with self._lock:
            self.count += delta


_STRAYS = _StrayThreads()


def stray_threads() -> int:
    """How many sync tool threads are still running after their calls timed out or were cancelled."""
    return _STRAYS.count


def _run_tracked(fn: Callable[[], Any], state: list[bool]) -> Any:
    try:
        return fn()
    finally:
        with _STRAYS._lock:
            state[0] = True  # finished
            if state[1]:  # abandoned earlier
                _STRAYS.count -= 1


async def _run_in_thread(fn: Callable[[], Any], limiter: anyio.CapacityLimiter | None) -> Any:
    state = [False, False]  # [finished, abandoned]
    try:
        return await anyio.to_thread.run_sync(
            functools.partial(_run_tracked, fn, state), abandon_on_cancel=True, limiter=limiter
        )
    except BaseException:
        with _STRAYS._lock:
            if not state[0]:
                state[1] = True
                _STRAYS.count += 1
        raise


def _prepare(validated: ValidatedCall, context: ToolContext | None) -> tuple[Callable[..., Any], CancelSignal | None]:
    tool = validated.tool
    args = validated.arguments
    if tool.kind == "model":
        return functools.partial(tool.handler, args), None
    if tool.context_param is None:
        return functools.partial(tool.handler, **args), None
    signal = CancelSignal()
    if context is None:
        ctx = ToolContext(call_id=validated.call_id, cancel=signal)
    else:
        ctx = context.child(call_id=validated.call_id, cancel=signal)
    return functools.partial(tool.handler, **args, **{tool.context_param: ctx}), signal


async def _run(
    tool: Tool, bound: Callable[..., Any], timeout: float | None, limiter: anyio.CapacityLimiter | None
) -> Any:
    if tool.is_async:
        if timeout is None:
            return await bound()
        async with asyncio.timeout(timeout):
            return await bound()
    if tool.inline:
        value = bound()
        return await value if inspect.isawaitable(value) else value
    if _STRAYS.count >= MAX_STRAY_THREADS:
        raise RuntimeError(
            f"{_STRAYS.count} sync tool threads are still running after their calls ended "
            "(tools ignoring ctx.cancel); refusing to start another"
        )
    if timeout is None:
        value = await _run_in_thread(bound, limiter)
        return await value if inspect.isawaitable(value) else value
    async with asyncio.timeout(timeout):
        value = await _run_in_thread(bound, limiter)
        return await value if inspect.isawaitable(value) else value


async def execute(
    validated: ValidatedCall,
    context: ToolContext | None = None,
    *,
    timeout: float | None = None,
    limiter: anyio.CapacityLimiter | None = None,
) -> ToolResult:
    """Run a validated call with its timeout; every failure becomes an error result.

    `timeout` defaults to the tool's own. If the task awaiting this is cancelled, the tool is cancelled
    (and a sync tool's `ctx.cancel` set) and `CancelledError` propagates.
    """
    tool = validated.tool
    if timeout is None:
        timeout = tool.timeout
    signal: CancelSignal | None = None
    try:
        if tool.is_async and tool.context_param is None and tool.kind != "model":
            # The hot path, inlined: no partial, no context, one await (about 1 µs less than the general path).
            if timeout is None:
                value = await tool.handler(**validated.arguments)
            else:
                async with asyncio.timeout(timeout):
                    value = await tool.handler(**validated.arguments)
        else:
            bound, signal = _prepare(validated, context)
            value = await _run(tool, bound, timeout, limiter)
    except asyncio.CancelledError as exc:
        if signal is not None:
            signal.set()
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        return _failure(validated, "cancelled", f"{tool.name} was cancelled", exc)
    except TimeoutError as exc:
        if signal is not None:
            signal.set()
        message = f"{tool.name} timed out after {timeout:g} s" if timeout is not None else f"{tool.name} timed out"
        return _failure(validated, "timeout", message, exc)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - never raise: SystemExit from a tool is a failed call too
        error = error_from_exception(exc)
        data = getattr(exc, "data", None)
        return _failure(validated, error.code, error.message, exc, details=error.details, data=data)
    return _success(validated, value)


def _failure(
    validated: ValidatedCall,
    code: ErrorCode,
    message: str,
    exc: BaseException,
    *,
    details: dict[str, Any] | None = None,
    data: Any = None,
) -> ToolResult:
    return error_result(
        code,
        message,
        tool_name=validated.tool.name,
        call_id=validated.call_id,
        started=validated.started,
        started_at=validated.started_at,
        details=details,
        data=data,
        exception=exc,
    )


def _success(validated: ValidatedCall, value: Any) -> ToolResult:
    try:
        output, data, content = render(value)
    except Exception as exc:  # noqa: BLE001 - render is defensive already; this is the last guard
        return _failure(validated, "execution_error", f"{validated.tool.name} returned an unrenderable value", exc)
    return ok_result(
        output,
        data,
        content,
        (time.perf_counter() - validated.started) * 1000,
        validated.call_id,
        validated.tool.name,
        validated.started_at,
        datetime.now(UTC),
    )
