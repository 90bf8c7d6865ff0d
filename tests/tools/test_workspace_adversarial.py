"""Attacks on the file tools: every case ends in a clear error or correct behaviour, and nothing outside changes."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from toolhall import Toolbox, Workspace
from toolhall import _openat2 as openat2_mod
from toolhall.tools import files

from .conftest import CANARY_TEXT

SECRET = "secret outside"

TOOLS: dict[str, dict[str, Any]] = {
    "read_file": {},
    "write_file": {"content": "pwned"},
    "append_file": {"content": "pwned"},
    "delete_file": {"recursive": True},
    "file_exists": {},
    "list_files": {},
    "edit_file": {"old_str": "CANARY", "new_str": "pwned"},
    "insert_text": {"line": 0, "text": "pwned"},
    "undo_edit": {},
    "search_files": {"pattern": "CANARY"},
}

# Spellings that name something outside the root: every tool must refuse them as `denied`.
ESCAPES = [
    "../outside/canary.txt",
    "..\\outside\\canary.txt",
    ".\\..\\outside/canary.txt",
    "../../outside/canary.txt",
    "sub/../../outside/canary.txt",
    "./../outside/canary.txt",
    "..//outside//canary.txt",
    "..",
    "../ws2/secret.txt",
    "{tmp}/outside/canary.txt",
    "{tmp}/ws2/secret.txt",
    "{tmp}/ws/../outside/canary.txt",
    "/etc/passwd",
    "/dev/zero",
    "link_out",
    "link_abs",
    "link_chain",
    "linkdir/canary.txt",
    "etc_link/passwd",
    "dev_zero",
    "dangling_out",
    "proc_environ",
    "a\x00b",
    "a" * 5000,
]

# Symlinks planted inside: the link itself is inside, so deleting or checking the *link* is correct behaviour.
LINKS = {"link_out", "link_abs", "link_chain", "etc_link", "dev_zero", "dangling_out", "proc_environ", "linkdir"}

# Odd but inside: literal names, so a missing file or correct behaviour, never an escape.
LITERAL = [
    "%2e%2e/outside/canary.txt",
    "..%2foutside%2fcanary.txt",
    "~/.ssh/id_rsa",
    "....//outside/canary.txt",
]


def build(root: Path, outside: Path) -> None:
    """Plant the traps inside the workspace."""
    (root / "sub").mkdir()
    (root / "sub" / "ok.txt").write_text("inside\n")
    (root / "link_out").symlink_to("../outside/canary.txt")
    (root / "link_abs").symlink_to(outside / "canary.txt")
    (root / "link_chain").symlink_to("sub/up")
    (root / "sub" / "up").symlink_to("../../outside/canary.txt")
    (root / "linkdir").symlink_to(outside)
    (root / "etc_link").symlink_to("/etc")
    (root / "dev_zero").symlink_to("/dev/zero")
    (root / "dangling_out").symlink_to("../outside/new.txt")
    (root / "proc_environ").symlink_to("/proc/self/environ")


def spell(path: str, tmp: Path) -> str:
    """Fill in the temporary folder for absolute spellings."""
    return path.replace("{tmp}", str(tmp))


@pytest.fixture(params=["openat2", "walk"])
def backend_tb(request: pytest.FixtureRequest, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> Toolbox:
    """The toolbox with traps planted, on the kernel backend and on the walking fallback."""
    if request.param == "walk":
        monkeypatch.setattr(openat2_mod, "available", lambda fd: False)
    ws = Workspace(root)
    assert ws.backend == request.param or request.param == "openat2" and ws.backend == "walk"
    build(root, outside)
    return files.toolbox(workspace=ws)


@pytest.mark.usefixtures("guard")
@pytest.mark.parametrize("tool_name", sorted(TOOLS))
@pytest.mark.parametrize("path", ESCAPES)
def test_escaping_path_is_denied(backend_tb: Toolbox, tool_name: str, path: str, tmp_path: Path) -> None:
    """Every tool refuses every spelling that leads outside, as `denied`, and reveals nothing."""
    args = {"path": spell(path, tmp_path), **TOOLS[tool_name]}
    result = backend_tb.call_sync(tool_name, args)
    if path in LINKS and tool_name in {"delete_file", "file_exists"}:
        assert result.ok and result.data["path"] == path, result.output
        assert (tmp_path / "ws" / path).is_symlink() == (tool_name == "file_exists")
        return
    assert not result.ok, result.output
    assert result.error is not None and result.error.code == "denied", result.error
    assert SECRET not in result.output
    assert not (tmp_path / "outside" / "new.txt").exists()


@pytest.mark.usefixtures("guard")
@pytest.mark.parametrize("tool_name", sorted(TOOLS))
@pytest.mark.parametrize("path", LITERAL)
def test_encoded_and_tilde_spellings_stay_literal(backend_tb: Toolbox, tool_name: str, path: str, root: Path) -> None:
    """URL-encoded dots and `~` are literal names inside the root: not found, or created inside."""
    result = backend_tb.call_sync(tool_name, {"path": path, **TOOLS[tool_name]})
    assert SECRET not in result.output
    if result.ok:
        assert tool_name in {"write_file", "append_file", "file_exists"}
        if tool_name != "file_exists":
            assert (root / path.replace("\\", "/")).resolve().is_relative_to(root)
    else:
        assert result.error is not None and result.error.code in {"not_found", "denied"}


def test_prefix_trap_is_refused(root: Path, tmp_path: Path) -> None:
    """`/tmp/ws2/...` is not inside `/tmp/ws` although the string starts the same."""
    ws = Workspace(root)
    with pytest.raises(Exception, match="outside the workspace"):
        ws.resolve(str(tmp_path / "ws2" / "secret.txt"))


@pytest.mark.usefixtures("guard")
def test_fifo_never_blocks(tb: Toolbox, root: Path) -> None:
    """A FIFO is refused at once by every reading and writing tool instead of hanging."""
    os.mkfifo(root / "fifo")
    for name in ("read_file", "write_file", "append_file", "edit_file", "insert_text", "search_files"):
        started = time.monotonic()
        result = tb.call_sync(name, {"path": "fifo", **TOOLS[name]})
        assert not result.ok and result.error is not None and result.error.code == "denied", (name, result)
        assert time.monotonic() - started < 5


@pytest.mark.usefixtures("guard")
def test_unix_socket_is_refused(tb: Toolbox, root: Path) -> None:
    """A socket file in the workspace is not a file to read or append to."""
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(root / "s.sock"))
        for name in ("read_file", "append_file", "edit_file"):
            result = tb.call_sync(name, {"path": "s.sock", **TOOLS[name]})
            assert not result.ok and result.error is not None and result.error.code == "denied", result
    finally:
        sock.close()


@pytest.mark.usefixtures("guard")
def test_hard_link_write_breaks_the_link(tb: Toolbox, root: Path, tmp_path: Path) -> None:
    """write_file replaces a hard-linked file, so the other name (outside) keeps its content."""
    os.link(tmp_path / "ws2" / "secret.txt", root / "hard")
    result = tb.call_sync("write_file", {"path": "hard", "content": "new"})
    assert result.ok
    assert (root / "hard").read_text() == "new"


@pytest.mark.usefixtures("guard")
@pytest.mark.parametrize("tool_name", ["append_file"])
def test_append_refuses_hard_link(tb: Toolbox, root: Path, tmp_path: Path, tool_name: str) -> None:
    """append_file writes in place, so it refuses a file with more than one link and says why."""
    os.link(tmp_path / "ws2" / "secret.txt", root / "hard")
    result = tb.call_sync(tool_name, {"path": "hard", "content": "x"})
    assert not result.ok and result.error is not None and result.error.code == "denied"
    assert "hard links" in result.error.message


@pytest.mark.usefixtures("guard")
@pytest.mark.parametrize("tool_name", ["edit_file", "insert_text"])
def test_edits_through_hard_link_do_not_reach_outside(tb: Toolbox, root: Path, tmp_path: Path, tool_name: str) -> None:
    """Edits replace the file, so a hard link's other name is untouched."""
    os.link(tmp_path / "ws2" / "secret.txt", root / "hard")
    result = tb.call_sync(tool_name, {"path": "hard", **TOOLS[tool_name]})
    assert result.ok, result.output
    assert "pwned" in (root / "hard").read_text()


