"""Artifact tools: frontmatter kept byte for byte, metadata edits, listing, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolhall import Toolbox
from toolhall.tools import artifacts

TRICKY = (
    "---\n"
    "# Planning doc: keep this comment\n"
    "title: \"Q3: roadmap — 'draft'\"   # quoted, with a colon\n"
    "status: draft\n"
    "tags: [infra, 'db']  # flow list\n"
    "owners:\n"
    "  - alice   # lead\n"
    "  - bob\n"
    "\n"
    "anchors:\n"
    "  base: &base {retries: 3}\n"
    "  use: *base\n"
    "date: 2026-11-22\n"
    "on: yes\n"
    "summary: >\n"
    "  folded text that\n"
    "  spans lines\n"
    "empty:\n"
    "---\n"
    "# Roadmap\n"
    "\n"
    "Body text.\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with a tricky artifact, a plain one and a malformed one."""
    lore = tmp_path / ".lore"
    (lore / "plans").mkdir(parents=True)
    (lore / "plans" / "q3.md").write_text(TRICKY)
    (lore / "plain.md").write_text("# Just a note\n\nno metadata\n")
    (lore / "broken.md").write_text("---\ntitle: ok\ntags: [a, b\nstatus: x\n---\nbody\n")
    return tmp_path


@pytest.fixture
def tb(project: Path) -> Toolbox:
    """Artifact tools over the project."""
    return artifacts.toolbox(project=project)


def test_read_returns_meta_and_body(tb: Toolbox) -> None:
    """read_artifact parses the frontmatter (dates as ISO text) and returns the body after it."""
    data = tb.call_sync("read_artifact", {"path": "plans/q3.md"}).data
    assert data["meta"]["title"] == "Q3: roadmap — 'draft'"
    assert data["meta"]["tags"] == ["infra", "db"]
    assert data["meta"]["anchors"]["use"] == {"retries": 3}
    assert data["meta"]["date"] == "2026-11-22"
    assert data["meta"]["summary"] == "folded text that spans lines\n"
    assert data["body"] == "# Roadmap\n\nBody text.\n"


def test_lore_prefix_in_paths_is_accepted(tb: Toolbox) -> None:
    """`.lore/plans/q3.md` and `plans/q3.md` name the same artifact."""
    assert tb.call_sync("read_artifact", {"path": ".lore/plans/q3.md"}).data["path"] == "plans/q3.md"


def test_write_keeps_existing_frontmatter_byte_for_byte(tb: Toolbox, project: Path) -> None:
    """A body write leaves every byte of the frontmatter (comments, quotes, anchors, order) unchanged."""
    result = tb.call_sync("write_artifact", {"path": "plans/q3.md", "content": "# New body\n"})
    assert result.ok and result.data["kept_frontmatter"] is True
    text = (project / ".lore" / "plans" / "q3.md").read_text()
    assert text == TRICKY.split("# Roadmap")[0] + "# New body\n"


def test_write_keeps_crlf_bom_and_non_utf8_bytes(tb: Toolbox, project: Path) -> None:
    """CRLF line ends, a BOM and bytes that are not UTF-8 in the frontmatter survive a body write."""
    raw = b"\xef\xbb\xbf---\r\ntitle: caf\xe9 # latin-1 byte\r\nstatus: x\r\n---\r\nold\r\n"
    path = project / ".lore" / "crlf.md"
    path.write_bytes(raw)
    assert tb.call_sync("write_artifact", {"path": "crlf.md", "content": "new\r\n"}).ok
    assert path.read_bytes() == raw[: raw.index(b"old")] + b"new\r\n"


def test_content_with_its_own_frontmatter_replaces_it(tb: Toolbox, project: Path) -> None:
    """Content that opens with a frontmatter block is written as given."""
    content = "---\ntitle: Fresh\n---\nbody\n"
    result = tb.call_sync("write_artifact", {"path": "plans/q3.md", "content": content})
    assert result.ok and result.data["kept_frontmatter"] is False
    assert (project / ".lore" / "plans" / "q3.md").read_text() == content


