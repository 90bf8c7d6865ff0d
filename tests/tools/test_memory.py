"""Memory tools: scopes, listing, edits, deletes, renames and ownership, through the public API."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolhall import ConfigError, Toolbox, ToolContext
from toolhall.tools import memory


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The memory root for one test."""
    return tmp_path / "mem"


@pytest.fixture
def tb(root: Path) -> Toolbox:
    """Memory tools for project `shop` and worker `alice`."""
    return memory.toolbox(root=root, project="shop", worker="alice")


def call(tb: Toolbox, name: str, worker: str | None = None, **args: object):  # noqa: ANN201 - a ToolResult
    """Call a memory tool, as `worker` when given."""
    return tb.call_sync(name, args, context=ToolContext(worker=worker) if worker else None)


def test_each_scope_has_its_own_folder(tb: Toolbox, root: Path) -> None:
    """global, project and worker writes land in global/, projects/<p>/ and workers/<w>/."""
    for scope in ("global", "project", "worker"):
        assert call(tb, "write_memory", scope=scope, path="notes/a.md", content=scope).ok
    assert (root / "global" / "notes" / "a.md").read_text() == "global"
    assert (root / "projects" / "shop" / "notes" / "a.md").read_text() == "project"
    assert (root / "workers" / "alice" / "notes" / "a.md").read_text() == "worker"


def test_read_returns_file_content_exactly(tb: Toolbox) -> None:
    """Reading a file gives back exactly what was written, unicode included."""
    text = "line 1\nzwei — 2\n\ttabbed\n"
    call(tb, "write_memory", scope="global", path="x.md", content=text)
    result = call(tb, "read_memory", scope="global", path="x.md")
    assert result.ok and result.output == text


def test_reading_a_folder_lists_two_levels_with_sizes(tb: Toolbox) -> None:
    """A folder read lists entries two levels deep, sizes for files, hidden entries skipped."""
    call(tb, "write_memory", scope="worker", path="a/b/deep.md", content="xx")
    call(tb, "write_memory", scope="worker", path="top.md", content="12345")
    call(tb, "write_memory", scope="worker", path=".hidden", content="h")
    listing = call(tb, "read_memory", scope="worker").output
    assert "5\ttop.md" in listing and "-\ta/" in listing and "-\ta/b/" in listing
    assert "deep.md" not in listing and ".hidden" not in listing
    assert "2\ta/b/deep.md" in call(tb, "read_memory", scope="worker", path="a").output


def test_an_empty_scope_lists_as_empty(tb: Toolbox) -> None:
    """A scope nothing was written to yet reads as empty, not as an error."""
    result = call(tb, "read_memory", scope="global")
    assert result.ok and "empty" in result.output


def test_anthropic_style_paths_are_relative_to_the_scope(tb: Toolbox, root: Path) -> None:
    """`/memories/x.md` and `/x.md` both mean x.md in the scope, as models trained on that tool write."""
    call(tb, "write_memory", scope="global", path="/memories/x.md", content="1")
    call(tb, "write_memory", scope="global", path="/y.md", content="2")
    assert (root / "global" / "x.md").exists() and (root / "global" / "y.md").exists()


def test_missing_path_is_not_found(tb: Toolbox) -> None:
    """Reading a path that does not exist is a not_found result naming it."""
    call(tb, "write_memory", scope="global", path="a.md", content="x")
    result = call(tb, "read_memory", scope="global", path="nope.md")
    assert not result.ok and result.error.code == "not_found"
    assert "global/nope.md does not exist" in result.error.message


def test_edit_replaces_exactly_one_occurrence(tb: Toolbox, root: Path) -> None:
    """edit_memory replaces a unique old_str; none or several matches are errors with reasons."""
    call(tb, "write_memory", scope="global", path="e.md", content="alpha\nbeta\nalpha\n")
    ok = call(tb, "edit_memory", scope="global", path="e.md", old_str="beta", new_str="gamma")
    assert ok.ok and (root / "global" / "e.md").read_text() == "alpha\ngamma\nalpha\n"
    none = call(tb, "edit_memory", scope="global", path="e.md", old_str="zeta", new_str="x")
    assert none.error.details == {"reason": "no_match"}
    many = call(tb, "edit_memory", scope="global", path="e.md", old_str="alpha", new_str="x")
    assert many.error.details == {"reason": "ambiguous_match", "lines": [1, 3]}
    assert (root / "global" / "e.md").read_text() == "alpha\ngamma\nalpha\n"


def test_delete_removes_files_and_folders_but_not_the_scope(tb: Toolbox, root: Path) -> None:
    """delete_memory removes a file or a whole folder; the scope folder itself is refused."""
    call(tb, "write_memory", scope="worker", path="d/one.md", content="1")
    call(tb, "write_memory", scope="worker", path="f.md", content="1")
    assert call(tb, "delete_memory", scope="worker", path="f.md").ok
    assert call(tb, "delete_memory", scope="worker", path="d").ok
    assert list((root / "workers" / "alice").iterdir()) == []
    refused = call(tb, "delete_memory", scope="worker", path="/")
    assert refused.error.code == "invalid_input"
    assert call(tb, "delete_memory", scope="worker", path="gone.md").error.code == "not_found"


