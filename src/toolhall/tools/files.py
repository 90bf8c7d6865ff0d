"""The standard file tools: read, write, append, delete, exists, list (plus edit and search), confined to a Workspace.

Example:
    ```python
    from toolhall.tools import files

    tb = files.toolbox(workspace="/srv/project", max_read_bytes=512_000)
    result = await tb.call("read_file", {"path": "README.md", "offset": 10, "limit": 20})
    ```
"""

from __future__ import annotations

import os
import shutil
import stat
from typing import Annotated, Any

from pydantic import Field

from .._context import ToolContext
from .._errors import ToolCallError
from .._result import Image, Text
from .._tool import Tool, tool
from .._toolbox import Toolbox
from .._workspace import Workspace
from . import edit, search
from ._fileio import FilesConfig, decode, fs_errors, human_size, number_lines, read_all, read_range, sniff
from ._walk import Entry, compile_glob, glob_depth, walk

__all__ = ["toolbox"]


Offset = Annotated[int | None, Field(ge=1, description="First line to show (1-based, as numbered in the output).")]
Limit = Annotated[int | None, Field(ge=1, description="How many lines to show from `offset`.")]


def toolbox(
    workspace: Workspace | str | os.PathLike[str] | None = None,
    *,
    max_read_bytes: int = 256 * 1024,
    max_line_chars: int = 2000,
    max_write_bytes: int = 16 * 1024 * 1024,
    max_image_bytes: int = 5 * 1024 * 1024,
    list_limit: int = 1000,
    search_limit: int = 200,
    undo_depth: int = 10,
    use_ripgrep: bool = True,
) -> Toolbox:
    """The file toolbox: read_file, write_file, append_file, delete_file, file_exists, list_files, edit_file,
    insert_text, undo_edit and search_files, all confined to one workspace.

    Args:
        workspace: The `Workspace` (or its root folder); None uses the calling session's workspace.
        max_read_bytes: Largest file `read_file` returns whole; larger files need `offset`/`limit`. Also
            caps the text a ranged read returns.
        max_line_chars: Lines longer than this are cut in `read_file` output.
        max_write_bytes: Largest content `write_file`, `append_file` and the edit tools will write.
        max_image_bytes: Largest image `read_file` returns as an image; larger ones are refused.
        list_limit: Default and maximum number of entries `list_files` returns.
        search_limit: Default and maximum number of matching lines `search_files` returns.
        undo_depth: How many edits per file and session `undo_edit` can revert.
        use_ripgrep: Use the `rg` binary (from the ripgrep wheel) to find candidate files when available.

    Example:
        ```python
        tb = toolbox(workspace=tmp_path)
        tb.call_sync("write_file", {"path": "a.txt", "content": "hello\\n"})
        ```
    """
    for name, value in (
        ("max_read_bytes", max_read_bytes),
        ("max_line_chars", max_line_chars),
        ("max_write_bytes", max_write_bytes),
        ("list_limit", list_limit),
        ("search_limit", search_limit),
    ):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    cfg = FilesConfig(
        workspace=None if workspace is None else Workspace.coerce(workspace),
        max_read_bytes=max_read_bytes,
        max_line_chars=max_line_chars,
        max_write_bytes=max_write_bytes,
        max_image_bytes=max_image_bytes,
        list_limit=list_limit,
        search_limit=search_limit,
        undo_depth=undo_depth,
        use_ripgrep=use_ripgrep,
    )
    history = edit.History(depth=undo_depth)
    tools: list[Tool] = [
        *file_tools(cfg, history),
        *edit.edit_tools(cfg, history),
        *search.search_tools(cfg),
    ]
    return Toolbox(tools, name="files")


