"""`toolhall serve` keeps its generated token, so a restarted server keeps its clients."""

from __future__ import annotations

import stat
from pathlib import Path

from toolhall.cli._serve import _saved_token


def test_token_is_made_once_private_and_reused(tmp_path: Path) -> None:
    """The first start writes a 0600 token file; later starts read it back instead of making a new one."""
    path = tmp_path / ".toolhall" / "token"
    made = iter(["first", "second"])
    assert _saved_token(path, lambda: next(made)) == "first"
    assert _saved_token(path, lambda: next(made)) == "first"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_empty_token_file_is_replaced(tmp_path: Path) -> None:
    """A blank token file is never used as a token."""
    path = tmp_path / "token"
    path.write_text("\n", encoding="utf-8")
    assert _saved_token(path, lambda: "fresh") == "fresh"
