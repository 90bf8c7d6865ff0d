"""A docstring's summary and per-parameter text, in Google, NumPy or Sphinx style."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import docstring_parser

__all__ = ["ParsedDocstring", "parse_docstring"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedDocstring:
    """What a tool definition takes from a docstring."""

    description: str
    """Summary and long description, without the parameter sections."""
    params: dict[str, str]
    """Parameter name → its description."""


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split a docstring into the tool description and its parameter descriptions."""
    if not doc:
        return ParsedDocstring(description="", params={})
    parsed = docstring_parser.parse(inspect.cleandoc(doc))
    parts = [part.strip() for part in (parsed.short_description, parsed.long_description) if part]
    params = {p.arg_name: p.description.strip() for p in parsed.params if p.description}
    return ParsedDocstring(description="\n\n".join(parts), params=params)
