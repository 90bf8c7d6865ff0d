"""The code graph through its public tools: exact edge sets on a fixture workspace, incremental updates."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolhall import Toolbox
from toolhall.tools import codegraph
from toolhall.tools._graph_service import forget

FIXTURE = Path(__file__).parent / "fixtures" / "graphproj"

EXPECTED_CALLS = {
    ("app.core.Base.finish", "External", "json.dumps", 25, "import-alt"),
    ("app.core.Base.finish", "External", "pickle.dumps", 25, "import-alt"),
    ("app.core.Base.run", "Function", "app.core.Base.finish", 19, "self"),
    ("app.core.Base.run", "Function", "app.core.Base.step", 18, "self"),
    ("app.core.Base.step", "Function", "app.util.slugify", 22, "import"),
    ("app.core.Engine.__init__", "Function", "app.core.Base.__init__", 30, "super"),
    ("app.core.Engine.step", "External", "os.path.join", 33, "import"),
    ("app.core.helper", "Function", "app.core.Engine.__init__", 37, "ctor"),
    ("app.core", "Function", "app.core.helper", 40, "local"),
    ("broken.bad", "Function", "broken.fine", 11, "local"),
    ("broken.fine", "Function", "app.util.slugify", 7, "import"),
    ("main.Turbo.step", "Function", "app.core.Engine.step", 14, "super"),
    ("main.main", "Function", "app.core.helper", 18, "import"),  # go = re-exported alias of helper
    ("main.main", "Function", "app.util.slugify", 19, "import"),  # app.util.slugify through the package
    ("main.main", "Function", "app.core.helper", 20, "import"),  # shortcut = core_mod.helper
    ("main.main", "Function", "app.core.Engine.__init__", 21, "ctor"),  # Turbo() inherits Engine.__init__
    ("main.main", "Class", "app.util.Plain", 22, "ctor"),  # no __init__ anywhere: the class itself
    ("main.main", "Function", "app.util.rare_helper", 23, "name-unique"),
    ("main.main", "Function", "main.shout", 25, "local"),
    ("main.shout", "Function", "app.util.slugify", 28, "import"),  # through the star import
    ("main", "Function", "main.main", 31, "local"),
}
EXPECTED_IMPORTS = {
    ("app", "app", 3, ("util",)),
    ("app", "app.util", 3, ()),
    ("app", "app.core", 4, ("Engine", "helper")),
    ("app.core", "os.path", 3, ()),
    ("app.core", "app.util", 5, ("slugify",)),
    ("app.core", "json", 8, ()),
    ("app.core", "pickle", 10, ()),
    ("broken", "app.util", 3, ("slugify",)),
    ("main", "app", 3, ()),
    ("main", "app.core", 4, ()),
    ("main", "app", 5, ("Engine",)),
    ("main", "app", 6, ("assist",)),
    ("main", "app.util", 7, ("*",)),
}
EXPECTED_INHERITS = {("app.core.Engine", "app.core.Base"), ("main.Turbo", "app.core.Engine")}
EXPECTED_OVERRIDES = {
    ("app.core.Engine.__init__", "app.core.Base.__init__"),
    ("app.core.Engine.step", "app.core.Base.step"),
    ("main.Turbo.step", "app.core.Engine.step"),
}
FUNCTIONS = {
    "app.core.Base.__init__": "method", "app.core.Base.finish": "method", "app.core.Base.run": "method",
    "app.core.Base.step": "method", "app.core.Engine.__init__": "method", "app.core.Engine.step": "method",
    "app.core.helper": "function", "app.util.rare_helper": "function", "app.util.slugify": "function",
    "broken.bad": "function", "broken.fine": "function", "main.Turbo.step": "method",
    "main.main": "function", "main.shout": "lambda",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh copy of the fixture workspace."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    return root


def rows(tb: Toolbox, query: str, **params: Any) -> list[list[Any]]:
    """Rows of a query that must succeed."""
    result = tb.call_sync("graph_query", {"query": query, "params": params or None})
    assert result.ok, result.error
    assert not result.data["truncated"]
    out: list[list[Any]] = result.data["rows"]
    return out


def index(tb: Toolbox) -> dict[str, Any]:
    """Run graph_index and return its statistics."""
    result = tb.call_sync("graph_index", {})
    assert result.ok, result.error
    data: dict[str, Any] = result.data
    return data


def dump(tb: Toolbox) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """Every node (with all its properties) and every edge (with its properties) in the graph."""
    found = rows(tb, "MATCH (n) WHERE label(n) <> 'Meta' RETURN n")
    nodes = {(r[0]["label"], tuple(sorted(r[0].items()))) for r in found}
    edges = rows(tb, "MATCH (a)-[r]->(b) RETURN label(r) AS rel, a.id AS s, label(b) AS bl, b.id AS d, "
                     "r.line AS line, r.how AS how, r.names AS names")
    return nodes, {(e[0], e[1], e[2], e[3], e[4], e[5], tuple(e[6]) if e[6] is not None else None) for e in edges}


def test_calls_edges_are_exactly_the_expected_set(project: Path) -> None:
    """Every CALLS edge with its line and how: aliases, re-exports, self/super, ctor, conditional imports."""
    tb = codegraph.toolbox(project, max_rows=10_000)
    found = rows(tb, "MATCH (a)-[r:CALLS]->(b) RETURN a.id AS src, label(b) AS kind, b.id AS dst, "
                     "r.line AS line, r.how AS how")
    assert {tuple(r) for r in found} == EXPECTED_CALLS
    assert len(found) == len(EXPECTED_CALLS)


def test_imports_inherits_and_overrides_are_exactly_the_expected_sets(project: Path) -> None:
    """IMPORTS (with line and names), INHERITS and OVERRIDES match the fixture exactly."""
    tb = codegraph.toolbox(project, max_rows=10_000)
    imports = rows(tb, "MATCH (a)-[r:IMPORTS]->(b) RETURN a.id, b.id, r.line, r.names")
    assert {(a, b, line, tuple(names)) for a, b, line, names in imports} == EXPECTED_IMPORTS
    inherits = rows(tb, "MATCH (a)-[:INHERITS]->(b) RETURN a.id, b.id")
    assert {tuple(r) for r in inherits} == EXPECTED_INHERITS
    overrides = rows(tb, "MATCH (a)-[:OVERRIDES]->(b) RETURN a.id, b.id")
    assert {tuple(r) for r in overrides} == EXPECTED_OVERRIDES


def test_nodes_and_structure_edges_match_the_fixture(project: Path) -> None:
    """Function kinds, placeholder modules/externals, and CONTAINS/DEFINES parent links."""
    tb = codegraph.toolbox(project, max_rows=10_000)
    assert dict(rows(tb, "MATCH (f:Function) RETURN f.id, f.kind")) == FUNCTIONS
    modules = rows(tb, "MATCH (m:Module) RETURN m.id, m.external, m.is_package")
    assert {tuple(r) for r in modules} == {
        ("app", False, True), ("app.core", False, False), ("app.util", False, False), ("broken", False, False),
        ("main", False, False), ("json", True, False), ("os.path", True, False), ("pickle", True, False),
    }
    assert {r[0] for r in rows(tb, "MATCH (e:External) RETURN e.id")} == {"json.dumps", "os.path.join", "pickle.dumps"}
    defines = rows(tb, "MATCH (a)-[:DEFINES]->(b) RETURN a.id, b.id")
    parents = {b: a for a, b in defines}
    assert parents == {**{f: f.rsplit(".", 1)[0] for f in FUNCTIONS},
                       **{c: c.rsplit(".", 1)[0] for c in ("app.core.Base", "app.core.Engine", "app.util.Plain",
                                                            "main.Turbo")}}
    contains = rows(tb, "MATCH (f:File)-[:CONTAINS]->(n) RETURN f.id, n.id")
    assert len(contains) == 5 + len(FUNCTIONS) + 4
    assert ("main.py", "main.shout") in {tuple(r) for r in contains}


def test_a_file_with_a_syntax_error_is_indexed_around_it(project: Path) -> None:
    """broken.py reports its errors and still has its functions and calls."""
    tb = codegraph.toolbox(project)
    stats = index(tb)
    assert stats["syntax_errors"] == ["broken.py"]
    assert rows(tb, "MATCH (f:File {id: 'broken.py'}) RETURN f.errors > 0") == [[True]]
    assert rows(tb, "MATCH (f:Function {file: 'broken.py'}) RETURN f.name ORDER BY f.name") == [["bad"], ["fine"]]


def test_heuristic_edges_can_be_filtered_out_of_variable_length_paths(project: Path) -> None:
    """`how` filters work on recursive patterns, so guesses can be excluded from impact queries."""
    tb = codegraph.toolbox(project)
    query = ("MATCH (a)-[:CALLS*1..3 (r, n | WHERE r.how <> 'name-unique')]->(b:Function {id: $q}) "
             "RETURN DISTINCT a.id ORDER BY a.id")
    assert rows(tb, query, q="app.core.Engine.__init__") == [["app.core"], ["app.core.helper"], ["main"], ["main.main"]]
    assert rows(tb, query, q="app.util.rare_helper") == []


def test_the_first_index_is_full_and_an_unchanged_tree_writes_nothing(project: Path) -> None:
    """A second run hashes nothing, parses nothing and leaves the database and cache files untouched."""
    tb = codegraph.toolbox(project)
    assert index(tb)["mode"] == "full"
    folder = project / ".toolhall" / "graph"
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_size) for p in folder.iterdir()}
    stats = index(tb)
    assert (stats["mode"], stats["hashed"], stats["parsed"], stats["resolved"]) == ("unchanged", 0, 0, 0)
    assert stats["edges_added"] == stats["edges_removed"] == 0
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_size) for p in folder.iterdir()}
    assert after == before


def test_a_one_file_change_parses_one_file_and_resolves_only_its_dependents(project: Path) -> None:
    """Adding a function to util.py parses util.py; renaming slugify re-resolves exactly its users."""
    tb = codegraph.toolbox(project)
    index(tb)
    util = project / "app" / "util.py"
    util.write_text(util.read_text() + "\n\ndef extra():\n    return slugify('x')\n")
    stats = index(tb)
    assert (stats["mode"], stats["hashed"], stats["parsed"], stats["resolved"]) == ("incremental", 1, 1, 1)
    assert (stats["edges_added"], stats["edges_removed"]) == (3, 0)  # CONTAINS, DEFINES, CALLS
    util.write_text(util.read_text().replace("slugify", "slug"))
    stats = index(tb)
    assert stats["parsed"] == 1
    # util.py itself plus core.py, broken.py and main.py, whose calls looked slugify up.
    assert stats["resolved"] == 4
    assert rows(tb, "MATCH (f:Function {name: 'slugify'}) RETURN f.id") == []


def fresh_dump(root: Path) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """The graph a from-scratch build of `root` gives (in a separate database folder)."""
    tb = codegraph.toolbox(root, db_path=root.parent / f"fresh-{root.name}", max_rows=100_000)
    stats = index(tb)
    assert stats["mode"] == "full"
    return dump(tb)


def test_incremental_updates_equal_a_fresh_full_build(project: Path, tmp_path: Path) -> None:
    """After edits, additions, deletions and a package-making __init__, the graph equals a fresh build.

    Every other step resumes from the cache (as a new process), the others continue in memory.
    """
    tb = codegraph.toolbox(project, max_rows=100_000)
    index(tb)
    (project / "extra").mkdir()
    steps: list[Callable[[], object]] = [
        lambda: (project / "app" / "util.py").write_text("def slugify(text):\n    return text\n"),
        lambda: (project / "app" / "core.py").unlink(),
        lambda: (project / "extra" / "more.py").write_text(
            "from app.util import slugify\n\ndef use():\n    return slugify('x')\n"),
        lambda: (project / "extra" / "__init__.py").write_text("from .more import use as slugify\n"),
        lambda: (project / "app" / "core.py").write_text((FIXTURE / "app" / "core.py").read_text()),
        lambda: (project / "main.py").write_text(
            (FIXTURE / "main.py").read_text() + "\ndef rare_helper():\n    pass\n"),
    ]
    for number, step in enumerate(steps):
        step()
        if number % 2:  # every other step starts from the cache, as a new process would
            forget([project / ".toolhall" / "graph"])
            tb = codegraph.toolbox(project, max_rows=100_000)
        stats = index(tb)
        assert stats["mode"] == "incremental", number
        copy = tmp_path / f"copy{number}"
        shutil.copytree(project, copy, ignore=shutil.ignore_patterns(".toolhall"))
        assert dump(tb) == fresh_dump(copy), f"step {number}"


def test_a_new_process_continues_incrementally_from_the_cache(project: Path, tmp_path: Path) -> None:
    """With the in-memory index gone, the cache is reloaded: one change still parses one file."""
    tb = codegraph.toolbox(project, max_rows=100_000)
    index(tb)
    forget([project / ".toolhall" / "graph"])
    (project / "main.py").write_text((project / "main.py").read_text() + "\n\ndef later():\n    main([])\n")
    tb = codegraph.toolbox(project, max_rows=100_000)
    stats = index(tb)
    assert (stats["mode"], stats["parsed"]) == ("incremental", 1)
    copy = tmp_path / "copy"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns(".toolhall"))
    assert dump(tb) == fresh_dump(copy)


def test_a_cache_from_another_schema_version_triggers_a_full_rebuild(project: Path) -> None:
    """A mismatched version in the stored metadata is never trusted: the next index rebuilds."""
    import sqlite3

    tb = codegraph.toolbox(project)
    index(tb)
    forget([project / ".toolhall" / "graph"])
    with sqlite3.connect(project / ".toolhall" / "graph" / "state.sqlite") as conn:
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    assert index(codegraph.toolbox(project))["mode"] == "full"


def test_files_the_workspace_denies_are_not_indexed(project: Path) -> None:
    """A deny_read rule keeps a file out of the graph."""
    from toolhall import Workspace

    tb = codegraph.toolbox(Workspace(project, deny_read=["broken.py"]))
    stats = index(tb)
    assert "broken.py" in stats["skipped"]
    assert rows(tb, "MATCH (f:File {id: 'broken.py'}) RETURN f.id") == []


def test_the_first_query_builds_the_graph_when_auto_index_is_on(project: Path) -> None:
    """graph_query indexes on first use; with auto_index off it says to run graph_index."""
    off = codegraph.toolbox(project, auto_index=False)
    result = off.call_sync("graph_query", {"query": "MATCH (f:File) RETURN count(f)"})
    assert not result.ok and result.error is not None
    assert result.error.details == {"reason": "not_indexed"}
    assert rows(codegraph.toolbox(project), "MATCH (f:File) RETURN count(f)") == [[5]]


def test_bad_options_name_the_option(project: Path) -> None:
    """A non-positive limit is a ConfigError naming it."""
    from toolhall._errors import ConfigError

    with pytest.raises(ConfigError, match="max_rows"):
        codegraph.toolbox(project, max_rows=0)
    with pytest.raises(ConfigError, match="query_threads: expected a whole number"):
        codegraph.toolbox(project, query_threads=1.5)  # type: ignore[arg-type]
