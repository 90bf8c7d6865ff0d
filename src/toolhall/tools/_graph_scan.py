"""Finding the source files to index and naming their modules."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import pathspec

__all__ = ["DEFAULT_EXCLUDE", "module_names", "scan"]

DEFAULT_EXCLUDE = (
    ".git/",
    ".hg/",
    ".svn/",
    ".toolhall/",
    ".venv/",
    "venv/",
    "env/",
    "node_modules/",
    "__pycache__/",
    ".tox/",
    ".nox/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".pytest_cache/",
    "build/",
    "dist/",
    "site-packages/",
)
"""Gitignore-style patterns never indexed (environments, caches, build output, toolhall's own state)."""

_SUFFIXES = (".py",)


def _spec(root: Path, exclude: Iterable[str], use_gitignore: bool) -> pathspec.GitIgnoreSpec:
    lines = list(DEFAULT_EXCLUDE) + list(exclude)
    gitignore = root / ".gitignore"
    if use_gitignore and gitignore.is_file():
        lines += gitignore.read_text("utf-8", "replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def scan(
    root: Path,
    *,
    exclude: Iterable[str] = (),
    use_gitignore: bool = True,
    max_file_bytes: int = 2_000_000,
    allowed: Callable[[str], bool] | None = None,
) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """Source files beneath `root`: relative POSIX path → (mtime_ns, size), plus skipped paths.

    Symlinks are never followed (a link could lead out of the workspace); files larger than
    `max_file_bytes`, paths with control characters and paths `allowed` refuses are skipped.
    """
    spec = _spec(root, exclude, use_gitignore)
    found: dict[str, tuple[int, int]] = {}
    skipped: list[str] = []
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(root / rel_dir if rel_dir else root))
        except OSError:
            skipped.append(rel_dir)
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if not spec.match_file(rel + "/"):
                    stack.append(rel)
                continue
            if not entry.name.endswith(_SUFFIXES) or spec.match_file(rel):
                continue
            stat = entry.stat(follow_symlinks=False)
            if stat.st_size > max_file_bytes or any(ord(c) < 32 for c in rel):
                skipped.append(rel)
            elif allowed is not None and not allowed(rel):
                skipped.append(rel)
            else:
                found[rel] = (stat.st_mtime_ns, stat.st_size)
    return found, sorted(skipped)


def module_names(paths: Iterable[str]) -> dict[str, tuple[str, bool]]:
    """Module qname and is-package flag of each file.

    A file's module name starts below the nearest folder that is not a package (has no
    `__init__.py`), so `src/pkg/mod.py` is `pkg.mod`. When two files claim the same name, the first
    in path order keeps it and the others are named by their full path.
    """
    paths = sorted(paths)
    present = set(paths)
    out: dict[str, tuple[str, bool]] = {}
    taken: set[str] = set()
    for path in paths:
        parts = path[: -len(".py")].split("/")
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        start = len(parts) - 1 if not is_package else len(parts)
        while start > 0 and "/".join([*parts[:start], "__init__.py"]) in present:
            start -= 1
        if is_package and start == len(parts):
            start -= 1
        names = [p for p in parts[start:] if p]
        qname = ".".join(names) or "__init__"
        if qname in taken:
            qname = ".".join(p for p in parts if p)
        taken.add(qname)
        out[path] = (qname, is_package)
    return out
