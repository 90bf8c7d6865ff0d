"""A handler's return value → the text the model sees, JSON-safe data, and content parts."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic_core import to_json, to_jsonable_python

from ._result import Audio, ContentPart, Image, Resource, Text, ToolResult

__all__ = ["ok_result", "render"]

_PARTS = (Text, Image, Audio, Resource)
_SMALL_INT = 10**300


def _placeholder(part: ContentPart) -> str:
    if isinstance(part, Text):
        return part.text
    if isinstance(part, Resource):
        return part.text if part.text is not None else f"[resource {part.uri}]"
    size = len(part.data) if isinstance(part.data, bytes) else len(part.data) * 3 // 4
    return f"[{type(part).__name__.lower()} {part.mime_type}, {size} bytes]"


def _fallback(value: Any) -> Any:
    return repr(value)


def render(value: Any) -> tuple[str, Any, tuple[ContentPart, ...]]:
    """Turn what a handler returned into (output text, JSON-safe data, content parts).

    Strings pass through; content parts (alone or in a list) become the content; anything else is
    serialised as JSON (pydantic-aware), with `repr` for what JSON cannot hold, so rendering never fails.
    """
    if isinstance(value, str):
        return value, value, (Text(text=value),)
    if value is None:
        return "", None, ()
    kind = type(value)
    # Fast paths for the commonest structured returns (pydantic's serializer costs ~1 µs a call): their JSON
    # text is known. Past 4,300 digits str(int) raises, so huge ints take the general path.
    if kind is bool:
        text = "true" if value else "false"
        return text, value, (Text(text=text),)
    if kind is int and -_SMALL_INT < value < _SMALL_INT:
        text = str(value)
        return text, value, (Text(text=text),)
    if isinstance(value, _PARTS):
        return _placeholder(value), None, (value,)
    if isinstance(value, list | tuple) and value and any(isinstance(item, _PARTS) for item in value):
        parts = tuple(item if isinstance(item, _PARTS) else Text(text=_as_text(item)) for item in value)
        return "\n".join(_placeholder(part) for part in parts), None, parts
    try:
        data = to_jsonable_python(value, fallback=_fallback, bytes_mode="base64", serialize_unknown=True)
        output = to_json(data).decode()
    except (ValueError, TypeError, RecursionError):  # circular references and the like
        text = _safe_repr(value)
        return text, text, (Text(text=text),)
    return output, data, (Text(text=output),)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(to_jsonable_python(value, fallback=_fallback, bytes_mode="base64"))
    except (ValueError, TypeError, RecursionError):
        return _safe_repr(value)


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 - a __repr__ that raises still must not fail the call
        return f"<unrepresentable {type(value).__name__}>"


# -- the success result -----------------------------------------------------------------------
# ToolResult is a frozen slots dataclass: its __init__ sets each of its twelve fields through
# object.__setattr__(self, "name", value), about 1.5 µs, a fifth of a call's own overhead. The success
# path calls the slots' setters directly instead (what that __init__ does, minus the name lookups), but
# only while ToolResult still has exactly these fields, defaults and no __post_init__; else the class.
_RESULT_FIELDS = (
    "ok", "output", "data", "content", "error", "duration_ms",
    "truncated", "call_id", "tool_name", "started_at", "ended_at", "exception",
)  # fmt: skip
_LEFT_AT_DEFAULT = {"error": None, "truncated": False, "exception": None}


def _slot_setters() -> list[Callable[[Any, Any], None]] | None:
    fields = dataclasses.fields(ToolResult)
    if hasattr(ToolResult, "__post_init__") or tuple(f.name for f in fields) != _RESULT_FIELDS:
        return None
    if any(f.name in _LEFT_AT_DEFAULT and f.default != _LEFT_AT_DEFAULT[f.name] for f in fields):
        return None
    slots = [vars(ToolResult).get(name) for name in _RESULT_FIELDS]
    if not all(type(slot).__name__ == "member_descriptor" for slot in slots):
        return None
    return [slot.__set__ for slot in slots]  # type: ignore[union-attr]


def _ok_result_slots(
    output: str, data: Any, content: Any, duration_ms: float, call_id: str, tool_name: str,
    started_at: datetime, ended_at: datetime,
) -> ToolResult:  # fmt: skip
    result: ToolResult = _new(ToolResult)
    _ok(result, True)
    _output(result, output)
    _data(result, data)
    _content(result, content)
    _error(result, None)
    _duration(result, duration_ms)
    _truncated(result, False)
    _call_id(result, call_id)
    _tool_name(result, tool_name)
    _started(result, started_at)
    _ended(result, ended_at)
    _exception(result, None)
    return result


def _ok_result_init(
    output: str, data: Any, content: Any, duration_ms: float, call_id: str, tool_name: str,
    started_at: datetime, ended_at: datetime,
) -> ToolResult:  # fmt: skip
    """A successful result, through ToolResult's own constructor."""
    return ToolResult(
        ok=True, output=output, data=data, content=content, duration_ms=duration_ms, call_id=call_id,
        tool_name=tool_name, started_at=started_at, ended_at=ended_at,
    )  # fmt: skip


_new = object.__new__
_setters = _slot_setters()
ok_result = _ok_result_init
"""Build a successful ToolResult from (output, data, content, duration_ms, call_id, tool_name, started_at, ended_at)."""
if _setters is not None:
    _ok, _output, _data, _content, _error, _duration, _truncated, _call_id = _setters[:8]
    _tool_name, _started, _ended, _exception = _setters[8:]
    _probe = datetime.now(UTC)
    _args = ("3", 3, (), 1.0, "call_x", "t", _probe, _probe)
    if _ok_result_slots(*_args) == _ok_result_init(*_args):  # the same value, or keep the plain constructor
        ok_result = _ok_result_slots
    del _probe, _args
