"""edit_file, insert_text and undo_edit: text-editor semantics, encodings, line endings, per-session undo."""

from __future__ import annotations

import codecs
from pathlib import Path

from toolhall import Toolbox, ToolContext


def test_unique_replacement_shows_numbered_snippet(tb: Toolbox, root: Path) -> None:
    """One match is replaced and the result shows numbered lines around it."""
    (root / "m.py").write_text("def f():\n    return 1\n")
    result = tb.call_sync("edit_file", {"path": "m.py", "old_str": "return 1", "new_str": "return 2"})
    assert result.ok and "     2\t    return 2" in result.output
    assert (root / "m.py").read_text() == "def f():\n    return 2\n"


def test_no_match_names_closest_lines(tb: Toolbox, root: Path) -> None:
    """Zero matches is an error with reason no_match and the closest lines."""
    (root / "m.py").write_text("alpha = 1\nbeta = 2\n")
    result = tb.call_sync("edit_file", {"path": "m.py", "old_str": "beta = 3", "new_str": "x"})
    assert result.error is not None and result.error.details["reason"] == "no_match"  # type: ignore[index]
    assert result.error.details["closest"][0]["line"] == 2  # type: ignore[index]
    assert (root / "m.py").read_text() == "alpha = 1\nbeta = 2\n"


def test_several_matches_name_count_and_lines(tb: Toolbox, root: Path) -> None:
    """Several matches without replace_all is ambiguous_match with every line; replace_all replaces all."""
    (root / "m.txt").write_text("x\ny\nx\nx\n")
    result = tb.call_sync("edit_file", {"path": "m.txt", "old_str": "x", "new_str": "z"})
    assert result.error is not None and result.error.details == {
        "reason": "ambiguous_match",
        "count": 3,
        "lines": [1, 3, 4],
    }
    assert tb.call_sync("edit_file", {"path": "m.txt", "old_str": "x", "new_str": "z", "replace_all": True}).ok
    assert (root / "m.txt").read_text() == "z\ny\nz\nz\n"


def test_empty_or_identical_old_str_is_invalid(tb: Toolbox, root: Path) -> None:
    """An empty old_str or old_str == new_str is refused as invalid input."""
    (root / "m.txt").write_text("x\n")
    for args in ({"old_str": "", "new_str": "y"}, {"old_str": "x", "new_str": "x"}):
        result = tb.call_sync("edit_file", {"path": "m.txt", **args})
        assert result.error is not None and result.error.code == "invalid_input"


def test_insert_text_positions(tb: Toolbox, root: Path) -> None:
    """insert_text puts text after the given line, 0 at the top; past the end is refused."""
    (root / "f.txt").write_text("a\nb\n")
    assert tb.call_sync("insert_text", {"path": "f.txt", "line": 0, "text": "top"}).ok
    assert tb.call_sync("insert_text", {"path": "f.txt", "line": 2, "text": "mid\nmid2\n"}).ok
    assert tb.call_sync("insert_text", {"path": "f.txt", "line": 5, "text": "end"}).ok
    assert (root / "f.txt").read_text() == "top\na\nmid\nmid2\nb\nend\n"
    bad = tb.call_sync("insert_text", {"path": "f.txt", "line": 99, "text": "x"})
    assert bad.error is not None and bad.error.details["lines"] == 6  # type: ignore[index]
    assert tb.call_sync("insert_text", {"path": "f.txt", "line": -1, "text": "x"}).error.code == "invalid_input"  # type: ignore[union-attr]


def test_bom_and_utf16_are_preserved(tb: Toolbox, root: Path) -> None:
    """A UTF-8 BOM and a UTF-16 file keep their encoding through an edit."""
    (root / "bom.txt").write_bytes(codecs.BOM_UTF8 + "héllo\n".encode())
    (root / "w16.txt").write_bytes("one\ntwo\n".encode("utf-16"))
    assert tb.call_sync("edit_file", {"path": "bom.txt", "old_str": "héllo", "new_str": "hi"}).ok
    assert (root / "bom.txt").read_bytes() == codecs.BOM_UTF8 + b"hi\n"
    assert tb.call_sync("edit_file", {"path": "w16.txt", "old_str": "two", "new_str": "deux"}).ok
    assert (root / "w16.txt").read_bytes().decode("utf-16") == "one\ndeux\n"


def test_latin1_file_refuses_unencodable_text(tb: Toolbox, root: Path) -> None:
    """Text the file's encoding cannot hold is refused, the file unchanged."""
    (root / "l1.txt").write_bytes(b"caf\xe9\n")
    result = tb.call_sync("edit_file", {"path": "l1.txt", "old_str": "café", "new_str": "☕"})
    assert result.error is not None and result.error.details["reason"] == "encoding"  # type: ignore[index]
    assert (root / "l1.txt").read_bytes() == b"caf\xe9\n"


def test_binary_file_is_not_edited(tb: Toolbox, root: Path) -> None:
    """The edit tools refuse binary files."""
    (root / "b.bin").write_bytes(b"a\x00b")
    result = tb.call_sync("edit_file", {"path": "b.bin", "old_str": "a", "new_str": "c"})
    assert result.error is not None and result.error.details["reason"] == "binary"  # type: ignore[index]


def test_undo_reverts_edits_in_order_per_session(tb: Toolbox, root: Path) -> None:
    """undo_edit walks back this session's edits of a file; another session has its own history."""
    (root / "f.txt").write_text("v1\n")
    one, two = ToolContext(session_id="s1"), ToolContext(session_id="s2")
    tb.call_sync("edit_file", {"path": "f.txt", "old_str": "v1", "new_str": "v2"}, context=one)
    tb.call_sync("insert_text", {"path": "f.txt", "line": 1, "text": "v3"}, context=one)
    other = tb.call_sync("undo_edit", {"path": "f.txt"}, context=two)
    assert other.error is not None and other.error.code == "not_found"
    assert tb.call_sync("undo_edit", {"path": "f.txt"}, context=one).ok
    assert (root / "f.txt").read_text() == "v2\n"
    assert tb.call_sync("undo_edit", {"path": "f.txt"}, context=one).ok
    assert (root / "f.txt").read_text() == "v1\n"


def test_undo_of_write_file_removes_a_created_file(tb: Toolbox, root: Path) -> None:
    """Undoing the write that created a file removes it."""
    ctx = ToolContext(session_id="s")
    tb.call_sync("write_file", {"path": "n.txt", "content": "x"}, context=ctx)
    assert tb.call_sync("undo_edit", {"path": "n.txt"}, context=ctx).ok
    assert not (root / "n.txt").exists()


def test_undo_refuses_when_file_changed_since(tb: Toolbox, root: Path) -> None:
    """A file changed by someone else after the edit is not clobbered by undo."""
    (root / "f.txt").write_text("a\n")
    ctx = ToolContext(session_id="s")
    tb.call_sync("edit_file", {"path": "f.txt", "old_str": "a", "new_str": "b"}, context=ctx)
    (root / "f.txt").write_text("someone else\n")
    result = tb.call_sync("undo_edit", {"path": "f.txt"}, context=ctx)
    assert result.error is not None and result.error.details == {"reason": "changed"}
    assert (root / "f.txt").read_text() == "someone else\n"


def test_edit_missing_file_is_not_found(tb: Toolbox) -> None:
    """Editing a file that does not exist is not_found."""
    result = tb.call_sync("edit_file", {"path": "nope", "old_str": "a", "new_str": "b"})
    assert result.error is not None and result.error.code == "not_found"
