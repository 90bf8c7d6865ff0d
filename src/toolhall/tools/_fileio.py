"""Reading files through a Workspace descriptor: type sniffing, encodings, line ranges, `cat -n` output."""

from __future__ import annotations

import codecs
import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Final

from .._context import ToolContext
from .._errors import ToolCallError
from .._workspace import Workspace

__all__ = [
    "FilesConfig",
    "LineRange",
    "decode",
    "encode",
    "fs_errors",
    "owned_fd",
    "human_size",
    "number_lines",
    "read_all",
    "read_range",
    "sniff",
]

_CHUNK: Final = 1 << 20
_SNIFF: Final = 8192
_SIGNATURES: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"\x7fELF", "application/x-executable"),
    (b"SQLite format 3\x00", "application/vnd.sqlite3"),
    (b"\x00asm", "application/wasm"),
)
_BOMS: Final = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def sniff(head: bytes) -> str | None:
    """The MIME type of a binary file from its first bytes, or None when it looks like text."""
    for magic, mime in _SIGNATURES:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if any(head.startswith(bom) for bom, _ in _BOMS):
        return None
    if b"\x00" in head[:_SNIFF]:
        return "application/octet-stream"
    return None


def decode(data: bytes) -> tuple[str, str]:
    """Decode file bytes; return the text and the encoding to write it back with.

    UTF-8 (with or without BOM) and BOM-marked UTF-16/32 are recognised; anything else is read as
    Latin-1, which maps every byte to one character, so an edit leaves the untouched bytes exactly as they were.
    """
    for bom, name in _BOMS:
        if data.startswith(bom):
            return data.decode(name), name
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def encode(text: str, encoding: str, what: str = "the new text") -> bytes:
    """Encode text in a file's own encoding, or fail naming the character that does not fit."""
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise ToolCallError(
            f"{what} contains {bad!r}, which the file's encoding ({encoding}) cannot hold",
            code="invalid_input",
            details={"reason": "encoding", "encoding": encoding},
        ) from None


def human_size(size: int) -> str:
    """A byte count for people: `512 bytes`, `1.5 KB`, `3.2 MB`."""
    if size < 1024:
        return f"{size} bytes"
    value = float(size)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1024
        if value < 1024 or unit == "TB":
            break
    return f"{value:.1f} {unit}"


def number_lines(lines: list[str], first: int, max_line_chars: int) -> str:
    """Lines in `cat -n` style (six-wide number, tab, text); over-long lines are cut with a marker."""
    out = []
    for n, line in enumerate(lines, first):
        if len(line) > max_line_chars:
            line = f"{line[:max_line_chars]}... [line cut at {max_line_chars} of {len(line)} characters]"
        out.append(f"{n:>6}\t{line}")
    return "\n".join(out)


def read_all(fd: int, size_hint: int) -> bytes:
    """Read a descriptor to the end."""
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, max(size_hint + 1, 65536))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


@dataclass(slots=True)
class LineRange:
    """Lines read from a range of a file."""

    first: int
    lines: list[bytes] = field(default_factory=list)
    more: bool = False
    """Whether the file goes on after the last line returned."""
    cut_bytes: bool = False
    """Whether the range stopped early because it hit the byte cap."""
    final_newline: bool = True
    """Whether the file's last line (when it was reached) ends with a newline."""
    eof_line: int | None = None
    """The number of lines in the file, when the end was reached."""