def test_content_with_malformed_frontmatter_is_refused(tb: Toolbox, project: Path) -> None:
    """Malformed YAML in new content is refused with its line, and the file is left alone."""
    result = tb.call_sync("write_artifact", {"path": "plans/q3.md", "content": "---\na: 1\nb: [\n---\nx"})
    assert not result.ok and result.error.details["reason"] == "malformed_frontmatter"
    assert (project / ".lore" / "plans" / "q3.md").read_text() == TRICKY


def test_new_artifact_without_frontmatter_is_plain(tb: Toolbox, project: Path) -> None:
    """Writing a new path creates folders and the file with the content as given."""
    assert tb.call_sync("write_artifact", {"path": "notes/new.md", "content": "# Hi\n"}).ok
    assert (project / ".lore" / "notes" / "new.md").read_text() == "# Hi\n"
    data = tb.call_sync("read_artifact", {"path": "notes/new.md"}).data
    assert data == {"path": "notes/new.md", "meta": {}, "body": "# Hi\n"}


def test_malformed_frontmatter_names_the_line(tb: Toolbox) -> None:
    """A read of malformed frontmatter fails with the file's line number."""
    result = tb.call_sync("read_artifact", {"path": "broken.md"})
    assert not result.ok
    assert result.error.details["line"] == 4 and "at line 4" in result.error.message
    assert "flow sequence, from line 3" in result.error.message


def test_unclosed_frontmatter_is_malformed_at_line_one(tb: Toolbox, project: Path) -> None:
    """A `---` block never closed is an error pointing at its opening line."""
    (project / ".lore" / "open.md").write_text("---\ntitle: x\nno end\n")
    result = tb.call_sync("read_artifact", {"path": "open.md"})
    assert result.error.details["line"] == 1 and "never closed" in result.error.message


def test_frontmatter_that_is_not_a_mapping_is_an_error(tb: Toolbox, project: Path) -> None:
    """A frontmatter holding a list is refused: fields must be a mapping."""
    (project / ".lore" / "list.md").write_text("---\n- a\n- b\n---\nx\n")
    assert "must be a mapping" in tb.call_sync("read_artifact", {"path": "list.md"}).error.message


def test_update_meta_changes_only_the_named_fields(tb: Toolbox, project: Path) -> None:
    """Changing fields re-emits only them: comments, quoting and the order of the rest stay."""
    result = tb.call_sync("update_artifact_meta", {"path": "plans/q3.md",
                                                   "changes": {"status": "approved", "reviewer": "carol"}})
    assert result.ok and result.data["meta"]["status"] == "approved"
    text = (project / ".lore" / "plans" / "q3.md").read_text()
    expected = TRICKY.replace("status: draft\n", "status: approved\n").replace("empty:\n", "empty:\nreviewer: carol\n")
    assert text == expected


def test_update_meta_keeps_style_of_changed_values(tb: Toolbox, project: Path) -> None:
    """A quoted string stays quoted, a flow list stays flow, an end-of-line comment stays, dates stay dates."""
    tb.call_sync("update_artifact_meta", {"path": "plans/q3.md", "changes": {
        "title": "Q4", "tags": ["infra", "web"], "date": "2026-12-01"}})
    text = (project / ".lore" / "plans" / "q3.md").read_text()
    assert "title: \"Q4\"   # quoted, with a colon\n" in text
    assert "tags: [infra, web]  # flow list\n" in text
    assert "date: 2026-12-01\n" in text


def test_update_meta_null_removes_and_objects_merge(tb: Toolbox, project: Path) -> None:
    """Merge-patch semantics: null deletes a field, an object merges into an object field."""
    tb.call_sync("update_artifact_meta", {"path": "plans/q3.md", "changes": {
        "summary": None, "anchors": {"extra": 1}}})
    meta = tb.call_sync("read_artifact", {"path": "plans/q3.md"}).data["meta"]
    assert "summary" not in meta
    assert meta["anchors"] == {"base": {"retries": 3}, "use": {"retries": 3}, "extra": 1}
    text = (project / ".lore" / "plans" / "q3.md").read_text()
    assert "# Planning doc: keep this comment\n" in text and "  - alice   # lead\n" in text


def test_update_meta_on_a_file_without_frontmatter_adds_one(tb: Toolbox, project: Path) -> None:
    """A plain file gains a frontmatter block; its body is unchanged."""
    tb.call_sync("update_artifact_meta", {"path": "plain.md", "changes": {"status": "done"}})
    assert (project / ".lore" / "plain.md").read_text() == "---\nstatus: done\n---\n# Just a note\n\nno metadata\n"


