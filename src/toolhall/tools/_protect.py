"""Workspace paths a command may read but never change, and how the Landlock backend keeps them so.

A planted `.git/hooks/pre-commit`, or a `core.hooksPath` / `core.fsmonitor` line in `.git/config`, runs on
the host the next time anyone there uses git: a way out of any sandbox. `.toolhall` holds the agent's own
state (call log, approvals). bwrap binds the existing ones read-only over themselves (`_isolation`).

Landlock rules only ever add access, and a right granted on a folder holds for everything beneath it, so
"the workspace, except .git/hooks" cannot be written as one rule. `landlock_grants` writes it as many:
the workspace root is readable only, every top-level entry except `.git` and `.toolhall` is writable in
full, and inside `.git` every entry except `hooks` and `config` is writable in full. The price is exact:
no right may sit on the root or on `.git` themselves, since it would reach the protected paths too, so a
command cannot create, delete or rename entries directly in the workspace root or directly in `.git`
(git's `index.lock`, `HEAD.lock` and `config.lock` live there, so git can read but not commit). Results
say so (`fixed_dirs`). A workspace holding neither `.git` nor `.toolhall` stays writable as one rule.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ._isolation import PROTECTED

__all__ = ["Grants", "bwrap_read_only", "grants_for", "landlock_grants"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Grants:
    """Landlock rules standing in for "the whole workspace is writable"."""

    read: list[str]
    """Absolute paths granted read access only (beneath them, what `write` grants is writable too)."""
    write: list[str]
    """Absolute paths granted every right (never followed when a symlink)."""
    read_only: list[str]
    """Workspace-relative protected paths that exist and that commands cannot change."""
    fixed_dirs: list[str]
    """Workspace-relative folders whose own entries cannot be created, removed or renamed."""


def landlock_grants(workspace: str) -> Grants:
    """The rules for `workspace` (an absolute, resolved path), computed just before a command starts.

    Entries that are symlinks get no grant of their own: writing through one reaches only what its
    target's own grants allow.
    """
    tops = {rel.split("/", 1)[0] for rel in PROTECTED}
    names = _entries(workspace)
    if names is None or not tops & set(names):
        return Grants(read=[], write=[workspace], read_only=[], fixed_dirs=[])
    write: list[str] = []
    read_only: list[str] = []
    fixed = ["."]
    for name in names:
        path = os.path.join(workspace, name)
        if name not in tops:
            write.append(path)
            continue
        inner = {rel.split("/", 1)[1] for rel in PROTECTED if rel.startswith(f"{name}/")}
        subs = _entries(path) if inner else None
        if subs is None:  # wholly protected (.toolhall), or a `.git` file pointing elsewhere
            read_only.append(name)
            continue
        fixed.append(name)
        for sub in subs:
            if sub in inner:
                read_only.append(f"{name}/{sub}")
            else:
                write.append(os.path.join(path, sub))
    return Grants(read=[workspace], write=write, read_only=sorted(read_only), fixed_dirs=fixed)


def _entries(path: str) -> list[str] | None:
    """The names in a real (not symlinked) folder, or None when it is not one."""
    try:
        if os.path.islink(path) or not os.path.isdir(path):
            return None
        return sorted(os.listdir(path))
    except OSError:
        return None


def bwrap_read_only(workspace: str) -> Grants:
    """What bwrap protects (its read-only binds of the existing paths), in the same shape for results."""
    kept = [rel for rel in PROTECTED if _bindable(os.path.join(workspace, rel))]
    return Grants(read=[], write=[workspace], read_only=kept, fixed_dirs=[])


def _bindable(path: str) -> bool:
    return os.path.exists(path) and not os.path.islink(path)


def grants_for(backend: str, workspace: str) -> Grants | None:
    """What `backend` protects in `workspace` for the command about to start (None: nothing, unconfined)."""
    if backend == "landlock":
        return landlock_grants(workspace)
    return bwrap_read_only(workspace) if backend == "bwrap" else None
