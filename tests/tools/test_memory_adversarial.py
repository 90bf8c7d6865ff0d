"""Memory paths cannot leave their scope: traversal, symlinks, scope-name injection, swaps."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from toolhall import Toolbox, ToolContext
from toolhall.tools import memory


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Toolbox, Path, Path]:
    """Memory tools, the worker's scope folder, and a secret outside the memory root."""
    root = tmp_path / "mem"
    tb = memory.toolbox(root=root, project="p", worker="w")
    assert tb.call_sync("write_memory", {"scope": "worker", "path": "ok.md", "content": "ok"}).ok
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    return tb, root / "workers" / "w", secret


@pytest.mark.parametrize(
    "path",
    ["../../global/x", "../w2/x", "a/../../x", "..\\..\\x", "/etc/passwd/../../../x", "../../../secret.txt"],
)
def test_traversal_out_of_the_scope_is_denied(setup: tuple[Toolbox, Path, Path], path: str) -> None:
    """`..` climbing out of the scope is refused for reads and writes, and nothing is written."""
    tb, scope, _ = setup
    for name, args in [("read_memory", {}), ("write_memory", {"content": "pwned"}), ("delete_memory", {})]:
        result = tb.call_sync(name, {"scope": "worker", "path": path, **args})
        assert not result.ok, (name, path)
        assert "TOP SECRET" not in result.output
    assert not (scope.parent / "w2").exists()
    assert sorted(p.name for p in scope.parent.parent.iterdir()) == ["workers"]


def test_symlinked_file_pointing_outside_is_not_read_or_written(setup: tuple[Toolbox, Path, Path]) -> None:
    """A symlink in memory to a file outside the root neither leaks it nor lets a write reach it."""
    tb, scope, secret = setup
    (scope / "link.md").symlink_to(secret)
    read = tb.call_sync("read_memory", {"scope": "worker", "path": "link.md"})
    assert not read.ok and read.error.code == "denied" and "TOP SECRET" not in read.output
    tb.call_sync("write_memory", {"scope": "worker", "path": "link.md", "content": "overwritten"})
    tb.call_sync("edit_memory", {"scope": "worker", "path": "link.md", "old_str": "TOP", "new_str": "X"})
    assert secret.read_text() == "TOP SECRET"


def test_symlinked_folder_in_the_middle_is_not_followed_out(setup: tuple[Toolbox, Path, Path]) -> None:
    """`dir -> /outside` in the middle of a path is refused for read, write, rename and delete."""
    tb, scope, secret = setup
    (scope / "out").symlink_to(secret.parent)
    assert not tb.call_sync("read_memory", {"scope": "worker", "path": "out/secret.txt"}).ok
    assert not tb.call_sync("write_memory", {"scope": "worker", "path": "out/new.txt", "content": "x"}).ok
    assert not tb.call_sync("delete_memory", {"scope": "worker", "path": "out/secret.txt"}).ok
    assert not tb.call_sync("rename_memory", {"scope": "worker", "old_path": "out/secret.txt",
                                               "new_path": "stolen.txt"}).ok
    assert not tb.call_sync("rename_memory", {"scope": "worker", "old_path": "ok.md",
                                               "new_path": "out/planted.md"}).ok
    assert secret.read_text() == "TOP SECRET"
    assert not (secret.parent / "new.txt").exists() and not (secret.parent / "planted.md").exists()


def test_listing_shows_symlinks_without_following_them(setup: tuple[Toolbox, Path, Path]) -> None:
    """A folder listing marks a symlink with @ and never descends into where it points."""
    tb, scope, secret = setup
    (scope / "out").symlink_to(secret.parent)
    listing = tb.call_sync("read_memory", {"scope": "worker"}).output
    assert "out@" in listing and "secret.txt" not in listing


def test_deleting_a_symlink_removes_the_link_not_the_target(setup: tuple[Toolbox, Path, Path]) -> None:
    """delete_memory on a symlink (to a file or a folder outside) unlinks only the link."""
    tb, scope, secret = setup
    (scope / "f").symlink_to(secret)
    (scope / "d").symlink_to(secret.parent)
    assert tb.call_sync("delete_memory", {"scope": "worker", "path": "f"}).ok
    assert tb.call_sync("delete_memory", {"scope": "worker", "path": "d"}).ok
    assert secret.read_text() == "TOP SECRET"
    assert not (scope / "f").is_symlink() and not (scope / "d").is_symlink()


def test_dangling_symlink_is_not_created_through(setup: tuple[Toolbox, Path, Path], tmp_path: Path) -> None:
    """Writing to a dangling symlink replaces the link inside the scope; nothing appears outside."""
    tb, scope, _ = setup
    target = tmp_path / "evil.txt"
    (scope / "dangling.md").symlink_to(target)
    tb.call_sync("write_memory", {"scope": "worker", "path": "dangling.md", "content": "x"})
    assert not target.exists()


def test_scope_names_cannot_carry_paths(setup: tuple[Toolbox, Path, Path]) -> None:
    """`worker:../..` and similar are rejected by the scope schema before any path is built."""
    tb, _, _ = setup
    for scope in ("worker:../..", "worker:a/b", "project:..", "worker:", "global:x", "worker:.hidden"):
        result = tb.call_sync("write_memory", {"scope": scope, "path": "x", "content": "x"})
        assert result.error.code == "invalid_input", scope


def test_context_worker_name_cannot_escape(setup: tuple[Toolbox, Path, Path]) -> None:
    """A session worker name with a slash or `..` is refused rather than used as a folder."""
    tb, scope, _ = setup
    for worker in ("../evil", "a/b", ".."):
        result = tb.call_sync("write_memory", {"scope": "worker", "path": "x", "content": "x"},
                              context=ToolContext(worker=worker))
        assert not result.ok, worker
    assert sorted(p.name for p in scope.parent.iterdir()) == ["w"]


def test_control_characters_and_nul_are_refused(setup: tuple[Toolbox, Path, Path]) -> None:
    """Paths with NUL or control characters are refused with a clear error."""
    tb, _, _ = setup
    for path in ("a\x00b", "a\nb"):
        result = tb.call_sync("write_memory", {"scope": "worker", "path": path, "content": "x"})
        assert not result.ok and "control character" in result.error.message


def test_symlink_swap_race_never_reads_outside(setup: tuple[Toolbox, Path, Path]) -> None:
    """While a thread swaps a folder with a symlink to the outside, reads never return the secret."""
    tb, scope, secret = setup
    inside = scope / "d"
    inside.mkdir()
    (inside / "secret.txt").write_text("inside")
    real = scope / "d_real"
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            os.rename(inside, real)
            inside.symlink_to(secret.parent)
            inside.unlink()
            os.rename(real, inside)

    thread = threading.Thread(target=swap)
    thread.start()
    try:
        outputs = [tb.call_sync("read_memory", {"scope": "worker", "path": "d/secret.txt"}).output
                   for _ in range(300)]
    finally:
        stop.set()
        thread.join()
    assert not any("TOP SECRET" in out for out in outputs)
    assert any(out == "inside" for out in outputs)
