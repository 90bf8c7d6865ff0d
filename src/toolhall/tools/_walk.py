"""Walking a folder beneath a Workspace (never following symlinks), with .gitignore rules and globs."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import pathspec

from .._errors import WorkspaceError
from .._workspace import Workspace

__all__ = ["Entry", "Matcher", "compile_glob", "walk"]

_IGNORE_FILE = ".gitignore"
_MAX_IGNORE_BYTES = 1 << 20


@dataclass(slots=True)
class Entry:
    """One thing found in a walk."""

    rel: str
    """Path relative to the workspace root."""
    kind: str
    """`file`, `folder`, `symlink` or `other`."""
    size: int
    target: str | None = None
    """A symlink's target text (never followed)."""


Matcher = Callable[[str], bool]


def _glob_part(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _expand_braces(pattern: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    return [x for alt in match.group(1).split(",") for x in _expand_braces(head + alt + tail)]


@lru_cache(maxsize=256)
def compile_glob(pattern: str, *, basename_if_no_slash: bool = False) -> Matcher:
    """A matcher for a glob (`*`, `?`, `[...]`, `{a,b}`, `**` across folders) against a relative path.

    With `basename_if_no_slash`, a glob without `/` matches the file name at any depth (ripgrep's
    `--glob` and .gitignore behave so); otherwise it is anchored at the walk's start, as shell globs are.
    """
    alts = _expand_braces(pattern.strip().removeprefix("./"))
    regex = "|".join(_glob_part(alt) for alt in alts)
    compiled = re.compile(f"(?:{regex})", re.DOTALL)
    if basename_if_no_slash and all("/" not in alt for alt in alts):
        return lambda rel: compiled.fullmatch(rel.rsplit("/", 1)[-1]) is not None
    return lambda rel: compiled.fullmatch(rel) is not None


def glob_depth(pattern: str) -> int | None:
    """How many folder levels a glob can reach (None when it has `**`)."""
    alts = _expand_braces(pattern)
    if any("**" in alt for alt in alts):
        return None
    return max(alt.strip("/").count("/") + 1 for alt in alts)


class _Ignores:
    """The .gitignore rules in force in one folder: each file's rules apply relative to its folder."""

    __slots__ = ("rules",)

    def __init__(self, rules: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()) -> None:
        self.rules = rules

    def with_file(self, base: str, data: bytes) -> _Ignores:
        spec = pathspec.GitIgnoreSpec.from_lines(data.decode("utf-8", "replace").splitlines())
        return _Ignores((*self.rules, (base, spec)))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        probe_tail = "/" if is_dir else ""
        for base, spec in self.rules:
            sub = rel if base == "." else rel[len(base) + 1 :]
            if spec.match_file(sub + probe_tail):
                return True
        return False


def _read_ignore(ws: Workspace, rel: str) -> bytes | None:
    path = _IGNORE_FILE if rel == "." else f"{rel}/{_IGNORE_FILE}"
    try:
        fd = ws.open(path, os.O_RDONLY)
    except (OSError, WorkspaceError):  # a missing, denied or odd .gitignore is simply not used
        return None
    try:
        return os.read(fd, _MAX_IGNORE_BYTES)
    finally:
        os.close(fd)


def walk(
    ws: Workspace,
    start: str,
    *,
    include_hidden: bool = False,
    respect_gitignore: bool = True,
    max_depth: int | None = None,
    skip_denied: bool = True,
    should_stop: Callable[[], bool] | None = None,
) -> Iterator[Entry]:
    """Yield what lies beneath `start` (depth first, names sorted), never following a symlink.

    Skipped: hidden names unless `include_hidden`; `.git` and ignored paths when `respect_gitignore`
    (the root's .gitignore, then those from `start` down); anything a workspace read rule denies.
    Each folder is opened afresh beneath the root, so only one descriptor is open at a time.
    """
    start = ws.relative(start)
    ignores = _Ignores()
    if respect_gitignore and start != ".":
        data = _read_ignore(ws, ".")
        if data is not None:
            ignores = ignores.with_file(".", data)
    stack: list[tuple[str, _Ignores, int]] = [(start, ignores, 0)]
    while stack:
        if should_stop is not None and should_stop():
            return
        rel, ignores, depth = stack.pop()
        fd = _open_folder(ws, rel)
        if fd is None:
            continue
        try:
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
            if respect_gitignore and any(e.name == _IGNORE_FILE for e in entries):
                data = _read_ignore(ws, rel)
                if data is not None:
                    ignores = ignores.with_file(rel, data)
            subdirs: list[str] = []
            for entry in entries:
                found = _entry(ws, entry, rel, fd, include_hidden, respect_gitignore, ignores, skip_denied)
                if found is None:
                    continue
                yield found
                if found.kind == "folder" and (max_depth is None or depth + 1 < max_depth):
                    subdirs.append(found.rel)
        finally:
            os.close(fd)
        stack.extend((sub, ignores, depth + 1) for sub in reversed(subdirs))


def _open_folder(ws: Workspace, rel: str) -> int | None:
    try:
        return ws.open_dir(rel)
    except (OSError, WorkspaceError):  # removed, or swapped for something denied, since it was listed
        return None


def _entry(
    ws: Workspace,
    entry: os.DirEntry[str],
    rel: str,
    fd: int,
    include_hidden: bool,
    respect_gitignore: bool,
    ignores: _Ignores,
    skip_denied: bool,
) -> Entry | None:
    name = entry.name
    if not include_hidden and name.startswith("."):
        return None
    if respect_gitignore and name == ".git":
        return None
    child = name if rel == "." else f"{rel}/{name}"
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    is_dir = stat.S_ISDIR(st.st_mode)
    if respect_gitignore and ignores.rules and ignores.ignored(child, is_dir):
        return None
    if skip_denied and ws.is_denied(child):
        return None
    if is_dir:
        return Entry(child, "folder", 0)
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(name, dir_fd=fd)
        except OSError:
            target = None
        return Entry(child, "symlink", 0, target)
    return Entry(child, "file" if stat.S_ISREG(st.st_mode) else "other", st.st_size)
