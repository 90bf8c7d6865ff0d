"""read_file, write_file, append_file, delete_file, file_exists and list_files through the public API."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from toolhall import Image, Toolbox, ToolContext, Workspace
from toolhall.tools import files

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def test_toolbox_has_the_design_names_and_annotations(tb: Toolbox) -> None:
    """The ten tools exist in order, declare annotations and take `path` as their subject."""
    assert tb.names() == [
        "read_file",
        "write_file",
        "append_file",
        "delete_file",
        "file_exists",
        "list_files",
        "edit_file",
        "insert_text",
        "undo_edit",
        "search_files",
    ]
    for name in ("read_file", "file_exists", "list_files", "search_files"):
        assert tb[name].annotations.read_only and tb[name].annotations.idempotent
    assert tb["delete_file"].annotations.destructive and not tb["delete_file"].annotations.read_only
    assert not tb["append_file"].annotations.idempotent
    assert all(tb[n].subjects({"path": "a/b"}) == ["a/b"] for n in tb.names())
    assert "ctx" not in tb["read_file"].input_schema["properties"]


def test_read_file_numbers_lines_and_reads_ranges(tb: Toolbox, root: Path) -> None:
    """Lines come numbered cat -n style; offset/limit pick a 1-based range and say the file goes on."""
    (root / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert tb.call_sync("read_file", {"path": "f.txt"}).output.splitlines()[0] == "     1\tline 1"
    out = tb.call_sync("read_file", {"path": "f.txt", "offset": 4, "limit": 2}).output
    assert out.splitlines()[:2] == ["     4\tline 4", "     5\tline 5"]
    assert "offset=6" in out
    tail = tb.call_sync("read_file", {"path": "f.txt", "offset": 9}).output
    assert tail == "     9\tline 9\n    10\tline 10"


def test_read_file_errors(tb: Toolbox, root: Path) -> None:
    """Missing file, offset past the end, bad offset and a folder give clear codes."""
    (root / "f.txt").write_text("a\nb\n")
    (root / "d").mkdir()
    assert tb.call_sync("read_file", {"path": "nope.txt"}).error.code == "not_found"  # type: ignore[union-attr]
    past = tb.call_sync("read_file", {"path": "f.txt", "offset": 5})
    assert past.error is not None and past.error.code == "invalid_input" and "2 lines" in past.error.message
    assert tb.call_sync("read_file", {"path": "f.txt", "offset": 0}).error.code == "invalid_input"  # type: ignore[union-attr]
    assert not tb.call_sync("read_file", {"path": "d"}).ok


def test_large_file_needs_a_range(root: Path) -> None:
    """Over max_read_bytes, a whole read is refused with the size; a range works and is capped."""
    tb = files.toolbox(workspace=root, max_read_bytes=1000)
    (root / "big.txt").write_text("x" * 50 + "\n" + "y" * 5000 + "\n" + "z\n" * 100)
    refused = tb.call_sync("read_file", {"path": "big.txt"})
    assert refused.error is not None and refused.error.details["reason"] == "too_large"  # type: ignore[index]
    assert "offset" in refused.error.message
    ranged = tb.call_sync("read_file", {"path": "big.txt", "offset": 1, "limit": 3}).output
    assert ranged.startswith("     1\t" + "x" * 50) and "output stopped" in ranged


def test_binary_is_refused_and_images_come_back(tb: Toolbox, root: Path) -> None:
    """A binary file is refused naming its type and size; a PNG is returned as an image part."""
    (root / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    (root / "dot.png").write_bytes(PNG)
    refused = tb.call_sync("read_file", {"path": "blob.bin"})
    assert refused.error is not None and refused.error.details == {
        "reason": "binary",
        "mime_type": "application/octet-stream",
        "size": 30,
    }
    image = tb.call_sync("read_file", {"path": "dot.png"})
    assert image.ok and any(isinstance(p, Image) and p.mime_type == "image/png" for p in image.content)


def test_long_lines_are_cut(root: Path) -> None:
    """Lines over max_line_chars are cut with a marker."""
    tb = files.toolbox(workspace=root, max_line_chars=10)
    (root / "l.txt").write_text("a" * 50 + "\n")
    assert "line cut at 10 of 50" in tb.call_sync("read_file", {"path": "l.txt"}).output


def test_write_file_creates_replaces_and_reports(tb: Toolbox, root: Path) -> None:
    """write_file makes folders, returns bytes written, and keeps an existing mode."""
    first = tb.call_sync("write_file", {"path": "a/b/c.txt", "content": "héllo"})
    assert first.data == {"path": "a/b/c.txt", "bytes_written": 6, "created": True}
    (root / "a/b/c.txt").chmod(0o640)
    second = tb.call_sync("write_file", {"path": "a/b/c.txt", "content": "bye"})
    assert second.data["created"] is False  # type: ignore[index]
    assert (root / "a/b/c.txt").read_text() == "bye" and (root / "a/b/c.txt").stat().st_mode & 0o777 == 0o640


def test_write_size_cap(root: Path) -> None:
    """Content over max_write_bytes is refused as invalid input."""
    tb = files.toolbox(workspace=root, max_write_bytes=10)
    result = tb.call_sync("write_file", {"path": "x", "content": "x" * 11})
    assert result.error is not None and result.error.code == "invalid_input"
    assert not (root / "x").exists()


def test_append_file(tb: Toolbox, root: Path) -> None:
    """append_file creates then appends in place and reports the size."""
    assert tb.call_sync("append_file", {"path": "log/a.log", "content": "one\n"}).ok
    result = tb.call_sync("append_file", {"path": "log/a.log", "content": "two\n"})
    assert result.data == {"path": "log/a.log", "bytes_appended": 4, "size": 8}
    assert (root / "log/a.log").read_text() == "one\ntwo\n"


def test_delete_file(tb: Toolbox, root: Path) -> None:
    """Files are deleted; folders need recursive; a missing path is not_found."""
    (root / "f").write_text("x")
    (root / "d" / "e").mkdir(parents=True)
    (root / "d" / "e" / "g").write_text("x")
    assert tb.call_sync("delete_file", {"path": "f"}).data["deleted"] == "file"  # type: ignore[index]
    assert tb.call_sync("delete_file", {"path": "d"}).error.code == "invalid_input"  # type: ignore[union-attr]
    assert tb.call_sync("delete_file", {"path": "d", "recursive": True}).data["entries"] == 3  # type: ignore[index]
    assert not (root / "d").exists()
    assert tb.call_sync("delete_file", {"path": "f"}).error.code == "not_found"  # type: ignore[union-attr]


def test_file_exists(tb: Toolbox, root: Path) -> None:
    """file_exists reports existence, type and size without failing on a missing path."""
    (root / "f").write_text("abc")
    (root / "d").mkdir()
    assert tb.call_sync("file_exists", {"path": "f"}).data == {"path": "f", "exists": True, "type": "file", "size": 3}
    assert tb.call_sync("file_exists", {"path": "d"}).data["type"] == "folder"  # type: ignore[index]
    assert tb.call_sync("file_exists", {"path": "no/such"}).data["exists"] is False  # type: ignore[index]


def test_list_files_sorted_filtered_and_capped(root: Path) -> None:
    """Listing is sorted, hides dotfiles and ignored paths by default, matches globs and notes the cap."""
    tb = files.toolbox(workspace=root, list_limit=3)
    for rel in ("b.py", "a.txt", "src/m.py", "src/n.js", ".hidden", "build/out.o"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    (root / ".gitignore").write_text("build/\n")
    (root / "ln").symlink_to("a.txt")
    full = files.toolbox(workspace=root).call_sync("list_files", {}).output.splitlines()
    assert full == [
        "a.txt  (1 bytes)",
        "b.py  (1 bytes)",
        "ln -> a.txt (symlink)",
        "src/",
        "src/m.py  (1 bytes)",
        "src/n.js  (1 bytes)",
    ]
    capped = tb.call_sync("list_files", {}).output.splitlines()
    assert len(capped) == 4 and capped[-1].startswith("[3 of 6 entries shown")
    py = files.toolbox(workspace=root).call_sync("list_files", {"pattern": "**/*.{py,js}"}).output
    assert py.splitlines() == ["b.py  (1 bytes)", "src/m.py  (1 bytes)", "src/n.js  (1 bytes)"]
    top = files.toolbox(workspace=root).call_sync("list_files", {"pattern": "*.py"}).output
    assert top.splitlines() == ["b.py  (1 bytes)"]
    every = (
        files.toolbox(workspace=root)
        .call_sync("list_files", {"include_hidden": True, "respect_gitignore": False})
        .output
    )
    assert ".hidden" in every and "build/out.o" in every


def test_list_files_of_a_file_is_invalid(tb: Toolbox, root: Path) -> None:
    """list_files on a file says it is a file."""
    (root / "f").write_text("x")
    result = tb.call_sync("list_files", {"path": "f"})
    assert result.error is not None and result.error.code == "invalid_input"


def test_session_workspace_is_used_when_none_is_configured(root: Path) -> None:
    """Without workspace=, tools use the workspace on the call's context, and fail clearly without one."""
    (root / "f").write_text("hi\n")
    tb = files.toolbox()
    ctx = ToolContext(workspace=Workspace(root))
    assert tb.call_sync("read_file", {"path": "f"}, context=ctx).output == "     1\thi"
    missing = tb.call_sync("read_file", {"path": "f"})
    assert missing.error is not None and missing.error.details == {"reason": "no_workspace"}


def test_bad_options_are_rejected(root: Path) -> None:
    """Factory options below 1 raise naming the option."""
    with pytest.raises(ValueError, match="max_read_bytes"):
        files.toolbox(workspace=root, max_read_bytes=0)


def test_line_range_streams_from_a_large_file(tb: Toolbox, root: Path) -> None:
    """A range near the end of a multi-megabyte file is read correctly across chunk boundaries."""
    with open(root / "big.txt", "w") as fh:
        for i in range(1, 300_001):
            fh.write(f"row {i}\n")
    assert os.path.getsize(root / "big.txt") > 2 << 20
    out = tb.call_sync("read_file", {"path": "big.txt", "offset": 299_999, "limit": 5}).output
    assert out.splitlines() == ["299999\trow 299999", "300000\trow 300000"]