@pytest.mark.usefixtures("guard")
def test_symlink_inside_root_works(tb: Toolbox, root: Path) -> None:
    """A symlink that stays inside is followed for reads and written at its target."""
    (root / "real.txt").write_text("one\n")
    (root / "alias").symlink_to("real.txt")
    assert tb.call_sync("read_file", {"path": "alias"}).output.endswith("one")
    assert tb.call_sync("write_file", {"path": "alias", "content": "two\n"}).ok
    assert (root / "alias").is_symlink() and (root / "real.txt").read_text() == "two\n"


@pytest.mark.usefixtures("guard")
@pytest.mark.parametrize("backend", ["openat2", "walk"])
def test_symlink_swap_race_never_escapes(
    root: Path, outside: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder swapped with a symlink to outside while tools run never yields outside content or writes."""
    if backend == "walk":
        monkeypatch.setattr(openat2_mod, "available", lambda fd: False)
    tb = files.toolbox(workspace=Workspace(root))
    real = root / "d"
    real.mkdir()
    (real / "canary.txt").write_text("inside\n")
    stop = threading.Event()

    parked, link_tmp = root / "d_real", root / "d_link"

    def swap() -> None:
        while not stop.is_set():
            try:
                os.rename(real, parked)
                link_tmp.symlink_to(outside)
                os.rename(link_tmp, real)
                os.unlink(real)
                os.rename(parked, real)
            except OSError:  # a tool created `d` while it was missing: put things back and go on
                restore()

    def restore() -> None:
        while parked.exists() or link_tmp.is_symlink():
            with contextlib.suppress(OSError):
                if link_tmp.is_symlink():
                    os.unlink(link_tmp)
                if real.is_symlink():
                    os.unlink(real)
                elif real.is_dir() and parked.exists():
                    shutil.rmtree(real, ignore_errors=True)
                if parked.exists():
                    os.rename(parked, real)

    worker = threading.Thread(target=swap)
    worker.start()
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            read = tb.call_sync("read_file", {"path": "d/canary.txt"})
            assert SECRET not in read.output
            tb.call_sync("write_file", {"path": "d/new.txt", "content": "x"})
            tb.call_sync("append_file", {"path": "d/canary.txt", "content": "x"})
    finally:
        stop.set()
        worker.join()
    assert not (outside / "new.txt").exists()


@pytest.mark.usefixtures("guard")
def test_deny_rules_cover_symlinks_to_denied_files(tb: Toolbox, root: Path) -> None:
    """A symlink to `.env` is refused like `.env` itself."""
    (root / ".env").write_text("KEY=1\n")
    (root / "innocent").symlink_to(".env")
    for path in (".env", "innocent", "sub/../.env"):
        result = tb.call_sync("read_file", {"path": path})
        assert not result.ok and result.error is not None and result.error.code == "denied", path


@pytest.mark.usefixtures("guard")
@pytest.mark.parametrize(
    ("tool_name", "path"),
    [
        ("write_file", ".git/hooks/pre-commit"),
        ("write_file", ".git/config"),
        ("append_file", ".git/config"),
        ("delete_file", ".git"),
        ("write_file", ".lore/chains/c1.yaml"),
        ("write_file", ".toolhall/state.db"),
        ("read_file", ".toolhall/state.db"),
        ("read_file", "key.pem"),
        ("read_file", "deep/er/.env"),
        ("edit_file", ".git/config"),
    ],
)
def test_default_deny_rules(tb: Toolbox, root: Path, tool_name: str, path: str) -> None:
    """The default deny globs hold even before the files exist."""
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("CANARY\n")
    (root / "key.pem").write_text("CANARY\n")
    result = tb.call_sync(tool_name, {"path": path, **TOOLS[tool_name]})
    assert not result.ok and result.error is not None and result.error.code == "denied", result.output
    assert (root / ".git" / "config").read_text() == "CANARY\n"


def test_recursive_delete_refuses_tree_holding_denied_paths(tb: Toolbox, root: Path) -> None:
    """Deleting a folder that holds `.git` is refused before anything is removed."""
    (root / "proj" / ".git").mkdir(parents=True)
    (root / "proj" / ".git" / "HEAD").write_text("ref\n")
    (root / "proj" / "a.txt").write_text("a\n")
    result = tb.call_sync("delete_file", {"path": "proj", "recursive": True})
    assert not result.ok and result.error is not None and result.error.code == "denied"
    assert (root / "proj" / "a.txt").exists()


def test_root_cannot_be_deleted(tb: Toolbox, root: Path) -> None:
    """The workspace root itself is never deleted, however it is spelled."""
    for path in (".", "./", "sub/..", str(root)):
        result = tb.call_sync("delete_file", {"path": path, "recursive": True})
        assert not result.ok and result.error is not None and result.error.code == "denied", path
    assert root.is_dir()


def test_read_only_workspace_refuses_every_write(root: Path) -> None:
    """With read_only=True, writing tools are denied and reading tools work."""
    (root / "a.txt").write_text("a\n")
    tb = files.toolbox(workspace=Workspace(root, read_only=True))
    for name in ("write_file", "append_file", "delete_file", "edit_file", "insert_text"):
        args = (
            {"path": "a.txt", **TOOLS[name], "old_str": "a"}
            if name == "edit_file"
            else {"path": "a.txt", **TOOLS[name]}
        )
        result = tb.call_sync(name, args)
        assert not result.ok and result.error is not None and result.error.code == "denied", name
    assert tb.call_sync("read_file", {"path": "a.txt"}).ok
    assert (root / "a.txt").read_text() == "a\n"


@pytest.mark.usefixtures("guard")
def test_long_but_legal_deep_path_works(tb: Toolbox, root: Path) -> None:
    """A 4 KB path of many short folders is written and read back."""
    path = "/".join(["d" * 60] * 60) + "/f.txt"
    assert len(path) > 3600
    assert tb.call_sync("write_file", {"path": path, "content": "deep\n"}).ok
    assert tb.call_sync("read_file", {"path": path}).output.endswith("deep")


@pytest.mark.usefixtures("guard")
def test_non_utf8_file_round_trips(tb: Toolbox, root: Path) -> None:
    """A Latin-1 file is read, and an edit keeps every other byte as it was."""
    (root / "l1.txt").write_bytes(b"caf\xe9\nna\xefve\n")
    assert "café" in tb.call_sync("read_file", {"path": "l1.txt"}).output
    assert tb.call_sync("edit_file", {"path": "l1.txt", "old_str": "naïve", "new_str": "naïf"}).ok
    assert (root / "l1.txt").read_bytes() == b"caf\xe9\nna\xeff\n"


@pytest.mark.usefixtures("guard")
def test_empty_file_and_missing_newline(tb: Toolbox, root: Path) -> None:
    """An empty file reads as empty; a file without a final newline keeps lacking one after an edit."""
    (root / "empty").write_bytes(b"")
    assert "empty" in tb.call_sync("read_file", {"path": "empty"}).output
    (root / "nonl").write_bytes(b"a\nb")
    assert tb.call_sync("edit_file", {"path": "nonl", "old_str": "b", "new_str": "c"}).ok
    assert (root / "nonl").read_bytes() == b"a\nc"
    assert tb.call_sync("insert_text", {"path": "nonl", "line": 2, "text": "d"}).ok
    assert (root / "nonl").read_bytes() == b"a\nc\nd"


@pytest.mark.usefixtures("guard")
def test_crlf_file_stays_crlf(tb: Toolbox, root: Path) -> None:
    """A CRLF file edited with `\\n` text keeps CRLF everywhere."""
    (root / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    assert tb.call_sync("edit_file", {"path": "w.txt", "old_str": "one\ntwo", "new_str": "1\n2\n2b"}).ok
    assert tb.call_sync("insert_text", {"path": "w.txt", "line": 0, "text": "top"}).ok
    assert (root / "w.txt").read_bytes() == b"top\r\n1\r\n2\r\n2b\r\nthree\r\n"


def test_canary_text_constant_is_what_the_guard_protects(outside: Path) -> None:
    """The canary file holds the text the tests look for."""
    assert (outside / "canary.txt").read_text() == CANARY_TEXT
