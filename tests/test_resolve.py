"""resolve_toolset: base + context + domain toolboxes, found in mappings, folders and entry points."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from toolhall import (
    MissingToolboxError,
    ResolvedToolSet,
    ResolveError,
    Toolbox,
    WorkerSpec,
    resolve_toolset,
    tool,
)

BASE = [
    "read_memory", "write_memory", "edit_memory", "delete_memory", "rename_memory",
    "read_artifact", "write_artifact", "update_artifact_meta", "list_artifacts", "record_decision",
]
FIXTURE_SITE = Path(__file__).parent / "fixtures" / "entrypoint_pkg"


@tool
def git_log(n: int = 5) -> str:
    """Show the last commits.

    Args:
        n: How many.
    """
    return f"{n} commits"


@tool(roles={"control"})
def plan() -> str:
    """Make a plan."""
    return "plan"


@tool(roles={"impl"})
def build() -> str:
    """Build it."""
    return "built"


@pytest.fixture
def where(tmp_path: Path) -> dict[str, Path]:
    """A project folder and a memory root inside the test's temporary folder."""
    (tmp_path / "proj").mkdir()
    return {"project": tmp_path / "proj", "memory_root": tmp_path / "mem"}


def test_base_then_context_then_domain_in_order(where: dict[str, Path]) -> None:
    """The toolbox holds the base tools, then the context's, then each domain's, with sources recorded."""
    spec = WorkerSpec("coder", domain_toolboxes=["git", "planning"], builtin_tools=["WebSearch", "Bash"])
    context = Toolbox([build], name="meeting")
    resolved = resolve_toolset(spec, {"git": Toolbox([git_log]), "planning": lambda: Toolbox([plan])}, context,
                               **where)
    assert isinstance(resolved, ResolvedToolSet)
    assert resolved.toolbox.names() == [*BASE, "build", "git_log", "plan"]
    assert resolved.builtin_tools == ["WebSearch", "Bash"]
    assert resolved.sources["read_memory"] == "memory"
    assert resolved.sources["list_artifacts"] == "artifacts"
    assert resolved.sources["record_decision"] == "decisions"
    assert resolved.sources["build"] == "meeting"
    assert resolved.sources["git_log"] == "git"
    assert resolved.sources["plan"] == "planning"


def test_base_tools_work_with_the_given_project_and_memory_root(where: dict[str, Path]) -> None:
    """The base toolbox writes memory under memory_root and artifacts under the project's .lore."""
    resolved = resolve_toolset(WorkerSpec("coder"), {}, **where)
    tb = resolved.toolbox
    assert tb.call_sync("write_memory", {"scope": "worker", "path": "a.md", "content": "hi"}).ok
    assert (where["memory_root"] / "workers" / "coder" / "a.md").read_text() == "hi"
    assert tb.call_sync("write_memory", {"scope": "project", "path": "p.md", "content": "x"}).ok
    assert (where["memory_root"] / "projects" / "proj" / "p.md").exists()
    assert tb.call_sync("write_artifact", {"path": "notes.md", "content": "# N\n"}).ok
    assert (where["project"] / ".lore" / "notes.md").read_text() == "# N\n"


def test_missing_toolboxes_are_all_named_with_the_available_ones(where: dict[str, Path]) -> None:
    """Every missing package is named in one error, with the packages that do exist."""
    spec = WorkerSpec("w", domain_toolboxes=["git", "jira", "slack"])
    with pytest.raises(MissingToolboxError) as info:
        resolve_toolset(spec, {"git": Toolbox([git_log]), "sql": Toolbox()}, entry_points=False, **where)
    assert info.value.missing == ["jira", "slack"]
    assert info.value.available == ["git", "sql"]
    assert "jira, slack" in str(info.value) and "git, sql" in str(info.value)


