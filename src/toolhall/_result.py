"""The values that flow through a call: what the model asked for and what it gets back."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from ._codes import ErrorCode

__all__ = ["Audio", "ContentPart", "Image", "Resource", "Text", "ToolCall", "ToolError", "ToolResult", "ok_result"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Text:
    """A text part of a result."""

    text: str
    """The text itself."""

    def to_dict(self) -> dict[str, Any]:
        """The part as JSON-safe data."""
        return {"type": "text", "text": self.text}


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


@dataclass(frozen=True, slots=True, kw_only=True)
class Image:
    """An image a tool returns; passed on to MCP and to providers that accept images."""

    data: bytes | str
    """Raw bytes, or base64 text."""
    mime_type: str = "image/png"
    """The image's MIME type."""

    @property
    def base64(self) -> str:
        """The data as base64 text."""
        return _b64(self.data)

    def to_dict(self) -> dict[str, Any]:
        """The part as JSON-safe data."""
        return {"type": "image", "data": self.base64, "mime_type": self.mime_type}


@dataclass(frozen=True, slots=True, kw_only=True)
class Audio:
    """Audio a tool returns."""

    data: bytes | str
    """Raw bytes, or base64 text."""
    mime_type: str = "audio/wav"
    """The audio's MIME type."""

    @property
    def base64(self) -> str:
        """The data as base64 text."""
        return _b64(self.data)

    def to_dict(self) -> dict[str, Any]:
        """The part as JSON-safe data."""
        return {"type": "audio", "data": self.base64, "mime_type": self.mime_type}


@dataclass(frozen=True, slots=True, kw_only=True)
class Resource:
    """An embedded resource (a file's text or bytes under a URI)."""

    uri: str
    """Where the resource lives."""
    text: str | None = None
    """Its text, for text resources."""
    blob: bytes | str | None = None
    """Its bytes (or base64 text), for binary resources."""
    mime_type: str | None = None
    """Its MIME type, when known."""

    def to_dict(self) -> dict[str, Any]:
        """The part as JSON-safe data."""
        out: dict[str, Any] = {"type": "resource", "uri": self.uri, "mime_type": self.mime_type}
        if self.text is not None:
            out["text"] = self.text
        if self.blob is not None:
            out["blob"] = _b64(self.blob)
        return out


ContentPart = Text | Image | Audio | Resource
"""One part of a result's content."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A tool call as a model asked for it.

    Example:
        ```python
        ToolCall("add", '{"a": 1, "b": 2}', id="call_1")
        ```
    """

    name: str
    """The tool's name (its own, or the name a provider format exported it under)."""
    arguments: str | dict[str, Any] | None = None
    """A JSON object as text, a dict, or None for no arguments."""
    id: str | None = None
    """The provider's call id, echoed back in the result."""

    def __init__(self, name: str, arguments: str | dict[str, Any] | None = None, id: str | None = None) -> None:  # noqa: A002 - DESIGN's field name
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "arguments", arguments)
        object.__setattr__(self, "id", id)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolError:
    """Why a call failed: a code from a closed set, a message for the model, and tool-specific details."""

    code: ErrorCode
    """One of `not_found, invalid_input, denied, approval_required, timeout, cancelled, execution_error`."""
    message: str
    """What went wrong, written for the model and for a person reading the log."""
    details: dict[str, Any] | None = None
    """Tool-specific reasons, such as `{"reason": "no_match"}` or `{"sqlstate": "42P01"}`."""

    def to_dict(self) -> dict[str, Any]:
        """The error as JSON-safe data."""
        return {"code": self.code, "message": self.message, "details": self.details}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The outcome of one call. Never raised: a failure is a result with `error` set."""

    ok: bool
    """True when the tool ran and returned."""
    output: str
    """The text the model sees (possibly truncated by a session)."""
    data: Any = None
    """The structured value the tool returned, JSON-safe; a failed result may still carry some."""
    content: tuple[ContentPart, ...] = ()
    """The result as parts: text, and images, audio or resources the tool returned."""
    error: ToolError | None = None
    """Why the call failed, when it did."""
    duration_ms: float = 0.0
    """Time spent in the call, in milliseconds."""
    truncated: bool = False
    """True when `output` was cut for the model (the full output is in the log)."""
    call_id: str | None = None
    """The call's id."""
    tool_name: str = ""
    """The tool's own name."""
    started_at: datetime | None = None
    """When the call started (UTC)."""
    ended_at: datetime | None = None
    """When the call ended (UTC)."""
    exception: BaseException | None = field(default=None, repr=False, compare=False)
    """The exception behind an error, kept for the log and for debugging; never sent to the model."""

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-safe data."""
        return {
            "ok": self.ok,
            "output": self.output,
            "data": self.data,
            "content": [part.to_dict() for part in self.content],
            "error": self.error.to_dict() if self.error else None,
            "duration_ms": self.duration_ms,
            "truncated": self.truncated,
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
        }


# The success path builds one ToolResult per call. A frozen slots dataclass's __init__ sets each field
# through object.__setattr__ (about 1.5 µs for twelve fields, a fifth of a call's overhead), so the hot
# path fills the slots through their descriptors instead: the same value, built where the fields are
# declared, and checked against the constructor by tests/test_invoke.py.
_SETTERS = tuple(getattr(ToolResult, f.name).__set__ for f in fields(ToolResult))


def ok_result(
    output: str, data: Any, content: tuple[ContentPart, ...], duration_ms: float, call_id: str | None,
    tool_name: str, started_at: datetime, ended_at: datetime,
) -> ToolResult:  # fmt: skip
    """A successful `ToolResult`, equal to `ToolResult(ok=True, ...)` with the other fields at their defaults."""
    result: ToolResult = object.__new__(ToolResult)
    values = (True, output, data, content, None, duration_ms, False, call_id, tool_name, started_at, ended_at, None)
    for setter, value in zip(_SETTERS, values, strict=True):
        setter(result, value)
    return result
