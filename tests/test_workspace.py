"""Workspace: confinement, deny globs, opens and atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolhall import DeniedPathError, OutsideWorkspaceError, Workspace, WorkspaceError, _openat2


@pytest.fixture(params=["openat2", "walk"])
def ws(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    """A workspace on each confinement backend."""
    if request.param == "walk":
        monkeypatch.setattr(_openat2, "available", lambda fd: False)
    root = tmp_path / "root"
    root.mkdir()
    (root / "sub").mkdir()
    (root / "sub" / "a.txt").write_text("a\n")
    (tmp_path / "out.txt").write_text("outside\n")
    return Workspace(root)


def test_backend_is_openat2_on_this_kernel(tmp_path: Path) -> None:
    """The kernel primitive is used where it exists (Linux 5.6+)."""
    assert Workspace(tmp_path).backend == "openat2"


def test_relative_normalises_spellings(ws: Workspace) -> None:
    """Relative, dotted, backslashed and absolute-inside spellings give one relative path."""
    for path in ("sub/a.txt", "./sub/a.txt", "sub//a.txt", "sub\\a.txt", "x/../sub/a.txt", str(ws.root / "sub/a.txt")):
        assert ws.relative(path) == "sub/a.txt"
    assert ws.relative(".") == "." and ws.relative(str(ws.root)) == "."


@pytest.mark.parametrize("path", ["", "a\x00b", "a\nb", "x" * 300, "a/" * 2100])
def test_malformed_paths_are_refused(ws: Workspace, path: str) -> None:
    """Empty, NUL/control characters and over-long paths or names raise WorkspaceError."""
    with pytest.raises(WorkspaceError):
        ws.relative(path)


def test_climbing_out_is_outside(ws: Workspace, tmp_path: Path) -> None:
    """`..` above the root and absolute paths elsewhere raise OutsideWorkspaceError."""
    for path in ("..", "../out.txt", "sub/../../out.txt", str(tmp_path / "out.txt"), "/etc/passwd"):
        with pytest.raises(OutsideWorkspaceError):
            ws.resolve(path)


def test_resolve_follows_inside_symlinks_only(ws: Workspace, tmp_path: Path) -> None:
    """An inside symlink resolves to its target; one leading out raises."""
    (ws.root / "in").symlink_to("sub/a.txt")
    (ws.root / "abs_in").symlink_to(ws.root / "sub")
    (ws.root / "out").symlink_to(tmp_path / "out.txt")
    assert ws.resolve("in") == ws.root / "sub/a.txt"
    assert ws.resolve("abs_in/a.txt") == ws.root / "sub/a.txt"
    assert ws.resolve("sub/missing/deeper") == ws.root / "sub/missing/deeper"
    with pytest.raises(OutsideWorkspaceError):
        ws.resolve("out")


def test_open_reads_and_refuses_escapes(ws: Workspace, tmp_path: Path) -> None:
    """open() gives a descriptor for inside files and refuses symlinked parents leading out."""
    fd = ws.open("sub/a.txt", os.O_RDONLY)
    try:
        assert os.read(fd, 10) == b"a\n"
    finally:
        os.close(fd)
    (ws.root / "outdir").symlink_to(tmp_path)
    with pytest.raises(OutsideWorkspaceError):
        ws.open("outdir/out.txt", os.O_RDONLY)


def test_open_refuses_fifo_and_folder_as_file(ws: Workspace) -> None:
    """Special files are refused without blocking; a folder is not a file."""
    os.mkfifo(ws.root / "p")
    with pytest.raises(DeniedPathError, match="FIFO"):
        ws.open("p", os.O_RDONLY)
    with pytest.raises(DeniedPathError, match="folder"):
        ws.open("sub", os.O_RDONLY)
    os.close(ws.open_dir("sub"))


def test_open_create_never_follows_a_dangling_symlink(ws: Workspace, tmp_path: Path) -> None:
    """O_CREAT through a dangling symlink (even one pointing inside) is refused."""
    (ws.root / "dangling").symlink_to("sub/new.txt")
    with pytest.raises(DeniedPathError):
        ws.open("dangling", os.O_WRONLY | os.O_CREAT)
    assert not (ws.root / "sub/new.txt").exists()


def test_default_and_extra_deny_globs(tmp_path: Path) -> None:
    """User globs extend the defaults; reads and writes are checked separately."""
    ws = Workspace(tmp_path, deny_read=["secrets/**"], deny_write=["*.lock"])
    assert "**/.env" in ws.deny_read and "secrets/**" in ws.deny_read
    assert ".git/**" in ws.deny_write and "*.lock" in ws.deny_write
    for path in (".env", "a/b/.env", "k.pem", "secrets/x", "secrets", ".toolhall/state.db"):
        with pytest.raises(DeniedPathError):
            ws.resolve(path)
    for path in (".git/config", ".git", "poetry.lock", ".lore/chains/c.yaml"):
        ws.resolve(path)
        with pytest.raises(DeniedPathError):
            ws.resolve(path, write=True)


def test_atomic_write_creates_replaces_and_keeps_mode(ws: Workspace) -> None:
    """atomic_write makes parents, keeps an existing file's mode and leaves no temporary file."""
    assert ws.atomic_write("new/dir/f.txt", b"one") == 3
    target = ws.root / "new/dir/f.txt"
    target.chmod(0o600)
    assert ws.atomic_write("new/dir/f.txt", b"two!") == 4
    assert target.read_bytes() == b"two!"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(os.listdir(target.parent)) == ["f.txt"]


def test_atomic_write_through_inside_symlink_writes_target(ws: Workspace) -> None:
    """A symlink that stays inside is kept and its target replaced."""
    (ws.root / "alias").symlink_to("sub/a.txt")
    ws.atomic_write("alias", b"b\n")
    assert (ws.root / "alias").is_symlink() and (ws.root / "sub/a.txt").read_text() == "b\n"


def test_read_only_workspace(tmp_path: Path) -> None:
    """read_only refuses every write with DeniedPathError."""
    ws = Workspace(tmp_path, read_only=True)
    with pytest.raises(DeniedPathError, match="read-only"):
        ws.atomic_write("a.txt", b"x")
    ws.resolve("a.txt")


def test_coerce_and_root_checks(tmp_path: Path) -> None:
    """coerce passes a Workspace through and wraps a path; a missing root is an error unless created."""
    ws = Workspace(tmp_path)
    assert Workspace.coerce(ws) is ws
    assert Workspace.coerce(str(tmp_path)).root == tmp_path.resolve()
    with pytest.raises(WorkspaceError, match="not an existing folder"):
        Workspace(tmp_path / "missing")
    assert Workspace(tmp_path / "made", create=True).root.is_dir()
    with pytest.raises(TypeError):
        Workspace.coerce(42)  # type: ignore[arg-type]


def test_symlinked_root_accepts_both_spellings(tmp_path: Path) -> None:
    """A root given through a symlink accepts absolute paths under either spelling."""
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    ws = Workspace(tmp_path / "alias")
    assert ws.root == tmp_path / "real"
    assert ws.relative(str(tmp_path / "alias" / "x")) == "x"
    assert ws.relative(str(tmp_path / "real" / "x")) == "x"
