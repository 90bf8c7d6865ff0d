"""Kernel-confined opens beneath a folder descriptor: `openat2(RESOLVE_BENEATH)` and a walking fallback.

Both return a descriptor for exactly what was checked, so a symlink swapped in between a check and the
open cannot redirect it (the research note measured 221 escapes in 5 s for realpath-then-open, and 0 for
either of these). Used only by `_workspace.py`.
"""

from __future__ import annotations

import ctypes
import errno
import os
import posixpath
import stat
import sys
from typing import Final

from ._errors import OutsideWorkspaceError, WorkspaceError

__all__ = ["available", "open_beneath", "open_direct", "walk"]

_SYS_OPENAT2: Final = 437  # the same number on every architecture using the unified syscall table
_RESOLVE_NO_MAGICLINKS: Final = 0x02
_RESOLVE_NO_SYMLINKS: Final = 0x04
_RESOLVE_BENEATH: Final = 0x08
_MAX_LINKS: Final = 40
_RETRIES: Final = 16


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_syscall = None
if sys.platform == "linux":
    try:
        _libc = ctypes.CDLL(None, use_errno=True)
        _syscall = _libc.syscall
        _syscall.restype = ctypes.c_long
    except (OSError, AttributeError):  # pragma: no cover - a libc without syscall(); the walk is used
        _syscall = None


class _RacedError(Exception):
    """A component changed between the lstat and the open; the walk starts again."""


def _raw(dir_fd: int, rel: str, flags: int, mode: int, resolve: int = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS) -> int:
    if _syscall is None:
        raise OSError(errno.ENOSYS, "openat2 is not available")
    how = _OpenHow(
        flags | os.O_CLOEXEC,
        mode if flags & os.O_CREAT or (flags & os.O_TMPFILE) == os.O_TMPFILE else 0,
        resolve,
    )
    fd = int(
        _syscall(
            ctypes.c_long(_SYS_OPENAT2),
            ctypes.c_int(dir_fd),
            ctypes.c_char_p(os.fsencode(rel)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), rel)
    return fd


def available(dir_fd: int) -> bool:
    """Whether `openat2` works here (Linux 5.6+, not blocked by a seccomp filter)."""
    try:
        os.close(_raw(dir_fd, ".", os.O_PATH | os.O_DIRECTORY, 0))
    except OSError:
        return False
    return True


def open_direct(root_fd: int, rel: str, flags: int, mode: int = 0o644) -> int | None:
    """Open `rel` beneath `root_fd` if no symlink lies on the way (the common case); else None.

    With no symlink followed, the descriptor is exactly at `rel`, so callers can skip asking /proc where it is.
    """
    for _ in range(_RETRIES):
        try:
            return _raw(root_fd, rel, flags, mode, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS | _RESOLVE_NO_SYMLINKS)
        except OSError as exc:
            if exc.errno == errno.EAGAIN:
                continue
            if exc.errno in (errno.ELOOP, errno.EXDEV):
                return None
            _reraise(exc, rel)
    return None


def open_beneath(root_fd: int, rel: str, flags: int, mode: int = 0o644) -> int:
    """Open `rel` beneath `root_fd`, following only symlinks that stay beneath it.

    `openat2` refuses every absolute symlink, even one pointing back inside; those (EXDEV) are handed to
    the walk, which follows them when they land inside and refuses them otherwise.
    """
    for _ in range(_RETRIES):
        try:
            return _raw(root_fd, rel, flags, mode)
        except OSError as exc:
            if exc.errno == errno.EAGAIN:  # a concurrent rename somewhere in the tree; the kernel asks to retry
                continue
            if exc.errno == errno.EXDEV:
                break
            _reraise(exc, rel)
    fd, _ = walk(root_fd, _root_of(root_fd), rel, flags, mode)
    return fd


def _root_of(root_fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{root_fd}")


def _reraise(exc: OSError, rel: str) -> None:
    if exc.errno == errno.ELOOP:
        raise WorkspaceError(f"path {rel!r} goes through too many symlinks (or a /proc magic link)") from None
    if exc.errno == errno.ENAMETOOLONG:
        raise WorkspaceError(f"path {rel[:60]!r}... is too long for the file system") from None
    if exc.errno == errno.ENXIO:
        raise WorkspaceError(f"{rel!r} is a socket or a device without a reader; refusing to open it") from None
    raise exc


def walk(root_fd: int, root: str, rel: str, flags: int, mode: int = 0o644) -> tuple[int, str]:
    """Open `rel` beneath `root_fd` one component at a time; return the descriptor and the real path.

    Each step holds a descriptor of the folder reached so far and opens the next name with `O_NOFOLLOW`.
    Symlinks are read and resolved here: relative ones continue from the current folder, `..` pops a held
    descriptor (never the kernel's `..`), absolute ones must lie under `root` (the root's real path).
    """
    for _ in range(_RETRIES):
        try:
            return _walk_once(root_fd, root, rel, flags, mode)
        except _RacedError:
            continue
        except OSError as exc:
            _reraise(exc, rel)
    raise WorkspaceError(f"path {rel!r} kept changing while it was opened; try again")


def _walk_once(root_fd: int, root: str, rel: str, flags: int, mode: int) -> tuple[int, str]:
    todo = [p for p in reversed(rel.split("/")) if p not in ("", ".")]
    fds = [os.dup(root_fd)]
    names: list[str] = []
    links = 0
    try:
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if not names:
                    raise OutsideWorkspaceError(f"path {rel!r} leads outside the workspace (through a symlink)")
                os.close(fds.pop())
                names.pop()
                continue
            st = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > _MAX_LINKS:
                    raise OSError(errno.ELOOP, "too many symlinks", rel)
                target = os.readlink(name, dir_fd=fds[-1])
                if target.startswith("/"):
                    target = _inside(root, target, rel)
                    for fd in fds[1:]:
                        os.close(fd)
                    del fds[1:]
                    names.clear()
                todo.extend(p for p in reversed(target.split("/")) if p not in ("", "."))
                continue
            if todo:
                fds.append(_open_dir(fds[-1], name, st))
                names.append(name)
                continue
            return _open_final(fds[-1], name, flags, mode), "/".join([*names, name])
        fd = os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=fds[-1])
        return fd, "/".join(names) or "."
    finally:
        for fd in fds:
            os.close(fd)


def _inside(root: str, target: str, rel: str) -> str:
    norm = posixpath.normpath(target)
    if norm == root:
        return "."
    prefix = root.rstrip("/") + "/"
    if norm.startswith(prefix):
        return norm[len(prefix) :]
    raise OutsideWorkspaceError(f"path {rel!r} leads outside the workspace (a symlink points to {target!r})")


def _open_dir(dir_fd: int, name: str, seen: os.stat_result) -> int:
    try:
        fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOENT) or (exc.errno == errno.ENOTDIR and stat.S_ISDIR(seen.st_mode)):
            raise _RacedError from None
        raise
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)
        raise _RacedError
    return fd


def _open_final(dir_fd: int, name: str, flags: int, mode: int) -> int:
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # it became a symlink after the lstat
            raise _RacedError from None
        raise
    if flags & os.O_PATH and stat.S_ISLNK(os.fstat(fd).st_mode):
        os.close(fd)
        raise _RacedError
    return fd
