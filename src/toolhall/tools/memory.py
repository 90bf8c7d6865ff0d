"""Memory a worker keeps between runs: `global`, `project` and `worker` scopes of plain files.

The folders live under one root (default `~/.toolhall/memory`): `global/`, `projects/<project>/` and
`workers/<worker>/`. Each scope is its own `Workspace`, so a path can never leave its scope (no `..`, no
symlink out). The tools follow the vocabulary of Anthropic's memory tool (view, create, str_replace,
delete, rename), which models are trained on.

Example:
    ```python
    tb = memory.toolbox(project="shop", worker="reviewer")
    await tb.call("write_memory", {"scope": "project", "path": "conventions.md", "content": "- tabs"})
    ```
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field

from .._context import ToolContext
from .._errors import ConfigError, ToolCallError
from .._tool import Tool, tool
from .._toolbox import Toolbox
from .._workspace import Workspace
from ._fileio import owned_fd

__all__ = ["DEFAULT_ROOT", "SCOPE_PATTERN", "toolbox"]

DEFAULT_ROOT = Path("~/.toolhall/memory")
"""Where memory lives unless `root=` (or `[tools.memory] root`) says otherwise."""
_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}"
SCOPE_PATTERN = rf"^(global|project|worker|project:{_SEGMENT}|worker:{_SEGMENT})$"
"""Allowed `scope` values: `global`, `project`, `worker`, or `worker:NAME` / `project:NAME` for another's."""
_SEGMENT_RE = re.compile(rf"^{_SEGMENT}$")
_MAX_LISTED = 1000

_SCOPE_RE = re.compile(SCOPE_PATTERN)


def _valid_scope(value: str) -> str:
    if not _SCOPE_RE.match(value):
        raise ValueError(
            f"scope {value!r} is not one of: 'global', 'project', 'worker', 'worker:NAME', 'project:NAME'"
        )
    return value


Scope = Annotated[str, AfterValidator(_valid_scope), Field(examples=["global", "project", "worker", "worker:planner"])]


def _check_name(kind: str, value: str | None) -> str | None:
    if value is not None and (not isinstance(value, str) or not _SEGMENT_RE.match(value) or value in {".", ".."}):
        raise ConfigError(
            f"memory {kind}={value!r} is not a usable folder name: use letters, digits, '_', '.', '-' "
            f"(up to 128 characters, not starting with '.' or '-')"
        )
    return value


@dataclass(frozen=True, slots=True)
class _Memory:
    root: Path
    project: str | None
    worker: str | None
    ownership: bool
    max_bytes: int

    def caller(self, ctx: ToolContext) -> str | None:
        return ctx.worker or self.worker

    def folder(self, scope: str, ctx: ToolContext) -> tuple[Path, str | None]:
        """The scope's folder and, for worker scopes, whose it is."""
        kind, _, named = scope.partition(":")
        if kind == "global":
            return self.root / "global", None
        if kind == "project":
            project = named or self.project or _extra(ctx, "project")
            if project is None:
                raise ToolCallError(
                    "no project for the 'project' scope: pass project= to memory.toolbox() "
                    "or use scope 'project:NAME'", code="invalid_input", details={"reason": "no_project"})
            _segment_or_fail("project", project)
            return self.root / "projects" / project, None
        owner = named or self.caller(ctx)
        if owner is None:
            raise ToolCallError(
                "no worker for the 'worker' scope: run in Session(worker=...), pass worker= to "
                "memory.toolbox(), or use scope 'worker:NAME'", code="invalid_input",
                details={"reason": "no_worker"})
        _segment_or_fail("worker", owner)
        return self.root / "workers" / owner, owner

    def workspace(self, scope: str, ctx: ToolContext, *, write: bool) -> Workspace | None:
        """The scope as a Workspace; None when reading a scope that has nothing in it yet."""
        folder, owner = self.folder(scope, ctx)
        if write and self.ownership and owner is not None and owner != self.caller(ctx):
            raise ToolCallError(
                f"worker {self.caller(ctx)!r} may not change {owner!r}'s memory (ownership is on: "
                "other workers' folders are read-only)", code="denied",
                details={"reason": "not_owner", "owner": owner})
        if not write and not folder.is_dir():
            return None
        return Workspace(folder, create=write)


def _extra(ctx: ToolContext, key: str) -> str | None:
    value = ctx.extra.get(key) if ctx.extra else None
    return str(value) if value is not None else None


def _segment_or_fail(kind: str, value: str) -> None:
    if not _SEGMENT_RE.match(value):
        raise ToolCallError(f"{kind} name {value!r} is not a usable folder name", code="invalid_input")


def _rel(path: str | None) -> str:
    # Models trained on Anthropic's tool write "/memories/notes.md"; a leading slash means the scope root.
    text = (path or "").strip()
    text = text.lstrip("/")
    if text == "memories" or text.startswith("memories/"):
        text = text[len("memories"):].lstrip("/")
    return text or "."


def _shown(scope: str, rel: str) -> str:
    return scope if rel == "." else f"{scope}/{rel}"