def test_update_meta_on_malformed_frontmatter_fails_and_keeps_the_file(tb: Toolbox, project: Path) -> None:
    """Changing fields of a malformed file is an error; the file is untouched."""
    before = (project / ".lore" / "broken.md").read_text()
    result = tb.call_sync("update_artifact_meta", {"path": "broken.md", "changes": {"status": "y"}})
    assert not result.ok and (project / ".lore" / "broken.md").read_text() == before


def test_flow_mapping_frontmatter_is_updated_whole(tb: Toolbox, project: Path) -> None:
    """A one-line flow-mapping frontmatter is still updated correctly."""
    (project / ".lore" / "flow.md").write_text("---\n{title: T, status: a}\n---\nbody\n")
    tb.call_sync("update_artifact_meta", {"path": "flow.md", "changes": {"status": "b"}})
    data = tb.call_sync("read_artifact", {"path": "flow.md"}).data
    assert data["meta"] == {"title": "T", "status": "b"} and data["body"] == "body\n"


def test_list_artifacts_sorted_with_fields_and_errors(tb: Toolbox) -> None:
    """Listing gives title, status, tags and date per file, sorted by path; a bad file reports its error."""
    data = tb.call_sync("list_artifacts", {}).data
    assert [a["path"] for a in data["artifacts"]] == ["broken.md", "plain.md", "plans/q3.md"]
    broken, plain, q3 = data["artifacts"]
    assert "at line 4" in broken["error"]
    assert plain == {"path": "plain.md", "title": "Just a note", "status": None, "tags": [], "date": None}
    assert q3 == {"path": "plans/q3.md", "title": "Q3: roadmap — 'draft'", "status": "draft",
                  "tags": ["infra", "db"], "date": "2026-11-22"}
    assert [a["path"] for a in tb.call_sync("list_artifacts", {"directory": "plans"}).data["artifacts"]] == [
        "plans/q3.md"]


def test_list_without_lore_folder_is_empty(tmp_path: Path) -> None:
    """A project without a lore folder lists no artifacts (and reading one is not_found)."""
    tb = artifacts.toolbox(project=tmp_path)
    assert tb.call_sync("list_artifacts", {}).data["artifacts"] == []
    assert tb.call_sync("read_artifact", {"path": "x.md"}).error.code == "not_found"


def test_custom_lore_folder(tmp_path: Path) -> None:
    """`lore=` picks another artifacts folder."""
    tb = artifacts.toolbox(project=tmp_path, lore="docs/lore")
    assert tb.call_sync("write_artifact", {"path": "a.md", "content": "x"}).ok
    assert (tmp_path / "docs" / "lore" / "a.md").read_text() == "x"


def test_chain_files_are_read_only_here(tb: Toolbox, project: Path) -> None:
    """Task files under chains/ can be read but not written, so the chain life cycle cannot be skipped."""
    (project / ".lore" / "chains" / "C1").mkdir(parents=True)
    (project / ".lore" / "chains" / "C1" / "T1.md").write_text("---\nstatus: pending\n---\n")
    assert tb.call_sync("read_artifact", {"path": "chains/C1/T1.md"}).ok
    attempts = [("write_artifact", {"content": "x"}), ("update_artifact_meta", {"changes": {"status": "approved"}})]
    for name, args in attempts:
        result = tb.call_sync(name, {"path": "chains/C1/T1.md", **args})
        assert result.error.code == "denied", name
    assert (project / ".lore" / "chains" / "C1" / "T1.md").read_text() == "---\nstatus: pending\n---\n"


def test_paths_outside_the_lore_folder_are_denied(tb: Toolbox, project: Path) -> None:
    """`..` and symlinks cannot reach project files outside the lore folder."""
    (project / "src.py").write_text("code")
    (project / ".lore" / "link.md").symlink_to(project / "src.py")
    assert tb.call_sync("read_artifact", {"path": "../src.py"}).error.code == "denied"
    assert tb.call_sync("read_artifact", {"path": "link.md"}).error.code == "denied"
    assert tb.call_sync("write_artifact", {"path": "../src.py", "content": "x"}).error.code == "denied"
    assert (project / "src.py").read_text() == "code"
