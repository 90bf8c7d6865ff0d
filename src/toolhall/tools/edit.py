"""Editing tools with the semantics of the text-editor tools models are trained on.

`edit_file` replaces exactly one occurrence of `old_str` (or all, with `replace_all`), `insert_text` inserts
after a line (0 = top), and `undo_edit` reverts the session's last edit of a file. Line endings (CRLF stays
CRLF), the encoding (and a BOM) and every untouched byte are kept; the result shows numbered lines around
the change.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections import deque
from typing import Annotated, Any

from pydantic import Field

from .._context import ToolContext
from .._errors import ToolCallError
from .._tool import Tool, tool
from .._toolbox import Toolbox
from .._workspace import Workspace
from ._fileio import FilesConfig, fs_errors, human_size, number_lines, read_all, sniff
from ._textdoc import TextDoc

__all__ = ["History", "current_bytes", "edit_tools", "toolbox"]

_SNIPPET = 4
_SUGGEST_SCAN = 50_000


class History:
    """Per-session, per-file undo stacks: (content before, digest of content after) for each edit."""

    def __init__(self, depth: int = 10) -> None:
        self.depth = depth
        self._lock = threading.Lock()
        self._stacks: dict[tuple[str | None, str], deque[tuple[bytes | None, Signature]]] = {}

    def record(self, session: str | None, rel: str, before: bytes | None | bool, after: Signature) -> None:
        """Remember an edit; `before` is the old content, None for a new file, False when it was too big."""
        if self.depth <= 0:
            return
        with self._lock:
            if before is False:  # the old content was not kept, so no earlier state can be restored either
                self._stacks.pop((session, rel), None)
                return
            stack = self._stacks.setdefault((session, rel), deque(maxlen=self.depth))
            stack.append((before if isinstance(before, bytes) else None, after))

    def pop(self, session: str | None, rel: str) -> tuple[bytes | None, Signature] | None:
        """The most recent edit of `rel` in this session, removed from the history."""
        with self._lock:
            stack = self._stacks.get((session, rel))
            return stack.pop() if stack else None

    def retarget(self, session: str | None, rel: str, after: Signature | None) -> None:
        """After an undo, the file is again in the previous edit's after-state, under a new signature."""
        with self._lock:
            stack = self._stacks.get((session, rel))
            if stack and after is not None:
                stack[-1] = (stack[-1][0], after)

    def push(self, session: str | None, rel: str, item: tuple[bytes | None, Signature]) -> None:
        """Put an edit back (when undoing it failed)."""
        with self._lock:
            self._stacks.setdefault((session, rel), deque(maxlen=self.depth)).append(item)


Signature = tuple[int, int, int]
"""(inode, size, mtime_ns) of a file just after an edit: an atomic replace or in-place write changes it."""


