"""Model-facing truncation: keep the head and the tail, say what was cut and where the rest is."""

from __future__ import annotations

__all__ = ["truncate"]


def truncate(text: str, max_chars: int | None, call_id: str | None = None) -> tuple[str, bool]:
    """Cut `text` to about `max_chars` characters, keeping its start and end; returns it and whether it was cut.

    Example:
        ```python
        truncate("x" * 100_000, 1000, "call_1")  # (head + "[... 99,1xx characters omitted ...]" + tail, True)
        ```
    """
    if max_chars is None or len(text) <= max_chars:
        return text, False
    where = f"; the full output is in the log as call {call_id}" if call_id else ""
    keep = max(max_chars - 40 - len(where), 0)  # room for the marker, so the result stays within max_chars
    marker = f"\n[... {len(text) - keep:,} characters omitted{where} ...]\n"
    head = keep * 4 // 5  # the start usually says what the output is; the end how it finished
    tail = keep - head
    return text[:head] + marker + (text[-tail:] if tail else ""), True