def _missing(scope: str, rel: str) -> ToolCallError:
    return ToolCallError(f"The path {_shown(scope, rel)} does not exist. Please provide a valid path.",
                         code="not_found", details={"reason": "no_such_path", "path": rel})


def _size(n: int) -> str:
    if n < 1024:
        return str(n)
    value = float(n)
    for unit in ("K", "M", "G"):
        value /= 1024
        if value < 1024 or unit == "G":
            break
    return f"{value:.1f}{unit}"


def _listing(dir_fd: int, prefix: str, depth: int, out: list[str]) -> None:
    """Two levels of a folder, hidden entries skipped, symlinks shown but never followed."""
    with os.scandir(dir_fd) as entries:
        items = sorted((e for e in entries if not e.name.startswith(".")), key=lambda e: e.name)
    for entry in items:
        if len(out) >= _MAX_LISTED:
            return
        name = f"{prefix}{entry.name}"
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            out.append(f"-\t{name}@")
        elif stat.S_ISDIR(st.st_mode):
            out.append(f"-\t{name}/")
            if depth < 2:
                sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                              dir_fd=dir_fd)
                with owned_fd(sub):
                    _listing(sub, f"{name}/", depth + 1, out)
        else:
            out.append(f"{_size(st.st_size)}\t{name}")


def _read_text(ws: Workspace, rel: str, limit: int) -> str:
    with owned_fd(ws.open(rel, os.O_RDONLY)) as fd:
        data = os.read(fd, limit + 1)
    if len(data) > limit:
        raise ToolCallError(f"{rel} is larger than {limit} bytes; memory files are kept small",
                            code="execution_error", details={"reason": "too_large", "limit": limit})
    return data.decode("utf-8", errors="replace")


def _replace_once(ws: Workspace, scope: str, rel: str, text: str, old: str, new: str) -> str:
    if not old:
        raise ToolCallError("old_str is empty; give the exact text to replace", code="invalid_input")
    count = text.count(old)
    if count == 0:
        raise ToolCallError(
            f"No replacement was performed, old_str `{old}` did not appear verbatim in {_shown(scope, rel)}.",
            code="execution_error", details={"reason": "no_match"})
    if count > 1:
        lines, start = [], 0
        while (at := text.find(old, start)) != -1:
            lines.append(text.count("\n", 0, at) + 1)
            start = at + 1
        raise ToolCallError(
            f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
            f"{', '.join(map(str, lines))}. Please ensure it is unique",
            code="execution_error", details={"reason": "ambiguous_match", "lines": lines})
    ws.atomic_write(rel, text.replace(old, new, 1).encode("utf-8"))
    return f"Edited {_shown(scope, rel)}: replaced 1 occurrence"


def _rename(ws: Workspace, scope: str, old: str, new: str) -> str:
    try:
        spfd, sname = ws.open_parent(old)
    except FileNotFoundError:
        raise _missing(scope, old) from None
    with owned_fd(spfd):
        try:
            os.stat(sname, dir_fd=spfd, follow_symlinks=False)
        except FileNotFoundError:
            raise _missing(scope, old) from None
        dpfd, dname = ws.open_parent(new, create=True)
        with owned_fd(dpfd):
            try:
                os.stat(dname, dir_fd=dpfd, follow_symlinks=False)
            except FileNotFoundError:
                pass
            else:
                raise ToolCallError(f"The destination {_shown(scope, new)} already exists",
                                    code="execution_error", details={"reason": "exists"})
            try:
                os.rename(sname, dname, src_dir_fd=spfd, dst_dir_fd=dpfd)
            except OSError as exc:
                raise ToolCallError(f"cannot move {_shown(scope, old)} to {_shown(scope, new)}: "
                                    f"{exc.strerror}", code="execution_error",
                                    details={"errno": exc.errno}) from None
    return f"Renamed {_shown(scope, old)} to {_shown(scope, new)}"


def toolbox(
    root: str | os.PathLike[str] | None = None,
    project: str | None = None,
    worker: str | None = None,
    ownership: bool = False,
    *,
    max_file_bytes: int = 1_000_000,
) -> Toolbox:
    """Memory tools over `root` (default `~/.toolhall/memory`).

    Args:
        root: The memory folder; `global/`, `projects/<project>/` and `workers/<worker>/` go beneath it.
        project: The project's name (the key of its memory folder) for the `project` scope.
        worker: The worker to use when the call's context names none (`Session(worker=...)` wins).
        ownership: Make other workers' folders read-only: `worker:NAME` writes only by NAME itself.
        max_file_bytes: The largest memory file that may be written or read.

    Raises:
        ConfigError: `project` or `worker` is not a usable folder name.
    """
    _check_name("project", project)
    _check_name("worker", worker)
    base = Path(os.path.expanduser(os.fspath(root))) if root is not None else DEFAULT_ROOT.expanduser()
    mem = _Memory(base, project, worker, ownership, max_file_bytes)
    return Toolbox(_tools(mem), name="memory")


