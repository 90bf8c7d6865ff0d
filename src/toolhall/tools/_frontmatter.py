"""YAML frontmatter that survives edits: split, parse, and change fields without touching the rest.

Round-trip dumping the whole block through ruamel.yaml still re-indents sequences and respaces
comments, so an update re-emits only the top-level entries that changed and splices them into the
original text; every other byte stays as it was.
"""

from __future__ import annotations

import datetime as dt
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

from .._errors import ToolCallError

__all__ = ["Document", "apply_changes", "join", "parse", "split", "to_plain"]

_OPEN = re.compile(r"\A(\ufeff?---[ \t]*\r?\n)")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
_TOP_COMMENT_OR_BLANK = re.compile(r"^(?:#.*|[ \t]*)\r?\n?$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """A Markdown file cut into its frontmatter (kept verbatim) and its body."""

    head: str
    """The opening delimiter line, or "" when the file has no frontmatter."""
    yaml: str
    """The YAML between the delimiters, verbatim."""
    tail: str
    """The closing delimiter line, verbatim."""
    body: str
    """Everything after the closing delimiter."""

    @property
    def has_frontmatter(self) -> bool:
        """Whether the file opens with a frontmatter block."""
        return bool(self.head)

    @property
    def frontmatter(self) -> str:
        """The whole frontmatter block, delimiters included, byte for byte."""
        return self.head + self.yaml + self.tail


def _malformed(where: str, line: int, problem: str) -> ToolCallError:
    return ToolCallError(
        f"malformed frontmatter in {where} at line {line}: {problem}",
        code="execution_error",
        details={"reason": "malformed_frontmatter", "line": line, "path": where},
    )


def split(text: str, where: str = "the file") -> Document:
    """Cut `text` into frontmatter and body; a file not opening with `---` has no frontmatter.

    Raises:
        ToolCallError: the block is opened but never closed (names the opening line).
    """
    opened = _OPEN.match(text)
    if opened is None:
        return Document(head="", yaml="", tail="", body=text)
    start = opened.end()
    closed = _CLOSE.search(text, start)
    if closed is None:
        raise _malformed(where, 1, "the block opened by '---' is never closed by a '---' line")
    return Document(head=opened.group(1), yaml=text[start : closed.start()], tail=closed.group(0),
                    body=text[closed.end():])


def join(doc: Document) -> str:
    """The file text for `doc`."""
    return doc.frontmatter + doc.body


def _yaml() -> YAML:
    # One instance per use: ruamel's YAML objects are not safe to share across threads.
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096  # never fold a long title onto two lines
    return y


def parse(doc: Document, where: str = "the file") -> CommentedMap:
    """The frontmatter as a round-trip mapping (empty when there is none).

    Raises:
        ToolCallError: the YAML does not parse, or is not a mapping (names the file line).
    """
    if not doc.has_frontmatter or not doc.yaml.strip():
        return CommentedMap()
    try:
        data = _yaml().load(doc.yaml)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if mark is not None and exc.context_mark is not None and mark.line >= doc.yaml.count("\n"):
            mark = exc.context_mark  # "unexpected end": the line that opened the construct says more
        line = (mark.line + 2) if mark is not None else 2  # +1 for the '---' line, +1 for 1-based
        problem = str(exc.problem or exc.context or "invalid YAML")
        opened = exc.context_mark.line + 2 if exc.context_mark is not None else line
        if opened != line:
            problem += f" ({exc.context or 'in a construct'}, from line {opened})"
        raise _malformed(where, line, problem) from None
    except YAMLError as exc:
        raise _malformed(where, 2, str(exc).splitlines()[0] if str(exc) else "invalid YAML") from None
    if data is None:
        return CommentedMap()
    if not isinstance(data, CommentedMap):
        raise _malformed(where, 2, f"frontmatter must be a mapping of fields, found {type(data).__name__}")
    return data


def to_plain(value: Any) -> Any:
    """A JSON-safe copy of a parsed YAML value (dates as ISO strings, tags dropped)."""
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_plain(v) for v in value]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if value is None:
        return None
    if isinstance(value, str):
        return str(value)
    inner = getattr(value, "value", None)  # a TaggedScalar keeps its text in .value
    return str(inner) if inner is not None else str(value)


def _styled(old: Any, new: Any) -> Any:
    """`new` dressed in `old`'s style: same quotes for strings, same flow style, dates stay dates."""
    if isinstance(new, str):
        if isinstance(old, DoubleQuotedScalarString):
            return DoubleQuotedScalarString(new)
        if isinstance(old, SingleQuotedScalarString):
            return SingleQuotedScalarString(new)
        if isinstance(old, dt.date) and not isinstance(old, dt.datetime):
            try:
                return dt.date.fromisoformat(new)
            except ValueError:
                return new
        return new
    if isinstance(new, list):
        seq = CommentedSeq(_styled(None, v) for v in new)
        if isinstance(old, CommentedSeq) and old.fa.flow_style():
            seq.fa.set_flow_style()
        return seq
    if isinstance(new, Mapping):
        out = CommentedMap((k, _styled(None, v)) for k, v in new.items())
        if isinstance(old, CommentedMap) and old.fa.flow_style():
            out.fa.set_flow_style()
        return out
    return new


def _merge(target: CommentedMap, key: str, change: Any) -> None:
    """JSON Merge Patch (RFC 7396) on one key: null deletes, mappings merge, anything else replaces."""
    if change is None:
        target.pop(key, None)
        return
    old = target.get(key)
    if isinstance(change, Mapping) and isinstance(old, CommentedMap):
        for sub, value in change.items():
            _merge(old, str(sub), value)
        return
    target[key] = _styled(old, change)


def _entry_spans(data: CommentedMap, lines: list[str]) -> dict[str, tuple[int, int]]:
    """Line span [start, end) of each top-level entry, trailing blank and comment lines excluded."""
    starts = [(data.lc.key(k)[0], str(k)) for k in data]
    spans: dict[str, tuple[int, int]] = {}
    for i, (start, key) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(lines)
        while end > start + 1 and _TOP_COMMENT_OR_BLANK.match(lines[end - 1]):
            end -= 1
        spans[key] = (start, end)
    return spans


def _emit(key: str, value: Any, zero_indent_seqs: bool) -> str:
    y = _yaml()
    if zero_indent_seqs:
        y.indent(mapping=2, sequence=2, offset=0)
    else:
        y.indent(mapping=2, sequence=4, offset=2)
    out = io.StringIO()
    fresh = CommentedMap()
    fresh[key] = value
    y.dump(fresh, out)
    return out.getvalue()


def _eol_comment(data: CommentedMap, key: str, line: str) -> str:
    """The end-of-line comment on a single-line entry, with the spacing before it."""
    token = data.ca.items.get(key, [None, None, None, None])[2]
    col = getattr(token, "column", None)
    if not isinstance(col, int) or col >= len(line) or line[col] != "#":
        return ""
    start = col
    while start > 0 and line[start - 1] in " \t":
        start -= 1
    return line[start:].rstrip("\r\n")


def apply_changes(doc: Document, changes: Mapping[str, Any], where: str = "the file") -> Document:
    """`doc` with top-level fields changed (merge-patch semantics), all other bytes untouched.

    Raises:
        ToolCallError: the existing frontmatter does not parse.
    """
    data = parse(doc, where)
    lines = doc.yaml.splitlines(keepends=True)
    if data and len({data.lc.key(k)[0] for k in data}) < len(data):
        # A flow mapping (`{a: 1, b: 2}`) has no lines to splice: re-emit the block whole.
        return _rewrite_whole(doc, data, changes, where)
    spans = _entry_spans(data, lines)
    for key, change in changes.items():
        _merge(data, str(key), change)
    zero_indent = any(line.startswith("- ") for line in lines)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    replaced: dict[int, tuple[int, str]] = {}
    appended: list[str] = []
    for key in (str(k) for k in changes):
        text = "" if key not in data else _emit(key, data[key], zero_indent)
        if key in spans:
            start, end = spans[key]
            if text.count("\n") == 1 and end - start == 1:
                text = text.rstrip("\n") + _eol_comment(data, key, lines[start]) + "\n"
            replaced[start] = (end, text.replace("\n", newline))
        elif text:
            appended.append(text.replace("\n", newline))
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i in replaced:
            end, text = replaced[i]
            out.append(text)
            i = end
            continue
        out.append(lines[i])
        i += 1
    if appended and out and not out[-1].endswith("\n"):
        out[-1] += newline
    body_yaml = "".join(out) + "".join(appended)
    head = doc.head or "---\n"
    tail = doc.tail or "---\n"
    if tail and not tail.endswith("\n") and doc.body:
        tail += newline
    return Document(head=head, yaml=body_yaml, tail=tail, body=doc.body)


def _rewrite_whole(doc: Document, data: CommentedMap, changes: Mapping[str, Any], where: str) -> Document:
    for key, change in changes.items():
        _merge(data, str(key), change)
    out = io.StringIO()
    _yaml().dump(data, out)
    return Document(head=doc.head, yaml=out.getvalue(), tail=doc.tail, body=doc.body)
