"""Exceptions → error codes, most specific first (one table, so every path maps the same way)."""

from __future__ import annotations

import asyncio

import pydantic

from ._codes import ErrorCode
from ._errors import ToolCallError, ToolhallError, WorkspaceError
from ._result import ToolError

__all__ = ["EXCEPTION_CODES", "error_from_exception"]

EXCEPTION_CODES: tuple[tuple[type[BaseException], ErrorCode], ...] = (
    (pydantic.ValidationError, "invalid_input"),
    (WorkspaceError, "denied"),
    (PermissionError, "denied"),
    (TimeoutError, "timeout"),
    (asyncio.CancelledError, "cancelled"),
    (ToolhallError, "execution_error"),
)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def error_from_exception(exc: BaseException) -> ToolError:
    """The `ToolError` for an exception raised while running a tool."""
    if isinstance(exc, ToolCallError):
        return ToolError(code=exc.code, message=exc.message, details=exc.details)
    for kind, code in EXCEPTION_CODES:
        if isinstance(exc, kind):
            if isinstance(exc, WorkspaceError):
                return ToolError(code=code, message=str(exc))
            return ToolError(code=code, message=_describe(exc))
    return ToolError(code="execution_error", message=_describe(exc))