def _tools(mem: _Memory) -> list[Tool]:  # noqa: C901 - one closure per tool, each short
    @tool(read_only=True, destructive=False, idempotent=True, open_world=False, subject="scope")
    def read_memory(scope: Scope, ctx: ToolContext, path: str | None = None) -> str:
        """Read a memory file, or list a memory folder (two levels deep) when `path` is a folder or empty.

        Args:
            scope: `global`, `project`, `worker` (your own), or `worker:NAME` / `project:NAME`.
            path: A path inside the scope, such as `notes/todo.md`; empty lists the whole scope.
        """
        rel = _rel(path)
        ws = mem.workspace(scope, ctx, write=False)
        if ws is None:
            if rel == ".":
                return f"{_shown(scope, rel)} is empty"
            raise _missing(scope, rel)
        try:
            with owned_fd(ws.open_dir(rel)) as dfd:
                lines: list[str] = []
                _listing(dfd, "" if rel == "." else f"{rel}/", 1, lines)
        except NotADirectoryError:
            return _read_text(ws, rel, mem.max_bytes)
        except FileNotFoundError:
            raise _missing(scope, rel) from None
        if not lines:
            return f"{_shown(scope, rel)} is empty"
        return f"Files and folders in {_shown(scope, rel)} (size, path):\n" + "\n".join(lines)

    @tool(destructive=True, idempotent=True, open_world=False, subject="scope")
    def write_memory(scope: Scope, path: str, content: str, ctx: ToolContext) -> str:
        """Create or overwrite a memory file; missing folders are created.

        Args:
            scope: `global`, `project`, `worker` (your own), or `worker:NAME` / `project:NAME`.
            path: A file path inside the scope, such as `notes/todo.md`.
            content: The whole new content of the file.
        """
        rel = _rel(path)
        data = content.encode("utf-8")
        if len(data) > mem.max_bytes:
            raise ToolCallError(f"content is {len(data)} bytes; memory files may hold at most {mem.max_bytes}",
                                code="invalid_input", details={"reason": "too_large"})
        ws = mem.workspace(scope, ctx, write=True)
        assert ws is not None  # noqa: S101 - write=True always returns a workspace
        try:
            written = ws.atomic_write(rel, data)
        except IsADirectoryError:
            raise ToolCallError(f"{_shown(scope, rel)} is a folder, not a file", code="invalid_input") from None
        return f"Wrote {written} bytes to {_shown(scope, rel)}"

    @tool(destructive=True, open_world=False, subject="scope")
    def edit_memory(scope: Scope, path: str, old_str: str, new_str: str, ctx: ToolContext) -> str:
        """Replace the one occurrence of `old_str` in a memory file with `new_str`.

        Args:
            scope: `global`, `project`, `worker` (your own), or `worker:NAME` / `project:NAME`.
            path: A file path inside the scope.
            old_str: Text that appears exactly once in the file.
            new_str: The replacement text.
        """
        rel = _rel(path)
        ws = mem.workspace(scope, ctx, write=True)
        assert ws is not None  # noqa: S101 - write=True always returns a workspace
        try:
            text = _read_text(ws, rel, mem.max_bytes)
        except FileNotFoundError:
            raise _missing(scope, rel) from None
        return _replace_once(ws, scope, rel, text, old_str, new_str)

    @tool(destructive=True, open_world=False, subject="scope")
    def delete_memory(scope: Scope, path: str, ctx: ToolContext) -> str:
        """Delete a memory file, or a memory folder with everything in it.

        Args:
            scope: `global`, `project`, `worker` (your own), or `worker:NAME` / `project:NAME`.
            path: A file or folder inside the scope (not the scope itself).
        """
        rel = _rel(path)
        if rel == ".":
            raise ToolCallError(f"cannot delete the {scope} memory folder itself; name a path inside it",
                                code="invalid_input", details={"reason": "scope_root"})
        ws = mem.workspace(scope, ctx, write=True)
        assert ws is not None  # noqa: S101 - write=True always returns a workspace
        try:
            pfd, name = ws.open_parent(rel)
        except FileNotFoundError:
            raise _missing(scope, rel) from None
        with owned_fd(pfd):
            try:
                st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
            except FileNotFoundError:
                raise _missing(scope, rel) from None
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(name, dir_fd=pfd)
                return f"Deleted folder {_shown(scope, rel)}"
            os.unlink(name, dir_fd=pfd)
        return f"Deleted {_shown(scope, rel)}"

    @tool(destructive=True, open_world=False, subject="scope")
    def rename_memory(scope: Scope, old_path: str, new_path: str, ctx: ToolContext) -> str:
        """Rename or move a memory file or folder within its scope.

        Args:
            scope: `global`, `project`, `worker` (your own), or `worker:NAME` / `project:NAME`.
            old_path: The file or folder to move.
            new_path: Where it goes; it must not exist yet (missing folders are created).
        """
        old, new = _rel(old_path), _rel(new_path)
        if "." in (old, new):
            raise ToolCallError("cannot rename the scope folder itself", code="invalid_input")
        ws = mem.workspace(scope, ctx, write=True)
        assert ws is not None  # noqa: S101 - write=True always returns a workspace
        return _rename(ws, scope, old, new)

    return [read_memory, write_memory, edit_memory, delete_memory, rename_memory]