def test_a_name_two_toolboxes_provide_is_an_error_naming_both(where: dict[str, Path]) -> None:
    """Unlike merge, resolution refuses a tool name provided twice, naming both sources."""
    spec = WorkerSpec("w", domain_toolboxes=["git", "vcs"])
    with pytest.raises(ResolveError, match=r"'git_log' is provided by both 'git' and 'vcs'.*prefix"):
        resolve_toolset(spec, {"git": Toolbox([git_log]), "vcs": Toolbox([git_log])}, **where)


def test_a_domain_tool_clashing_with_the_base_names_both(where: dict[str, Path]) -> None:
    """A domain toolbox may not shadow a base tool."""
    clash = Toolbox([git_log.replace(name="read_memory")])
    with pytest.raises(ResolveError, match="'read_memory' is provided by both 'memory' and 'mine'"):
        resolve_toolset(WorkerSpec("w", domain_toolboxes=["mine"]), {"mine": clash}, **where)


def test_prefixing_one_toolbox_resolves_a_clash(where: dict[str, Path]) -> None:
    """A prefixed toolbox combines with the one it clashed with."""
    spec = WorkerSpec("w", domain_toolboxes=["git", "vcs"])
    resolved = resolve_toolset(spec, {"git": Toolbox([git_log]), "vcs": Toolbox([git_log]).prefixed("vcs_")},
                               **where)
    assert {"git_log", "vcs_git_log"} <= set(resolved.toolbox.names())
    assert resolved.sources["vcs_git_log"] == "vcs"


def test_builtin_tool_clashing_with_a_toolbox_tool_is_an_error(where: dict[str, Path]) -> None:
    """A runtime built-in with a toolbox tool's name would give the model two tools of one name."""
    spec = WorkerSpec("w", domain_toolboxes=["git"], builtin_tools=["git_log"])
    with pytest.raises(ResolveError, match="built-in tool.*'git_log'.*'git'"):
        resolve_toolset(spec, {"git": Toolbox([git_log])}, **where)


def test_worker_role_filters_the_resolved_toolbox(where: dict[str, Path]) -> None:
    """A worker's role keeps tools for that role and tools without roles, and trims sources to match."""
    spec = WorkerSpec("w", domain_toolboxes=["work"], role="impl")
    resolved = resolve_toolset(spec, {"work": Toolbox([plan, build])}, **where)
    assert "build" in resolved.toolbox and "plan" not in resolved.toolbox
    assert "plan" not in resolved.sources
    assert set(resolved.sources) == set(resolved.toolbox.names())


def test_folder_of_toolbox_modules_is_searched(where: dict[str, Path], tmp_path: Path) -> None:
    """`<folder>/<name>.py` and `<folder>/<name>/__init__.py` defining `toolbox` are packages."""
    folder = tmp_path / "toolboxes"
    (folder / "pkgdir").mkdir(parents=True)
    (folder / "single-file.py").write_text(textwrap.dedent('''
        from toolhall import Toolbox, tool

        @tool
        def from_file() -> str:
            """From a module file."""
            return "file"

        toolbox = Toolbox([from_file])
    '''))
    (folder / "pkgdir" / "__init__.py").write_text(textwrap.dedent('''
        from toolhall import Toolbox, tool

        @tool
        def from_package() -> str:
            """From a package folder."""
            return "package"

        def toolbox():
            return Toolbox([from_package])
    '''))
    spec = WorkerSpec("w", domain_toolboxes=["single-file", "pkgdir"])
    resolved = resolve_toolset(spec, folder, **where)
    assert resolved.sources["from_file"] == "single-file"
    assert resolved.toolbox.call_sync("from_package").output == "package"


def test_broken_packages_raise_resolve_errors_naming_them(where: dict[str, Path], tmp_path: Path) -> None:
    """A module without `toolbox`, a failing factory or a non-Toolbox value each name the package."""
    folder = tmp_path / "toolboxes"
    folder.mkdir()
    (folder / "empty.py").write_text("x = 1\n")
    (folder / "boom.py").write_text("raise RuntimeError('kaboom')\n")
    cases = {
        "empty": (folder, "defines no `toolbox`"),
        "boom": (folder, "failed to import: RuntimeError: kaboom"),
        "bad": ({"bad": 42}, "is a int, not a Toolbox"),
        "factory": ({"factory": lambda: 1 / 0}, "failed to build: ZeroDivisionError"),
        "wrong": ({"wrong": lambda: "nope"}, "returned str, not a Toolbox"),
    }
    for name, (packages, message) in cases.items():
        with pytest.raises(ResolveError, match=message):
            resolve_toolset(WorkerSpec("w", domain_toolboxes=[name]), packages, entry_points=False, **where)


