"""Fixtures for the file-tool tests: a workspace with a canary folder beside it that must never change."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolhall import Toolbox, Workspace
from toolhall.tools import files

CANARY_TEXT = "CANARY-7f3a secret outside the workspace\n"


def snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    """Every path under `folder` with its mode and content digest (symlinks not followed)."""
    out: dict[str, tuple[int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else ""
            out[str(p.relative_to(folder))] = (st.st_mode, digest)
    return out


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace holding the canary file."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "canary.txt").write_text(CANARY_TEXT)
    return folder


@pytest.fixture
def root(tmp_path: Path, outside: Path) -> Path:
    """The workspace root (tmp/ws), next to tmp/ws2 to catch the prefix trap."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "ws2").mkdir()
    (tmp_path / "ws2" / "secret.txt").write_text(CANARY_TEXT)
    return ws


@pytest.fixture
def tb(root: Path) -> Toolbox:
    """The file toolbox on the workspace."""
    return files.toolbox(workspace=Workspace(root))


@pytest.fixture
def guard(tmp_path: Path, outside: Path, root: Path) -> Iterator[None]:
    """Fail the test if anything outside the workspace changed."""
    before = snapshot(outside), snapshot(tmp_path / "ws2")
    yield
    assert (snapshot(outside), snapshot(tmp_path / "ws2")) == before, "something outside the workspace changed"
