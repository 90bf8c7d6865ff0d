"""`search_files`: grep across the workspace, respecting .gitignore, with `file:line:text` results.

ripgrep (the `rg` binary from its PyPI wheel) only picks the candidate files, fast and in parallel;
every line reported is then read through the Workspace (confined, deny rules applied) and matched with
Python's `re`, so a symlink swapped in under rg cannot leak anything and the results are the same
whether or not rg is there (without it, the same walk and matching run in Python).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
import threading
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

import anyio
from pydantic import Field

from .._context import ToolContext
from .._errors import DeniedPathError, ToolCallError, WorkspaceError
from .._tool import Tool, tool
from .._toolbox import Toolbox
from .._workspace import Workspace
from ._fileio import FilesConfig, fs_errors
from ._walk import compile_glob, walk

__all__ = ["find_ripgrep", "search_tools", "toolbox"]

_BLOCK = 4 << 20
_RG_TIMEOUT = 120.0


@lru_cache(maxsize=1)
def find_ripgrep() -> str | None:
    """The `rg` binary: beside this Python (where the ripgrep wheel puts it), else on PATH."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def _compile(pattern: str, regex: bool, case_sensitive: bool) -> re.Pattern[str]:
    flags = re.MULTILINE | (0 if case_sensitive else re.IGNORECASE)
    try:
        return re.compile(pattern if regex else re.escape(pattern), flags)
    except re.error as exc:
        raise ToolCallError(
            f"pattern is not a valid regular expression ({exc}); pass regex=false to search for it literally",
            code="invalid_input",
            details={"reason": "bad_regex"},
        ) from None


def _file_lines(ws: Workspace, rel: str, rx: re.Pattern[str], stop: threading.Event) -> Iterator[int]:
    """Numbers of the lines of one file that match on their own; nothing for a binary (NUL) file."""
    try:
        fd = ws.open(rel, os.O_RDONLY)
    except (OSError, WorkspaceError):
        return
    found: list[int] = []
    try:
        line_no, carry = 1, b""
        while not stop.is_set():
            block = os.read(fd, _BLOCK)
            data = carry + block
            if not data:
                break
            if b"\x00" in data:
                return
            cut = data.rfind(b"\n") + 1 if block else len(data)
            carry, data = data[cut:], data[:cut]
            found.extend(_block_lines(data.decode("utf-8", "surrogateescape"), rx, line_no))
            line_no += data.count(b"\n")
            if not block:
                break
    finally:
        os.close(fd)
    yield from found


def _block_lines(text: str, rx: re.Pattern[str], first: int) -> Iterator[int]:
    pos, line_no, counted = 0, first, 0
    while True:
        m = rx.search(text, pos)
        if m is None:
            return
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.start())
        end = len(text) if end < 0 else end
        line_no += text.count("\n", counted, start)
        counted = start
        if rx.search(text[start:end]) is not None:
            yield line_no
        if end >= len(text):
            return
        pos = end + 1