def file_tools(cfg: FilesConfig, history: edit.History) -> list[Tool]:
    """read_file, write_file, append_file, delete_file, file_exists and list_files for one configuration."""

    @tool(subject="path", open_world=False, read_only=True, destructive=False, idempotent=True)
    def read_file(path: str, offset: Offset = None, limit: Limit = None, *, ctx: ToolContext) -> Any:
        """Read a text file, numbered like `cat -n`; use offset/limit for a range of lines.

        Files larger than the size cap need a range. Images come back as images; other binary files are refused.

        Args:
            path: File to read, relative to the workspace root.
            offset: First line to show (1-based).
            limit: Number of lines to show.
        """
        ws = cfg.workspace_for(ctx)
        with fs_errors(path):
            fd = ws.open(path, os.O_RDONLY)
            try:
                return _read(cfg, ws.relative(path), fd, offset, limit)
            finally:
                os.close(fd)

    @tool(subject="path", open_world=False, destructive=True, idempotent=True)
    def write_file(path: str, content: str, *, ctx: ToolContext) -> dict[str, Any]:
        """Create or replace a file with this content (atomically; parent folders are created).

        Args:
            path: File to write, relative to the workspace root.
            content: The complete new content.
        """
        ws = cfg.workspace_for(ctx)
        data = content.encode("utf-8")
        _check_size(cfg, len(data), "content")
        with fs_errors(path):
            rel = ws.resolve(path, write=True).relative_to(ws.root).as_posix()
            before = edit.current_bytes(ws, rel, cfg.max_write_bytes)
            written = ws.atomic_write(rel, data)
            after = edit.signature(ws, rel)
        if after is not None:
            history.record(ctx.session_id, rel, before, after)
        return {"path": rel, "bytes_written": written, "created": before is None}

    @tool(subject="path", open_world=False, destructive=False, idempotent=False)
    def append_file(path: str, content: str, *, ctx: ToolContext) -> dict[str, Any]:
        """Append content to the end of a file, creating it (and its folders) if missing.

        Args:
            path: File to append to, relative to the workspace root.
            content: Text to add at the end (include a trailing newline if you want one).
        """
        ws = cfg.workspace_for(ctx)
        data = content.encode("utf-8")
        _check_size(cfg, len(data), "content")
        with fs_errors(path):
            os.close(ws.open_parent(path, create=True)[0])
            fd = ws.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                st = os.fstat(fd)
                if st.st_nlink > 1:
                    raise ToolCallError(
                        f"{path!r} has {st.st_nlink} hard links; appending in place would change every linked "
                        "name too (possibly outside the workspace). Use write_file to replace it instead.",
                        code="denied",
                        details={"reason": "hard_link", "links": st.st_nlink},
                    )
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
        return {"path": ws.relative(path), "bytes_appended": len(data), "size": size}

    @tool(subject="path", open_world=False, destructive=True, idempotent=True)
    def delete_file(path: str, recursive: bool = False, *, ctx: ToolContext) -> dict[str, Any]:
        """Delete a file or symlink; a folder needs recursive=true.

        Args:
            path: What to delete, relative to the workspace root.
            recursive: Delete a folder and everything in it.
        """
        ws = cfg.workspace_for(ctx)
        with fs_errors(path):
            return _delete(ws, path, recursive)

    @tool(subject="path", open_world=False, read_only=True, destructive=False, idempotent=True)
    def file_exists(path: str, *, ctx: ToolContext) -> dict[str, Any]:
        """Check whether a path exists, and what it is (file, folder, symlink) and its size.

        Args:
            path: Path to check, relative to the workspace root.
        """
        ws = cfg.workspace_for(ctx)
        rel = ws.relative(path)
        try:
            st = ws.stat(rel)
        except (FileNotFoundError, NotADirectoryError):
            return {"path": rel, "exists": False, "type": None, "size": None}
        kind = _kind(st.st_mode)
        return {"path": rel, "exists": True, "type": kind, "size": st.st_size if kind == "file" else None}

    @tool(subject="path", open_world=False, read_only=True, destructive=False, idempotent=True)
    def list_files(
        path: str = ".",
        pattern: str = "**/*",
        include_hidden: bool = False,
        respect_gitignore: bool = True,
        limit: Annotated[int | None, Field(ge=1)] = None,
        *,
        ctx: ToolContext,
    ) -> str:
        """List files and folders under a folder, sorted, with sizes; symlinks are shown, never followed.

        Args:
            path: Folder to list, relative to the workspace root.
            pattern: Glob relative to `path` (`*` within a folder, `**` across folders, `{a,b}` alternatives).
            include_hidden: Include names starting with a dot.
            respect_gitignore: Leave out what .gitignore files exclude (and the .git folder).
            limit: Most entries to return.
        """
        ws = cfg.workspace_for(ctx)
        cap = min(limit or cfg.list_limit, cfg.list_limit)
        with fs_errors(path):
            return _list(ws, path, pattern, include_hidden, respect_gitignore, cap, ctx)

    return [read_file, write_file, append_file, delete_file, file_exists, list_files]


def _check_size(cfg: FilesConfig, size: int, what: str) -> None:
    if size > cfg.max_write_bytes:
        raise ToolCallError(
            f"{what} is {human_size(size)}, more than the {human_size(cfg.max_write_bytes)} this tool writes",
            code="invalid_input",
            details={"reason": "too_large", "size": size, "max_write_bytes": cfg.max_write_bytes},
        )


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _read(cfg: FilesConfig, rel: str, fd: int, offset: int | None, limit: int | None) -> Any:
    st = os.fstat(fd)
    mime = sniff(os.pread(fd, 8192, 0))
    if mime is not None:
        return _binary(cfg, rel, fd, mime, st.st_size)
    if offset is None and limit is None:
        if st.st_size > cfg.max_read_bytes:
            raise ToolCallError(
                f"{rel!r} is {human_size(st.st_size)}, more than the {human_size(cfg.max_read_bytes)} read_file "
                "returns at once; pass offset and limit to read a range of lines, or use search_files",
                code="invalid_input",
                details={"reason": "too_large", "size": st.st_size, "max_read_bytes": cfg.max_read_bytes},
            )
        if st.st_size == 0:
            return f"[{rel} is empty: 0 bytes]"
    return _range_text(cfg, fd, offset or 1, limit, st.st_size)[0]


