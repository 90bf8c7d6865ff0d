"""Tool names each format accepts, and a legal, unique, stable name for every tool that has no legal one.

A legal name is kept as it is. Other names have each illegal character replaced by `_` (`math.factorial` →
`math_factorial`, `chain:status` → `chain_status`), a `_` put in front when the format wants a leading letter
or underscore, and are cut to the format's length. When two tools would end up with the same exported name
(or a renamed tool would take a legal tool's name), every renamed tool in that clash gets a suffix made
from a hash of its own name, so the result does not depend on registration order.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .._errors import ExportError

__all__ = ["NAME_RULES", "NameRule", "exported_names", "original_names"]


@dataclass(frozen=True, slots=True)
class NameRule:
    """What a format accepts as a tool name."""

    pattern: re.Pattern[str]
    """The full-match pattern of a legal name."""
    illegal: re.Pattern[str]
    """One character that must be replaced."""
    max_length: int
    """The longest legal name."""
    leading: re.Pattern[str] | None = None
    """What the first character must match, when the format constrains it."""


_OPENAI = NameRule(re.compile(r"[A-Za-z0-9_-]{1,64}"), re.compile(r"[^A-Za-z0-9_-]"), 64)
NAME_RULES: Mapping[str, NameRule | None] = {
    "openai": _OPENAI,
    "openai-responses": _OPENAI,
    "anthropic": _OPENAI,
    # Gemini also allows `.` and `:`, but stays within OpenAI's set (and 64 characters, the Vertex limit)
    # so one name works everywhere; and it must start with a letter or an underscore.
    "gemini": NameRule(
        re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}"), re.compile(r"[^A-Za-z0-9_-]"), 64, re.compile(r"[A-Za-z_]")
    ),
    "mcp": NameRule(re.compile(r"[A-Za-z0-9._-]{1,128}"), re.compile(r"[^A-Za-z0-9._-]"), 128),
    "json": None,
}
"""Per format: the rule names must follow (None: any name is kept)."""


def _rule(format: str) -> NameRule | None:  # noqa: A002 - the public API's word
    try:
        return NAME_RULES[format]
    except KeyError:
        raise ExportError(f"unknown format {format!r}; known formats: {', '.join(NAME_RULES)}") from None


def _suffix(name: str) -> str:
    return "_" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]


def _candidate(name: str, rule: NameRule) -> str:
    text = rule.illegal.sub("_", name) or "_"
    if rule.leading is not None and not rule.leading.match(text):
        text = "_" + text
    if len(text) > rule.max_length:  # a cut name may clash with another cut one: give it its hash now
        text = text[: rule.max_length - 9] + _suffix(name)
    return text


def exported_names(names: Iterable[str], format: str) -> dict[str, str]:  # noqa: A002 - the public API's word
    """Map each tool name to the name it is exported under in `format` (legal, unique, stable).

    Args:
        names: The tools' own names, unique.
        format: One of the formats in `NAME_RULES`.

    Returns:
        `{own_name: exported_name}` in the order given.

    Raises:
        ExportError: A name is given twice, or the format is unknown.
    """
    rule = _rule(format)
    own = list(names)
    if len(set(own)) != len(own):
        twice = sorted({n for n in own if own.count(n) > 1})
        raise ExportError(f"tool names must be unique to export them; given more than once: {', '.join(twice)}")
    if rule is None:
        return {n: n for n in own}
    legal = {n for n in own if rule.pattern.fullmatch(n)}
    wanted = {n: _candidate(n, rule) for n in own if n not in legal}
    counts: dict[str, int] = {}
    for cand in wanted.values():
        counts[cand] = counts.get(cand, 0) + 1
    out: dict[str, str] = {}
    for name in own:
        if name in legal:
            out[name] = name
            continue
        cand = wanted[name]
        if counts[cand] > 1 or cand in legal:
            cand = cand[: rule.max_length - 9] + _suffix(name)
        out[name] = cand
    if len(set(out.values())) != len(out):  # only a hash collision could get here
        raise ExportError(f"cannot give the tools unique {format} names: {sorted(own)}")
    return out


def original_names(names: Iterable[str], format: str) -> dict[str, str]:  # noqa: A002 - the public API's word
    """The reverse of `exported_names`: `{exported_name: own_name}`."""
    return {exported: own for own, exported in exported_names(names, format).items()}