def test_mapping_wins_over_folder_and_entry_points(where: dict[str, Path], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Lookup order is the mapping, then folders, then entry points."""
    monkeypatch.syspath_prepend(str(FIXTURE_SITE))
    spec = WorkerSpec("w", domain_toolboxes=["demo-weather"])
    resolved = resolve_toolset(spec, [{"demo-weather": Toolbox([git_log])}], **where)
    assert resolved.sources == {**resolved.sources, "git_log": "demo-weather"}
    assert "weather" not in resolved.toolbox


def test_installed_entry_point_packages_are_found(where: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A distribution offering `toolhall.toolboxes` entry points (factory or ready Toolbox) is resolved."""
    monkeypatch.syspath_prepend(str(FIXTURE_SITE))
    spec = WorkerSpec("w", domain_toolboxes=["demo-weather", "demo-ready"])
    resolved = resolve_toolset(spec, None, **where)
    assert resolved.sources["weather"] == "demo-weather"
    assert resolved.sources["forecast"] == "demo-ready"
    assert resolved.toolbox.call_sync("weather", {"city": "Oslo"}).output == "sunny in Oslo"


def test_entry_points_are_listed_as_available_and_can_be_turned_off(
    where: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed packages appear in MissingToolboxError.available; entry_points=False ignores them."""
    monkeypatch.syspath_prepend(str(FIXTURE_SITE))
    with pytest.raises(MissingToolboxError) as info:
        resolve_toolset(WorkerSpec("w", domain_toolboxes=["nope"]), {}, **where)
    assert {"demo-weather", "demo-ready"} <= set(info.value.available)
    with pytest.raises(MissingToolboxError):
        resolve_toolset(WorkerSpec("w", domain_toolboxes=["demo-weather"]), {}, entry_points=False, **where)


def test_entry_point_that_cannot_load_is_a_resolve_error(
    where: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry point naming a missing object is a ResolveError naming the package and the entry point."""
    monkeypatch.syspath_prepend(str(FIXTURE_SITE))
    with pytest.raises(ResolveError, match=r"'demo-broken'.*demo_toolboxes:does_not_exist"):
        resolve_toolset(WorkerSpec("w", domain_toolboxes=["demo-broken"]), None, **where)


def test_worker_may_be_given_as_a_manifest_path(where: dict[str, Path], tmp_path: Path) -> None:
    """A manifest path is read with WorkerSpec.load."""
    manifest = tmp_path / "rev.yaml"
    manifest.write_text("domain_toolboxes: [git]\nbuiltin_tools: [Read]\n")
    resolved = resolve_toolset(manifest, {"git": Toolbox([git_log])}, **where)
    assert resolved.builtin_tools == ["Read"]
    assert "git_log" in resolved.toolbox


def test_an_explicit_base_replaces_the_standard_one(where: dict[str, Path]) -> None:
    """`base=` injects a ready base toolbox instead of memory, artifacts and decisions."""
    resolved = resolve_toolset(WorkerSpec("w"), {}, base=Toolbox([plan]), **where)
    assert resolved.toolbox.names() == ["plan"]
    assert resolved.sources == {"plan": "base"}


def test_missing_packages_folder_is_a_resolve_error(where: dict[str, Path], tmp_path: Path) -> None:
    """A packages folder that does not exist is named in the error."""
    with pytest.raises(ResolveError, match="does not exist"):
        resolve_toolset(WorkerSpec("w"), tmp_path / "nowhere", **where)
