"""ScratchDirs: private per-command temp folders, reused only when left empty and untouched."""

from __future__ import annotations

import gc
import os
import shutil
import stat
from pathlib import Path

from toolhall.tools._scratch import ScratchDirs


def test_folders_are_private_and_distinct_while_held() -> None:
    """Folders held at the same time differ, live under one 0700 root, and are 0700 themselves."""
    pool = ScratchDirs()
    a, b = pool.acquire(), pool.acquire()
    assert a != b and os.path.dirname(a) == os.path.dirname(b) == pool.root
    for path in (a, b, pool.root):
        assert path is not None and stat.S_IMODE(os.stat(path).st_mode) == 0o700


def test_an_empty_folder_is_reused_and_a_used_one_is_deleted() -> None:
    """A folder given back empty comes back on the next acquire; one holding files is removed."""
    pool = ScratchDirs()
    a = pool.acquire()
    pool.release(a)
    assert pool.acquire() == a
    Path(a, "left").write_text("secret")
    pool.release(a)
    assert not os.path.exists(a)
    b = pool.acquire()
    assert b != a and os.listdir(b) == []


def test_a_folder_whose_mode_changed_is_not_reused(tmp_path: Path) -> None:
    """A command that chmods its TMPDIR (or swaps it for a symlink) does not pass that on."""
    pool = ScratchDirs()
    a, b = pool.acquire(), pool.acquire()
    os.chmod(a, 0o777)
    pool.release(a)
    assert not os.path.exists(a)
    os.rmdir(b)
    os.symlink(tmp_path, b)
    pool.release(b)
    assert not os.path.lexists(b) and tmp_path.exists()


def test_a_removed_root_is_created_again() -> None:
    """When a /tmp cleaner deletes the root, the next acquire starts a fresh one."""
    pool = ScratchDirs()
    pool.release(pool.acquire())
    assert pool.root is not None
    shutil.rmtree(pool.root)
    path = pool.acquire()
    assert os.path.isdir(path) and os.listdir(path) == []


def test_the_root_is_removed_with_the_pool() -> None:
    """Dropping the toolbox (and its pool) deletes the root and everything in it."""
    pool = ScratchDirs()
    Path(pool.acquire(), "f").write_text("x")
    root = pool.root
    assert root is not None
    del pool
    gc.collect()
    assert not os.path.exists(root)
