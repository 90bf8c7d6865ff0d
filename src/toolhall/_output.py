"""A handler's return value → the text the model sees, JSON-safe data, and content parts."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import to_json, to_jsonable_python

from ._result import Audio, ContentPart, Image, Resource, Text

__all__ = ["render"]

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