def test_rename_moves_within_the_scope_and_refuses_to_overwrite(tb: Toolbox, root: Path) -> None:
    """rename_memory moves files (creating folders); an existing destination is refused."""
    call(tb, "write_memory", scope="project", path="a.md", content="A")
    call(tb, "write_memory", scope="project", path="b.md", content="B")
    assert call(tb, "rename_memory", scope="project", old_path="a.md", new_path="sub/c.md").ok
    assert (root / "projects" / "shop" / "sub" / "c.md").read_text() == "A"
    clash = call(tb, "rename_memory", scope="project", old_path="b.md", new_path="sub/c.md")
    assert clash.error.details == {"reason": "exists"}
    assert (root / "projects" / "shop" / "sub" / "c.md").read_text() == "A"
    missing = call(tb, "rename_memory", scope="project", old_path="zz.md", new_path="y.md")
    assert missing.error.code == "not_found"


def test_session_worker_wins_over_factory_worker(tb: Toolbox, root: Path) -> None:
    """The calling worker comes from ToolContext.worker, falling back to the factory's worker."""
    call(tb, "write_memory", worker="bob", scope="worker", path="n.md", content="bob's")
    call(tb, "write_memory", scope="worker", path="n.md", content="alice's")
    assert (root / "workers" / "bob" / "n.md").read_text() == "bob's"
    assert (root / "workers" / "alice" / "n.md").read_text() == "alice's"


def test_without_ownership_any_worker_writes_any_worker_folder(tb: Toolbox, root: Path) -> None:
    """By default `worker:NAME` is writable by everyone."""
    assert call(tb, "write_memory", worker="bob", scope="worker:alice", path="n.md", content="from bob").ok
    assert (root / "workers" / "alice" / "n.md").read_text() == "from bob"


def test_ownership_makes_other_workers_folders_read_only(root: Path) -> None:
    """With ownership=True a worker writes only its own folder and reads everyone's."""
    tb = memory.toolbox(root=root, project="shop", ownership=True)
    assert call(tb, "write_memory", worker="alice", scope="worker", path="n.md", content="mine").ok
    for name, args in [
        ("write_memory", {"path": "n.md", "content": "x"}),
        ("edit_memory", {"path": "n.md", "old_str": "mine", "new_str": "x"}),
        ("delete_memory", {"path": "n.md"}),
        ("rename_memory", {"old_path": "n.md", "new_path": "m.md"}),
    ]:
        result = call(tb, name, worker="bob", scope="worker:alice", **args)
        assert result.error.code == "denied", name
        assert result.error.details["reason"] == "not_owner"
    assert call(tb, "read_memory", worker="bob", scope="worker:alice", path="n.md").output == "mine"
    assert (root / "workers" / "alice" / "n.md").read_text() == "mine"
    assert call(tb, "write_memory", worker="alice", scope="worker:alice", path="n.md", content="ok").ok
    assert call(tb, "write_memory", worker="bob", scope="global", path="g.md", content="shared").ok


def test_scope_errors_are_clear(root: Path) -> None:
    """Unknown scopes, and worker/project scopes with nobody named, fail with what is allowed."""
    tb = memory.toolbox(root=root)
    bad = call(tb, "read_memory", scope="team")
    assert bad.error.code == "invalid_input" and "'global', 'project', 'worker'" in bad.error.message
    assert call(tb, "read_memory", scope="worker").error.details["reason"] == "no_worker"
    assert call(tb, "write_memory", scope="project", path="a", content="").error.details["reason"] == "no_project"
    assert call(tb, "write_memory", scope="project:other", path="a.md", content="x").ok
    assert (root / "projects" / "other" / "a.md").exists()


def test_project_can_come_from_the_call_context(root: Path) -> None:
    """Without a factory project, `extra["project"]` names the project folder."""
    tb = memory.toolbox(root=root)
    result = tb.call_sync("write_memory", {"scope": "project", "path": "a.md", "content": "x"},
                          context=ToolContext(extra={"project": "ctxproj"}))
    assert result.ok and (root / "projects" / "ctxproj" / "a.md").exists()


def test_factory_rejects_unusable_names(root: Path) -> None:
    """project/worker names that are not single safe folder names are ConfigErrors."""
    for kwargs in ({"project": "../up"}, {"worker": "a/b"}, {"worker": ".."}, {"project": ""}):
        with pytest.raises(ConfigError):
            memory.toolbox(root=root, **kwargs)  # type: ignore[arg-type]


def test_size_cap_applies_to_writes(root: Path) -> None:
    """A write larger than max_file_bytes is refused before touching the disk."""
    tb = memory.toolbox(root=root, worker="w", max_file_bytes=10)
    result = call(tb, "write_memory", scope="worker", path="big.md", content="x" * 11)
    assert result.error.code == "invalid_input" and not (root / "workers" / "w" / "big.md").exists()


def test_default_root_is_under_the_home_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without root=, memory lives in ~/.toolhall/memory."""
    monkeypatch.setenv("HOME", str(tmp_path))
    tb = memory.toolbox(worker="w")
    assert call(tb, "write_memory", scope="worker", path="a.md", content="x").ok
    assert (tmp_path / ".toolhall" / "memory" / "workers" / "w" / "a.md").exists()


def test_tools_are_annotated_for_policy(tb: Toolbox) -> None:
    """read_memory is read-only; the writing tools are not, and every tool has a JSON Schema."""
    assert tb["read_memory"].annotations.read_only
    assert not tb["write_memory"].annotations.read_only
    assert tb.names() == ["read_memory", "write_memory", "edit_memory", "delete_memory", "rename_memory"]
    assert tb["rename_memory"].input_schema["required"] == ["scope", "old_path", "new_path"]