def read_range(fd: int, first: int, limit: int | None, max_bytes: int) -> LineRange:
    """Read lines `first`..`first+limit-1` (1-based) streaming, never holding more than a chunk plus the range.

    Skipping is done a megabyte at a time by counting newlines, so line 1,000,000 of a 1 GB file costs a
    pass over the bytes before it and no more memory than one chunk.
    """
    data, line, pos = _skip_to(fd, first)
    out = LineRange(first=first)
    if data is None:
        out.eof_line = line
        return out
    want = limit if limit is not None else -1
    taken, carry = 0, b""
    while want != 0:
        nl = data.find(b"\n", pos)
        if nl < 0:
            carry += data[pos:]
            if len(carry) > max_bytes - taken:
                out.lines.append(carry[: max(max_bytes - taken, 0)])
                out.cut_bytes = out.more = True
                return out
            data, pos = os.read(fd, _CHUNK), 0
            if not data:
                if carry:
                    out.lines.append(carry.removesuffix(b"\r"))
                    out.final_newline = False
                out.eof_line = first + len(out.lines) - 1
                return out
            continue
        text = carry + data[pos:nl]
        carry = b""
        if taken + len(text) > max_bytes and out.lines:
            out.cut_bytes = out.more = True
            return out
        out.lines.append(text.removesuffix(b"\r")[:max_bytes])
        taken += len(text) + 1
        want -= 1
        pos = nl + 1
    out.more = pos < len(data) or bool(os.read(fd, 1))
    return out


def _skip_to(fd: int, first: int) -> tuple[bytes | None, int, int]:
    """Advance to the start of line `first`; return the chunk holding it and the offset in that chunk.

    When the file has fewer lines, return (None, number_of_lines, 0).
    """
    line = 1
    last_byte = b""
    while True:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            lines = line - 1 if last_byte in (b"\n", b"") else line
            return None, lines, 0
        if line == first:
            return chunk, line, 0
        count = chunk.count(b"\n")
        if line + count < first:
            line += count
            last_byte = chunk[-1:]
            continue
        pos = 0
        while line < first:
            pos = chunk.index(b"\n", pos) + 1
            line += 1
        if pos == len(chunk):
            nxt = os.read(fd, _CHUNK)
            if not nxt:
                return None, line - 1, 0
            return nxt, line, 0
        return chunk, line, pos


@contextmanager
def owned_fd(fd: int) -> Iterator[int]:
    """Close a descriptor (from `Workspace.open`) when the block ends, however it ends."""
    try:
        yield fd
    finally:
        os.close(fd)


@contextmanager
def fs_errors(path: str) -> Iterator[None]:
    """Turn OS errors into tool errors with the right code and the path in the message."""
    try:
        yield
    except FileNotFoundError:
        raise ToolCallError(
            f"{path!r} does not exist (or a folder on the way to it does not)",
            code="not_found",
            details={"reason": "not_found", "path": path},
        ) from None
    except IsADirectoryError:
        raise ToolCallError(
            f"{path!r} is a folder, not a file", code="invalid_input", details={"reason": "is_a_directory"}
        ) from None
    except NotADirectoryError:
        raise ToolCallError(
            f"a part of {path!r} is a file, not a folder",
            code="invalid_input",
            details={"reason": "not_a_directory"},
        ) from None
    except PermissionError as exc:
        raise ToolCallError(
            f"permission denied for {path!r}: {exc.strerror}", code="denied", details={"errno": exc.errno}
        ) from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise ToolCallError(
                f"path {path[:60]!r}... is too long", code="invalid_input", details={"reason": "name_too_long"}
            ) from None
        raise ToolCallError(
            f"{exc.strerror or exc} for {path!r}",
            code="execution_error",
            details={"errno": exc.errno, "reason": errno.errorcode.get(exc.errno or 0, "os_error")},
        ) from None


@dataclass(slots=True, kw_only=True)
class FilesConfig:
    """The file toolbox's options (the `[tools.files]` section of `toolhall.toml`)."""

    workspace: Workspace | None
    max_read_bytes: int = 256 * 1024
    max_line_chars: int = 2000
    max_write_bytes: int = 16 * 1024 * 1024
    max_image_bytes: int = 5 * 1024 * 1024
    list_limit: int = 1000
    search_limit: int = 200
    undo_depth: int = 10
    use_ripgrep: bool = True

    def workspace_for(self, ctx: ToolContext | None) -> Workspace:
        """The configured workspace, else the calling session's."""
        if self.workspace is not None:
            return self.workspace
        if ctx is not None and ctx.workspace is not None:
            return Workspace.coerce(ctx.workspace)
        raise ToolCallError(
            "no workspace: pass workspace= to the file toolbox or run it in a Session that has one",
            code="execution_error",
            details={"reason": "no_workspace"},
        )
