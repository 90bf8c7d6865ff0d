"""The closed set of error codes a `ToolResult` can carry."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["ERROR_CODES", "ErrorCode"]

ErrorCode = Literal[
    "not_found",
    "invalid_input",
    "denied",
    "approval_required",
    "timeout",
    "cancelled",
    "execution_error",
]
"""Why a call failed: a closed set, so agent runtimes can switch on it."""

ERROR_CODES: frozenset[str] = frozenset(get_args(ErrorCode))