def signature(ws: Workspace, rel: str) -> Signature | None:
    """The file's current signature, or None when it is gone."""
    try:
        st = ws.stat(rel)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def current_bytes(ws: Workspace, rel: str, cap: int) -> bytes | None | bool:
    """A file's content before it is replaced: None when it does not exist, False when over `cap` bytes."""
    try:
        fd = ws.open(rel, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        return False if size > cap else read_all(fd, size)
    finally:
        os.close(fd)


def _load(ws: Workspace, path: str, cfg: FilesConfig) -> tuple[str, TextDoc, os.stat_result]:
    rel = ws.resolve(path, write=True).relative_to(ws.root).as_posix()
    fd = ws.open(rel, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if st.st_size > cfg.max_write_bytes:
            raise ToolCallError(
                f"{rel!r} is {human_size(st.st_size)}, more than the {human_size(cfg.max_write_bytes)} "
                "the edit tools handle",
                code="invalid_input",
                details={"reason": "too_large", "size": st.st_size},
            )
        data = read_all(fd, st.st_size)
    finally:
        os.close(fd)
    mime = sniff(data[:8192])
    if mime is not None:
        raise ToolCallError(
            f"{rel!r} is a binary file ({mime}); the edit tools change text files only",
            code="invalid_input",
            details={"reason": "binary", "mime_type": mime},
        )
    return rel, TextDoc.from_bytes(data), st


def _save(ws: Workspace, rel: str, doc: TextDoc, body: bytes, st: os.stat_result, cfg: FilesConfig) -> Signature | None:
    data = doc.save(body)
    if len(data) > cfg.max_write_bytes:
        raise ToolCallError(
            f"the edited file would be {human_size(len(data))}, over the {human_size(cfg.max_write_bytes)} cap",
            code="invalid_input",
            details={"reason": "too_large"},
        )
    now = ws.stat(rel)
    if (now.st_ino, now.st_size, now.st_mtime_ns) != (st.st_ino, st.st_size, st.st_mtime_ns):
        raise ToolCallError(
            f"{rel!r} changed while it was being edited; read it again and retry",
            code="execution_error",
            details={"reason": "changed"},
        )
    ws.atomic_write(rel, data)
    return signature(ws, rel)


def _snippet(doc: TextDoc, body: bytes, start: int, end: int, cfg: FilesConfig) -> str:
    """Numbered lines from a few before `start` to a few after `end`, without splitting the whole body."""
    lo = body.rfind(b"\n", 0, start) + 1
    for _ in range(_SNIPPET):
        if lo == 0:
            break
        lo = body.rfind(b"\n", 0, lo - 1) + 1
    hi = max(end - 1, start)
    for _ in range(_SNIPPET + 1):
        nxt = body.find(b"\n", hi)
        if nxt < 0:
            hi = len(body)
            break
        hi = nxt + 1
    lines = [part.removesuffix("\r") for part in body[lo:hi].decode(doc.codec, "replace").split("\n")]
    if lines and lines[-1] == "" and hi > lo:
        lines.pop()
    return number_lines(lines, doc.line_of(lo, body), cfg.max_line_chars)


def _adapt(doc: TextDoc, old: str, new: str) -> tuple[bytes, bytes]:
    """Spell old/new in the body's codec and line endings, so a CRLF file can be edited with `\\n` text."""
    old_b, new_b = doc.encode(old, "old_str"), doc.encode(new, "new_str")
    if doc.newline != b"\r\n" or "\r" in old:
        return old_b, new_b
    crlf_old = old_b.replace(b"\n", b"\r\n")
    crlf_new = new_b.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if crlf_old in doc.body or old_b not in doc.body:
        return crlf_old, crlf_new
    return old_b, new_b


def _no_match(rel: str, doc: TextDoc, old: str) -> ToolCallError:
    lines = doc.text().split("\n")[:_SUGGEST_SCAN]
    probe = next((line.strip() for line in old.split("\n") if line.strip()), old.strip())
    stripped = [line.strip() for line in lines]
    close = difflib.get_close_matches(probe, stripped, n=3, cutoff=0.6) if probe else []
    hints = []
    for candidate in close:
        n = stripped.index(candidate) + 1
        hints.append({"line": n, "text": lines[n - 1].removesuffix("\r")})
    message = f"No match found for old_str in {rel!r}: nothing was replaced. Check the exact text, whitespace included."
    if hints:
        shown = "\n".join(f"{h['line']:>6}\t{h['text']}" for h in hints)
        message += f"\nClosest lines:\n{shown}"
    return ToolCallError(message, code="execution_error", details={"reason": "no_match", "closest": hints})


def _ambiguous(rel: str, doc: TextDoc, needle: bytes, count: int) -> ToolCallError:
    lines: list[int] = []
    start = 0
    while len(lines) < 50:
        index = doc.body.find(needle, start)
        if index < 0:
            break
        lines.append(doc.line_of(index))
        start = index + 1
    return ToolCallError(
        f"Found {count} matches of old_str in {rel!r} (at lines {lines}); nothing was replaced. "
        "Include more surrounding text to make the match unique, or pass replace_all=true.",
        code="execution_error",
        details={"reason": "ambiguous_match", "count": count, "lines": lines},
    )


def edit_tools(cfg: FilesConfig, history: History) -> list[Tool]:
    """edit_file, insert_text and undo_edit for one configuration, sharing one undo history."""

    @tool(subject="path", open_world=False, destructive=True, idempotent=False)
    def edit_file(path: str, old_str: str, new_str: str, replace_all: bool = False, *, ctx: ToolContext) -> str:
        """Replace exact text in a file: old_str must occur exactly once unless replace_all is true.

        Args:
            path: File to edit, relative to the workspace root.
            old_str: The exact text to replace, whitespace and indentation included.
            new_str: The text to put in its place (may be empty to delete).
            replace_all: Replace every occurrence instead of requiring exactly one.
        """
        ws = cfg.workspace_for(ctx)
        if old_str == "":
            raise ToolCallError(
                "old_str is empty; use insert_text to add text or write_file to create a file",
                code="invalid_input",
                details={"reason": "empty_old_str"},
            )
        if old_str == new_str:
            raise ToolCallError("old_str and new_str are identical; nothing to change", code="invalid_input")
        with fs_errors(path):
            rel, doc, st = _load(ws, path, cfg)
            needle, replacement = _adapt(doc, old_str, new_str)
            count = doc.body.count(needle)
            if count == 0:
                raise _no_match(rel, doc, old_str)
            if count > 1 and not replace_all:
                raise _ambiguous(rel, doc, needle, count)
            first = doc.body.find(needle)
            body = doc.body.replace(needle, replacement, -1 if replace_all else 1)
            after = _save(ws, rel, doc, body, st, cfg)
        if after is not None:
            history.record(ctx.session_id, rel, doc.original, after)
        line = doc.line_of(first, body)
        snippet = _snippet(doc, body, first, first + len(replacement), cfg)
        what = f"{count} occurrences" if count > 1 else "1 occurrence"
        return f"Edited {rel}: replaced {what} (first at line {line}).\n{snippet}"

    @tool(subject="path", open_world=False, destructive=False, idempotent=False)
    def insert_text(
        path: str,
        line: Annotated[int, Field(ge=0, description="Insert after this line; 0 inserts at the top.")],
        text: str,
        *,
        ctx: ToolContext,
    ) -> str:
        """Insert text after a given line of a file (line 0 inserts at the top).

        Args:
            path: File to change, relative to the workspace root.
            line: Line number after which to insert (1-based, as numbered by read_file); 0 means the top.
            text: The text to insert.
        """
        ws = cfg.workspace_for(ctx)
        with fs_errors(path):
            rel, doc, st = _load(ws, path, cfg)
            body, start, end = _insert(doc, line, text)
            after = _save(ws, rel, doc, body, st, cfg)
        if after is not None:
            history.record(ctx.session_id, rel, doc.original, after)
        snippet = _snippet(doc, body, start, end, cfg)
        return f"Inserted {len(text.splitlines()) or 1} line(s) into {rel} after line {line}.\n{snippet}"

    @tool(subject="path", open_world=False, destructive=True, idempotent=False)
    def undo_edit(path: str, *, ctx: ToolContext) -> str:
        """Revert the last edit_file, insert_text or write_file made to this file in this session.

        Args:
            path: File whose last edit to revert, relative to the workspace root.
        """
        ws = cfg.workspace_for(ctx)
        with fs_errors(path):
            rel = ws.resolve(path, write=True).relative_to(ws.root).as_posix()
            return _undo(ws, rel, history, ctx.session_id, cfg)

    return [edit_file, insert_text, undo_edit]


def _insert(doc: TextDoc, line: int, text: str) -> tuple[bytes, int, int]:
    """The new body with `text` after line `line`, and where the inserted bytes start and end."""
    body, nl = doc.body, doc.newline
    total = doc.line_count()
    if line > total:
        raise ToolCallError(
            f"line {line} is past the end of the file, which has {total} lines; use 0..{total}",
            code="invalid_input",
            details={"reason": "line_out_of_range", "lines": total},
        )
    insert = doc.encode(text, "text").replace(b"\r\n", b"\n").replace(b"\n", nl)
    if not insert.endswith(nl):
        insert += nl
    if line == total and body and not body.endswith(b"\n"):
        insert = nl + insert.removesuffix(nl)
        return body + insert, len(body) + len(nl), len(body) + len(insert)
    pos = 0
    for _ in range(line):
        pos = body.index(b"\n", pos) + 1
    return body[:pos] + insert + body[pos:], pos, pos + len(insert)


def _undo(ws: Workspace, rel: str, history: History, session: str | None, cfg: FilesConfig) -> str:
    item = history.pop(session, rel)
    if item is None:
        raise ToolCallError(
            f"no edit of {rel!r} in this session to undo", code="not_found", details={"reason": "no_history"}
        )
    before, after = item
    if signature(ws, rel) != after:
        history.push(session, rel, item)
        raise ToolCallError(
            f"{rel!r} has changed since the last edit, so undoing it would lose those changes",
            code="execution_error",
            details={"reason": "changed"},
        )
    if before is None:
        pfd, name = ws.open_parent(rel)
        try:
            os.unlink(name, dir_fd=pfd)
        finally:
            os.close(pfd)
        return f"Undid the last edit of {rel}: the file did not exist before, so it was removed."
    ws.atomic_write(rel, before)
    history.retarget(session, rel, signature(ws, rel))
    return f"Undid the last edit of {rel}: restored {human_size(len(before))}."


def toolbox(workspace: Workspace | str | os.PathLike[str] | None = None, **options: Any) -> Toolbox:
    """Only the editing tools (edit_file, insert_text, undo_edit); options as for `files.toolbox`."""
    from .files import toolbox as files_toolbox

    full = files_toolbox(workspace, **options)
    return full.filter(predicate=lambda t: t.name in {"edit_file", "insert_text", "undo_edit"})