def _range_text(cfg: FilesConfig, fd: int, first: int, limit: int | None, size: int) -> tuple[str, str]:
    head = os.pread(fd, 4, 0)
    _, encoding = decode(head if head[:2] in (b"\xff\xfe", b"\xfe\xff") else b"")
    if encoding.startswith("utf-16") or encoding.startswith("utf-32"):
        return _wide_text(cfg, fd, first, limit, size)
    got = read_range(fd, first, limit, cfg.max_read_bytes)
    if not got.lines:
        if got.eof_line is not None and first > 1:
            raise ToolCallError(
                f"offset {first} is past the end of the file, which has {got.eof_line} lines",
                code="invalid_input",
                details={"reason": "offset_past_end", "lines": got.eof_line},
            )
        return "[the file is empty]", "utf-8"
    lines = [decode(raw)[0] for raw in got.lines]
    body = number_lines(lines, first, cfg.max_line_chars)
    last = first + len(lines) - 1
    if got.cut_bytes:
        body += (
            f"\n[output stopped at {human_size(cfg.max_read_bytes)} after line {last}; read on with offset={last + 1}]"
        )
    elif got.more:
        body += f"\n[lines {first}-{last} shown; the file continues: read on with offset={last + 1}]"
    return body, "utf-8"


def _wide_text(cfg: FilesConfig, fd: int, first: int, limit: int | None, size: int) -> tuple[str, str]:
    if size > cfg.max_read_bytes * 4:
        raise ToolCallError(
            "UTF-16/32 files this large cannot be read by range", code="invalid_input", details={"size": size}
        )
    text, encoding = decode(read_all(fd, size))
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    chosen = lines[first - 1 : None if limit is None else first - 1 + limit]
    if not chosen and first > 1:
        raise ToolCallError(
            f"offset {first} is past the end of the file, which has {len(lines)} lines",
            code="invalid_input",
            details={"reason": "offset_past_end", "lines": len(lines)},
        )
    return number_lines(chosen, first, cfg.max_line_chars), encoding


def _binary(cfg: FilesConfig, rel: str, fd: int, mime: str, size: int) -> Any:
    if mime.startswith("image/") and size <= cfg.max_image_bytes:
        data = read_all(fd, size)
        return [Text(text=f"{rel}: {mime} image, {human_size(size)}"), Image(data=data, mime_type=mime)]
    raise ToolCallError(
        f"{rel!r} is a binary file ({mime}, {human_size(size)}); read_file shows text files only",
        code="invalid_input",
        details={"reason": "binary", "mime_type": mime, "size": size},
    )


def _delete(ws: Workspace, path: str, recursive: bool) -> dict[str, Any]:
    rel = ws.relative(path)
    if rel == ".":
        raise ToolCallError("refusing to delete the workspace root", code="denied", details={"reason": "root"})
    ws.check(rel, write=True)
    st = ws.stat(rel)
    count = 1
    if stat.S_ISDIR(st.st_mode):
        if not recursive:
            raise ToolCallError(
                f"{rel!r} is a folder; pass recursive=true to delete it and everything in it",
                code="invalid_input",
                details={"reason": "is_a_directory"},
            )
        for entry in walk(ws, rel, include_hidden=True, respect_gitignore=False, skip_denied=False):
            ws.check(entry.rel, write=True)
            count += 1
    pfd, name = ws.open_parent(rel)
    try:
        st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(name, dir_fd=pfd)
        else:
            os.unlink(name, dir_fd=pfd)
    finally:
        os.close(pfd)
    return {"path": rel, "deleted": _kind(st.st_mode), "entries": count}


def _list(
    ws: Workspace,
    path: str,
    pattern: str,
    hidden: bool,
    gitignore: bool,
    cap: int,
    ctx: ToolContext,
) -> str:
    start = ws.relative(path)
    try:
        os.close(ws.open_dir(start))
    except NotADirectoryError:
        raise ToolCallError(
            f"{start!r} is a file, not a folder; use read_file or file_exists", code="invalid_input"
        ) from None
    match = compile_glob(pattern or "**/*")
    prefix = 0 if start == "." else len(start) + 1
    found: list[Entry] = [
        e
        for e in walk(
            ws,
            start,
            include_hidden=hidden,
            respect_gitignore=gitignore,
            max_depth=glob_depth(pattern or "**/*"),
            should_stop=ctx.cancel.is_set,
        )
        if match(e.rel[prefix:])
    ]
    if not found:
        return f"[nothing under {start!r} matches {pattern!r}]"
    found.sort(key=lambda e: e.rel)
    lines = [_describe(e) for e in found[:cap]]
    if len(found) > cap:
        lines.append(f"[{cap} of {len(found)} entries shown; narrow `path` or `pattern` to see the rest]")
    return "\n".join(lines)


def _describe(e: Entry) -> str:
    if e.kind == "folder":
        return f"{e.rel}/"
    if e.kind == "symlink":
        return f"{e.rel} -> {e.target} (symlink)"
    if e.kind == "other":
        return f"{e.rel} (special file)"
    return f"{e.rel}  ({human_size(e.size)})"
