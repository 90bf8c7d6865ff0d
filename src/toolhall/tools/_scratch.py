"""Private per-command temp folders (the command's TMPDIR and HOME), cheap enough for the hot path.

A fresh `mkdtemp` + `rmdir` per command cost 2-4 ms on this machine's ext4 under load (the `rmdir` is the
slow half), more than running `true` itself. So each toolbox gets one private root (mode 0700, created on
first use, removed when the toolbox is collected or the interpreter exits), and each command gets a
folder of its own beneath it. A folder the command left empty and untouched goes back to a small free
list and is handed to a later command; anything else is deleted. Concurrent commands never share one.
"""

from __future__ import annotations

import itertools
import os
import shutil
import stat
import tempfile
import threading
import weakref

__all__ = ["ScratchDirs"]

_MODE = 0o700


class ScratchDirs:
    """A pool of private, empty folders under one root; `acquire()` one per command, then `release()` it."""

    def __init__(self, *, prefix: str = "toolhall-shell-", keep: int = 16) -> None:
        self._prefix = prefix
        self._keep = keep
        self._root: str | None = None
        self._free: list[str] = []
        self._serial = itertools.count(1)  # next() is atomic under the GIL: safe across call_sync threads
        self._lock = threading.Lock()

    @property
    def root(self) -> str | None:
        """The private root, or None before the first `acquire()`."""
        return self._root

    def acquire(self) -> str:
        """An empty folder only this command uses (0700, owned by us)."""
        while self._free:
            path = self._free.pop()
            if _pristine(path):  # a temp cleaner or a stray process may have touched it since
                return path
            _discard(path)
        path = f"{self._make_root()}/{next(self._serial)}"
        try:
            os.mkdir(path, _MODE)
        except FileNotFoundError:  # the root itself was removed (a /tmp cleaner): start a new one
            self._root = None
            path = f"{self._make_root()}/{next(self._serial)}"
            os.mkdir(path, _MODE)
        os.chmod(path, _MODE)  # mkdir's mode is masked by the umask; the command needs rwx
        return path

    def release(self, path: str) -> None:
        """Take a folder back: kept for reuse when the command left it empty, deleted otherwise."""
        if len(self._free) < self._keep and _pristine(path) and not os.listdir(path):
            self._free.append(path)
            return
        _discard(path)

    def _make_root(self) -> str:
        with self._lock:
            if self._root is None:
                root = tempfile.mkdtemp(prefix=self._prefix)
                weakref.finalize(self, shutil.rmtree, root, ignore_errors=True)  # also runs at exit
                self._root = root
            return self._root


def _pristine(path: str) -> bool:
    """Still our own plain folder with its original mode and no subfolders (one `lstat`)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == _MODE and st.st_uid == os.geteuid()
            and st.st_nlink == 2)


def _discard(path: str) -> None:
    """Delete what is at `path` without following it (a command may have swapped in a symlink)."""
    try:
        os.unlink(path)  # a symlink or file in the folder's place; a real folder raises
    except IsADirectoryError:
        shutil.rmtree(path, ignore_errors=True)
    except OSError:
        pass  # already gone
