"""Workspace: the one place where paths a tool receives are resolved, confined beneath a root.

Containment is done by the kernel, not by string checks: every open goes through
`openat2(root_fd, rel, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` where the kernel has it, and otherwise
through a per-component walk that holds a directory descriptor at each step, opens with `O_NOFOLLOW`
and follows symlinks itself (refusing any that lead outside). Either way there is no check-then-open
race: what is opened is what was checked. Deny globs (`deny_read`, `deny_write`) are tool policy on top
of that boundary, checked on both the spelled path and the path the kernel actually reached.

Example:
    ```python
    ws = Workspace("/srv/project", deny_read=["secrets/**"])
    fd = ws.open("src/app.py", os.O_RDONLY)
    ws.atomic_write("notes/todo.md", b"- ship it\\n")
    ```
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import re
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import pathspec

from . import _openat2
from ._errors import DeniedPathError, OutsideWorkspaceError, WorkspaceError

__all__ = ["DEFAULT_DENY_READ", "DEFAULT_DENY_WRITE", "Workspace"]

DEFAULT_DENY_READ: Final = ("**/.env", "**/*.pem", ".toolhall/**")
"""Globs never readable (secrets, and the state folder)."""
DEFAULT_DENY_WRITE: Final = (".git/**", "**/.git/**", ".lore/chains/**", ".toolhall/**")
"""Globs never writable: version control internals (nested repositories' too), the chain tools' files,
and the state folder."""

MAX_PATH_BYTES: Final = 4096
MAX_NAME_BYTES: Final = 255
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_TMP_SUFFIX: Final = ".toolhall-tmp"
_CONTROL: Final = re.compile("[\x00-\x1f\x7f]")


class _Rules:
    """Compiled deny globs (gitignore syntax) that remember which glob matched."""

    __slots__ = ("globs", "_any", "_each", "_cache")

    def __init__(self, globs: Iterable[str]) -> None:
        self.globs = tuple(dict.fromkeys(globs))
        self._any = pathspec.PathSpec.from_lines("gitignore", self.globs)
        self._each = [(g, pathspec.PathSpec.from_lines("gitignore", [g])) for g in self.globs]
        self._cache: dict[str, str | None] = {}

    def match(self, rel: str) -> str | None:
        """The first glob matching `rel`, or a child of `rel` when it is a folder holding denied paths."""
        if rel == ".":
            return None
        try:
            return self._cache[rel]
        except KeyError:
            pass
        found = None
        for probe in (rel, rel + "/\x00"):
            if self._any.match_file(probe):
                found = next(g for g, spec in self._each if spec.match_file(probe))
                break
        if len(self._cache) > 8192:  # bounded: a listing of a huge tree must not grow it without end
            self._cache.clear()
        self._cache[rel] = found
        return found


class Workspace:
    """A folder that tools may use, and nothing outside it.

    Args:
        root: The workspace folder (must exist unless `create=True`).
        deny_read: Extra globs (gitignore syntax, relative to the root) that may not be read;
            they extend `DEFAULT_DENY_READ`.
        deny_write: Extra globs that may not be written or deleted; they extend `DEFAULT_DENY_WRITE`.
        read_only: Refuse every write.
        create: Create the root folder (and its parents) when it does not exist.

    Example:
        ```python
        ws = Workspace(tmp_path)
        ws.resolve("src/../README.md")  # -> tmp_path / "README.md"
        ws.resolve("../etc/passwd")     # raises OutsideWorkspaceError
        ```
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        deny_read: Iterable[str] = (),
        deny_write: Iterable[str] = (),
        read_only: bool = False,
        create: bool = False,
    ) -> None:
        given = os.path.abspath(os.fspath(root))
        if create:
            os.makedirs(given, exist_ok=True)
        real = os.path.realpath(given)
        if not os.path.isdir(real):
            raise WorkspaceError(f"workspace root {given!r} is not an existing folder")
        self.root: Path = Path(real)
        """The root folder, fully resolved."""
        self.read_only = read_only
        """Whether every write is refused."""
        self._aliases = tuple(dict.fromkeys((real, given)))
        self._read_rules = _Rules([*DEFAULT_DENY_READ, *deny_read])
        self._write_rules = _Rules([*DEFAULT_DENY_WRITE, *deny_write])
        self._root_fd = os.open(real, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self._use_openat2 = _openat2.available(self._root_fd)

    # -- construction helpers -------------------------------------------------------------------

    @classmethod
    def coerce(cls, ws_or_path: Workspace | str | os.PathLike[str]) -> Workspace:
        """Return `ws_or_path` if it is a Workspace, else a Workspace rooted there with default rules."""
        if isinstance(ws_or_path, Workspace):
            return ws_or_path
        if isinstance(ws_or_path, str | os.PathLike):
            return cls(ws_or_path)
        raise TypeError(f"expected a Workspace or a folder path, got {type(ws_or_path).__name__}")

    @property
    def deny_read(self) -> tuple[str, ...]:
        """Every glob that may not be read (defaults first)."""
        return self._read_rules.globs

    @property
    def deny_write(self) -> tuple[str, ...]:
        """Every glob that may not be written (defaults first)."""
        return self._write_rules.globs

    @property
    def backend(self) -> str:
        """How paths are confined: `"openat2"` (kernel) or `"walk"` (per-component O_NOFOLLOW walk)."""
        return "openat2" if self._use_openat2 else "walk"

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r}, read_only={self.read_only})"

    def __del__(self) -> None:
        with contextlib.suppress(AttributeError, OSError):
            os.close(self._root_fd)

    # -- paths ----------------------------------------------------------------------------------

    def relative(self, path: str | os.PathLike[str]) -> str:
        """The path relative to the root in POSIX form (`"."` for the root itself), checked lexically.

        Raises:
            OutsideWorkspaceError: The path is absolute elsewhere or climbs out with `..`.
            WorkspaceError: The path is empty, too long, or holds NUL or control characters.
        """
        text = os.fspath(path)
        if not isinstance(text, str):
            raise WorkspaceError("path must be text, not bytes")
        if not text:
            raise WorkspaceError("path is empty; use '.' for the workspace root")
        control = _CONTROL.search(text)
        if control is not None:
            bad = control.group()
            raise WorkspaceError(f"path contains a control character ({bad!r}); paths may not hold NUL or controls")
        if len(text.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
            raise WorkspaceError(f"path is too long ({len(text)} characters; at most {MAX_PATH_BYTES} bytes)")
        # A backslash is a Windows separator to a model, so `..\\x` must not become a file named "..\x".
        text = text.replace("\\", "/")
        if text.startswith("/"):
            text = self._strip_root(text)
        rel = posixpath.normpath(text)
        if rel == ".." or rel.startswith("../"):
            raise OutsideWorkspaceError(f"path {os.fspath(path)!r} is outside the workspace (it climbs above the root)")
        for part in rel.split("/"):
            if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
                raise WorkspaceError(f"path component {part[:40]!r}... is too long (at most {MAX_NAME_BYTES} bytes)")
        return rel

    def _strip_root(self, text: str) -> str:
        norm = posixpath.normpath(text)
        for alias in self._aliases:
            if norm == alias:
                return "."
            if norm.startswith(alias.rstrip("/") + "/"):
                return norm[len(alias.rstrip("/")) + 1 :]
        raise OutsideWorkspaceError(f"path {text!r} is outside the workspace {str(self.root)!r}")

    def resolve(self, path: str | os.PathLike[str], *, write: bool = False) -> Path:
        """The absolute path beneath the root that `path` leads to, following symlinks that stay inside.

        Raises:
            OutsideWorkspaceError: The path (or a symlink on it) leads outside the root.
            DeniedPathError: The path, or where it leads, matches a deny glob (or writes are refused).
            WorkspaceError: The path is malformed (empty, too long, NUL byte).
        """
        rel = self.relative(path)
        self.check(rel, write=write)
        real = self._real_relative(rel)
        if real != rel:
            self.check(real, write=write)
        return self.root if real == "." else self.root / real

    def check(self, rel: str, *, write: bool = False) -> None:
        """Refuse a (normalised, relative) path that a deny glob or `read_only` forbids."""
        if write and self.read_only:
            raise DeniedPathError(f"cannot write {rel!r}: the workspace is read-only")
        if rel == "." and write:
            return
        rule = self._read_rules.match(rel)
        if rule is None and write:
            rule = self._write_rules.match(rel)
        if rule is not None:
            action = "writing" if write else "reading"
            raise DeniedPathError(f"{action} {rel!r} is denied by the workspace rule {rule!r}")

    def is_denied(self, rel: str, *, write: bool = False) -> bool:
        """Whether `check` would refuse this relative path (for skipping entries in listings)."""
        try:
            self.check(rel, write=write)
        except DeniedPathError:
            return True
        return False

    def _real_relative(self, rel: str) -> str:
        """Where `rel` really leads, relative to the root; missing trailing parts are kept as spelled."""
        head, tail = rel, ""
        while True:
            try:
                fd, real = self._open_beneath(head, os.O_PATH)
            except FileNotFoundError:
                if head == ".":
                    raise
                parent, name = posixpath.split(head)
                tail = name if not tail else f"{name}/{tail}"
                head = parent or "."
                continue
            except NotADirectoryError:
                return rel
            os.close(fd)
            if not tail:
                return real
            return tail if real == "." else f"{real}/{tail}"

    # -- opening ---------------------------------------------------------------------------------

    def _open_beneath(self, rel: str, flags: int, mode: int = 0o644) -> tuple[int, str]:
        """Open `rel` beneath the root; return the descriptor and the real relative path it reached."""
        if self._use_openat2:
            direct = _openat2.open_direct(self._root_fd, rel, flags, mode)
            if direct is not None:
                return direct, rel
            fd = _openat2.open_beneath(self._root_fd, rel, flags, mode)
            try:
                return fd, self._fd_relative(fd)
            except BaseException:
                os.close(fd)
                raise
        return _openat2.walk(self._root_fd, self._aliases[0], rel, flags, mode)

    def _fd_relative(self, fd: int) -> str:
        """The path an open descriptor refers to, relative to the root (asserted to be beneath it)."""
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            # Without /proc the kernel-confined open still holds; only the deny re-check needs the name.
            return "."
        root = self._aliases[0]
        if target == root:
            return "."
        if target.startswith(root.rstrip("/") + "/"):
            return target[len(root.rstrip("/")) + 1 :]
        raise OutsideWorkspaceError(f"opened {target!r}, which is outside the workspace")

    def open(self, path: str | os.PathLike[str], flags: int, mode: int = 0o644, *, write: bool = False) -> int:
        """Open a regular file (or, with `O_DIRECTORY`, a folder) beneath the root; return the descriptor.

        Symlinks are followed only while they stay inside the root. Devices, FIFOs and sockets are refused
        (they would block or never end). A call that creates a file never follows a final symlink.

        Raises:
            OutsideWorkspaceError, DeniedPathError, WorkspaceError: as for `resolve`.
            FileNotFoundError, IsADirectoryError, NotADirectoryError: as `os.open` would.
        """
        write = write or bool(flags & _WRITE_FLAGS)
        rel = self.relative(path)
        self.check(rel, write=write)
        if flags & os.O_CREAT and not flags & os.O_EXCL:
            try:
                return self._open_checked(rel, flags & ~os.O_CREAT, mode, write, path)
            except FileNotFoundError:
                pass
        if flags & os.O_CREAT:
            return self._create(rel, flags, mode)
        return self._open_checked(rel, flags, mode, write, path)

    def _open_checked(self, rel: str, flags: int, mode: int, write: bool, shown: object) -> int:
        # O_NONBLOCK so a FIFO cannot hang the open; blocking mode is restored for regular files.
        fd, real = self._open_beneath(rel, flags | os.O_NONBLOCK | os.O_NOCTTY, mode)
        try:
            if real != rel:
                self.check(real, write=write)
            st = os.fstat(fd)
            want_dir = bool(flags & os.O_DIRECTORY)
            if not (stat.S_ISDIR(st.st_mode) if want_dir else stat.S_ISREG(st.st_mode)):
                raise DeniedPathError(f"{rel!r} is {_kind(st.st_mode)}, not a regular file; refusing to open it")
            if not flags & os.O_NONBLOCK:
                os.set_blocking(fd, True)
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _create(self, rel: str, flags: int, mode: int) -> int:
        if rel == ".":
            raise IsADirectoryError(errno.EISDIR, "the workspace root is a folder", ".")
        parent, name = posixpath.split(rel)
        pfd, preal = self._open_beneath(parent or ".", os.O_PATH | os.O_DIRECTORY)
        try:
            self.check(name if preal == "." else f"{preal}/{name}", write=True)
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY, mode, dir_fd=pfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise DeniedPathError(
                    f"{rel!r} is a symlink to a missing file; refusing to create through it"
                ) from None
            raise
        finally:
            os.close(pfd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise DeniedPathError(f"{rel!r} is {_kind(st.st_mode)}, not a regular file")
        if not flags & os.O_NONBLOCK:
            os.set_blocking(fd, True)
        return fd

    def open_dir(self, path: str | os.PathLike[str]) -> int:
        """Open a folder beneath the root for reading (usable with `os.scandir(fd)`, `dir_fd=`)."""
        return self.open(path, os.O_RDONLY | os.O_DIRECTORY)

    def open_parent(self, path: str | os.PathLike[str], *, create: bool = False) -> tuple[int, str]:
        """Open the folder holding `path` (an `O_PATH` descriptor) for a write; return it and the final name.

        The final component is not followed, so the caller acts on the name itself (unlink, rename).
        With `create=True` missing folders are made, one component at a time beneath the root.
        """
        rel = self.relative(path)
        self.check(rel, write=True)
        if rel == ".":
            raise DeniedPathError("the workspace root itself cannot be replaced or removed")
        parent, name = posixpath.split(rel)
        pfd, preal = self._open_dir_for_write(parent or ".", create)
        try:
            self.check(name if preal == "." else f"{preal}/{name}", write=True)
        except BaseException:
            os.close(pfd)
            raise
        return pfd, name

    def _open_dir_for_write(self, rel: str, create: bool) -> tuple[int, str]:
        try:
            return self._open_beneath(rel, os.O_PATH | os.O_DIRECTORY)
        except FileNotFoundError:
            if not create or rel == ".":
                raise
        parent, name = posixpath.split(rel)
        pfd, preal = self._open_dir_for_write(parent or ".", True)
        try:
            self.check(name if preal == "." else f"{preal}/{name}", write=True)
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=pfd)
            fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=pfd)
        finally:
            os.close(pfd)
        return fd, name if preal == "." else f"{preal}/{name}"

    # -- writing -----------------------------------------------------------------------------------

    def atomic_write(self, path: str | os.PathLike[str], data: bytes) -> int:
        """Replace a file's content atomically (temporary file, fsync, rename); return bytes written.

        Parent folders are created. An existing file keeps its mode; a symlink that stays inside the root is
        written at its target. Because the file is replaced, never written in place, a hard link to a file
        elsewhere is broken rather than written through. A crash leaves the old content or the new.
        """
        rel = self.resolve(path, write=True).relative_to(self.root).as_posix()
        pfd, name = self.open_parent(rel, create=True)
        try:
            keep_mode = self._existing_mode(pfd, name)
            tmp = f".{name[:200]}.{secrets.token_hex(4)}{_TMP_SUFFIX}"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(tmp, flags, 0o644 if keep_mode is None else keep_mode, dir_fd=pfd)
            try:
                written = _write_all(fd, data)
                if keep_mode is not None:
                    os.fchmod(fd, keep_mode)  # the umask may have narrowed it on create
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.rename(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=pfd)
                raise
            _fsync_dir(pfd)
            return written
        finally:
            os.close(pfd)

    @staticmethod
    def _existing_mode(pfd: int, name: str) -> int | None:
        try:
            st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", name)
        if stat.S_ISLNK(st.st_mode):
            # Only a symlink whose target vanished (or escapes) gets here; it is replaced, not followed.
            return None
        if not stat.S_ISREG(st.st_mode):
            raise DeniedPathError(f"{name!r} is {_kind(st.st_mode)}, not a regular file")
        return stat.S_IMODE(st.st_mode)

    def stat(self, path: str | os.PathLike[str]) -> os.stat_result:
        """`lstat` of the path's final component, reached beneath the root (symlinks are reported as such)."""
        rel = self.relative(path)
        self.check(rel)
        if rel == ".":
            return os.stat(self._root_fd)
        parent, name = posixpath.split(rel)
        pfd, preal = self._open_beneath(parent or ".", os.O_PATH | os.O_DIRECTORY)
        try:
            self.check(name if preal == "." else f"{preal}/{name}")
            return os.stat(name, dir_fd=pfd, follow_symlinks=False)
        finally:
            os.close(pfd)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symlink"),
    ):
        if test(mode):
            return name
    return "a special file"


def _write_all(fd: int, data: bytes) -> int:
    view = memoryview(data)
    total = 0
    while total < len(view):
        total += os.write(fd, view[total:])
    return total


def _fsync_dir(dfd: int) -> None:
    # An O_PATH descriptor cannot be fsynced; reopen the folder itself to make the rename durable.
    try:
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