def _context_lines(ws: Workspace, rel: str, wanted: set[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    top = max(wanted)
    try:
        fd = ws.open(rel, os.O_RDONLY)
    except (OSError, WorkspaceError):
        return out
    with os.fdopen(fd, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if n in wanted:
                out[n] = raw.rstrip(b"\n").removesuffix(b"\r").decode("utf-8", "replace")
            if n >= top:
                break
    return out


async def _candidates_rg(
    ws: Workspace, rg: str, start: str, pattern: str, regex: bool, case_sensitive: bool, glob: str | None
) -> list[str] | None:
    """Files under `start` that rg finds a match in (workspace-relative), or None when rg cannot say."""
    from ._proc import run

    argv = [
        rg,
        "--files-with-matches",
        "--null",
        "--no-config",
        "--no-messages",
        "--no-ignore-parent",
        "--no-ignore-global",
        "--no-ignore-exclude",
        "--no-ignore-dot",
        "--no-require-git",
    ]
    if not case_sensitive:
        argv.append("--ignore-case")
    if not regex:
        argv.append("--fixed-strings")
    for deny in ws.deny_read:
        argv += ["--glob", f"!{deny}"]
    if glob:
        argv += ["--glob", glob]
    if start != "." and (ws.root / ".gitignore").is_file():
        argv += ["--ignore-file", str(ws.root / ".gitignore")]
    argv += ["--regexp", pattern, "--", start]
    try:
        done = await run(
            argv,
            cwd=str(ws.root),
            env={"LC_ALL": "C.UTF-8"},
            timeout=_RG_TIMEOUT,
            max_output_bytes=256 << 20,
            max_read_bytes=512 << 20,
        )
    except OSError:
        return None
    if done.exit_code == 1:
        return []
    if done.exit_code != 0 or done.truncated:
        return None  # a regex rg does not support (look-around, say), or output too large: ask Python
    return sorted(p.removeprefix("./") for p in done.stdout.split("\x00") if p)


def _candidates_walk(ws: Workspace, start: str, stop: threading.Event) -> list[str]:
    return sorted(e.rel for e in walk(ws, start, should_stop=stop.is_set) if e.kind == "file")


def _render(
    ws: Workspace, files: list[str], rx: re.Pattern[str], context: int, limit: int, width: int, stop: threading.Event
) -> tuple[list[str], int, bool]:
    out: list[str] = []
    count = 0
    for rel in files:
        if stop.is_set():
            break
        lines = list(_file_lines(ws, rel, rx, stop))
        if not lines:
            continue
        room = limit - count
        hit = lines[:room]
        count += len(hit)
        wanted = {n + d for n in hit for d in range(-context, context + 1) if n + d >= 1}
        text = _context_lines(ws, rel, wanted)
        _emit(out, rel, hit, text, context, width)
        if count >= limit:
            return out, count, True
    return out, count, False


def _emit(out: list[str], rel: str, hit: list[int], text: dict[int, str], context: int, width: int) -> None:
    hits = set(hit)
    last = None
    for n in sorted(text):
        if context and last is not None and n > last + 1:
            out.append("--")
        if context and last is None and out:
            out.append("--")
        line = text[n] if len(text[n]) <= width else text[n][:width] + " [...]"
        out.append(f"{rel}:{n}:{line}" if n in hits else f"{rel}-{n}-{line}")
        last = n


def search_tools(cfg: FilesConfig) -> list[Tool]:
    """search_files for one configuration."""

    @tool(subject="path", read_only=True, destructive=False, idempotent=True, open_world=False)
    async def search_files(
        pattern: str,
        path: str = ".",
        glob: str | None = None,
        regex: bool = True,
        case_sensitive: bool = True,
        context: Annotated[int, Field(ge=0, le=20)] = 0,
        limit: Annotated[int | None, Field(ge=1)] = None,
        *,
        ctx: ToolContext,
    ) -> str:
        """Search file contents under a folder (like grep), skipping .gitignored, hidden and binary files.

        Results are `file:line:text` (context lines as `file-line-text`), files in path order.

        Args:
            pattern: Regular expression (Python syntax) or, with regex=false, literal text.
            path: Folder (or file) to search, relative to the workspace root.
            glob: Only files matching this glob, e.g. `*.py` (any depth) or `src/**/*.ts`.
            regex: Treat pattern as a regular expression.
            case_sensitive: Match case exactly.
            context: Lines of context to show before and after each match.
            limit: Most matching lines to return.
        """
        ws = cfg.workspace_for(ctx)
        if not pattern:
            raise ToolCallError("pattern is empty", code="invalid_input")
        rx = _compile(pattern, regex, case_sensitive)
        cap = min(limit or cfg.search_limit, cfg.search_limit)
        with fs_errors(path):
            return await _search(cfg, ws, path, pattern, rx, regex, case_sensitive, glob, context, cap, ctx)

    return [search_files]


async def _search(
    cfg: FilesConfig,
    ws: Workspace,
    path: str,
    pattern: str,
    rx: re.Pattern[str],
    regex: bool,
    case_sensitive: bool,
    glob: str | None,
    context: int,
    cap: int,
    ctx: ToolContext,
) -> str:
    target = ws.resolve(path)
    start = "." if target == ws.root else target.relative_to(ws.root).as_posix()
    stop = threading.Event()
    files: list[str] | None = None
    mode = os.stat(target).st_mode
    if stat.S_ISREG(mode):
        files = [start]
    elif not stat.S_ISDIR(mode):
        raise DeniedPathError(f"{start!r} is not a regular file or folder; refusing to search it")
    else:
        rg = find_ripgrep() if cfg.use_ripgrep else None
        if rg is not None:
            files = await _candidates_rg(ws, rg, start, pattern, regex, case_sensitive, glob)
    try:
        if files is None:
            files = await anyio.to_thread.run_sync(_candidates_walk, ws, start, stop, abandon_on_cancel=True)
        if glob and not (len(files) == 1 and files[0] == start):
            match = compile_glob(glob, basename_if_no_slash=True)
            prefix = 0 if start == "." else len(start) + 1
            files = [f for f in files if match(f[prefix:]) and not ws.is_denied(f)]
        found = await anyio.to_thread.run_sync(
            _render, ws, files, rx, context, cap, cfg.max_line_chars, stop, abandon_on_cancel=True
        )
    finally:
        stop.set()
    lines, count, more = found
    if not lines:
        return f"[no matches for {pattern!r} under {start!r}]"
    if more:
        lines.append(f"[stopped at the limit of {count} matching lines; narrow the pattern, path or glob to see more]")
    return "\n".join(lines)


def toolbox(workspace: Workspace | str | os.PathLike[str] | None = None, **options: Any) -> Toolbox:
    """Only `search_files`; options as for `files.toolbox`."""
    from .files import toolbox as files_toolbox

    return files_toolbox(workspace, **options).filter(predicate=lambda t: t.name == "search_files")
