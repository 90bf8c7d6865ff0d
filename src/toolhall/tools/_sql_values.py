"""Turn driver values into JSON-safe ones, the same way for every backend.

Rules (documented for the model in the tool description):
- dates, times and datetimes → ISO 8601 text; intervals (timedelta) → total seconds as a number
- Decimal → text when it would lose precision as a float, else a number; NaN/Infinity → text
- bytes → `{"base64": "..."}` (the first 64 KiB; longer values are cut and marked with their full size)
- UUID, IP addresses, ranges and anything else unknown → its text
- lists/tuples and dicts (PostgreSQL arrays, JSON) → converted item by item
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

__all__ = ["MAX_BYTES", "json_safe", "row_to_json"]

MAX_BYTES = 64 * 1024
"""Longest bytes value returned whole; a row is for reading, not for moving blobs."""

_JsonScalar = str | int | float | bool | None


def _decimal(value: Decimal) -> _JsonScalar:
    if not value.is_finite():
        return str(value)
    as_float = float(value)
    # Keep a number only when it survives the round trip; money and big numerics stay exact as text.
    return as_float if Decimal(repr(as_float)) == value else str(value)


def _float(value: float) -> _JsonScalar:
    return value if math.isfinite(value) else str(value)


def _bytes(value: bytes | bytearray | memoryview) -> dict[str, Any]:
    raw = bytes(value)
    out: dict[str, Any] = {"base64": base64.b64encode(raw[:MAX_BYTES]).decode("ascii")}
    if len(raw) > MAX_BYTES:
        out["truncated"] = True
        out["size"] = len(raw)
    return out


def _timedelta(value: dt.timedelta) -> float:
    return value.total_seconds()


_CONVERTERS: dict[type, Callable[[Any], Any]] = {
    Decimal: _decimal,
    float: _float,
    bytes: _bytes,
    bytearray: _bytes,
    memoryview: _bytes,
    dt.datetime: dt.datetime.isoformat,
    dt.date: dt.date.isoformat,
    dt.time: dt.time.isoformat,
    dt.timedelta: _timedelta,
    uuid.UUID: str,
}


def json_safe(value: Any) -> Any:
    """One value as JSON-safe data (see the module docstring for the rules)."""
    if value is None or type(value) in (str, int, bool):
        return value
    converter = _CONVERTERS.get(type(value))
    if converter is not None:
        return converter(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray):
        return [json_safe(v) for v in value]
    for cls, convert in _CONVERTERS.items():
        if isinstance(value, cls):  # subclasses: pendulum-like datetimes, IntEnum, ...
            return convert(value)
    if isinstance(value, int | str):
        return int(value) if isinstance(value, int) else str(value)
    return str(value)


def row_to_json(row: Sequence[Any]) -> list[Any]:
    """A driver row as a JSON-safe list, fast for the common all-scalar row."""
    return [v if v is None or type(v) in (str, int, bool) else json_safe(v) for v in row]
