"""graph_query is read-only for real: every file, network and write clause is refused, and nothing appears."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolhall import Toolbox
from toolhall.cli import app
from toolhall.tools import codegraph

FIXTURE = Path(__file__).parent / "fixtures" / "graphproj"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Toolbox]]:
    """One indexed copy of the fixture shared by the read-only tests (they never change it)."""
    root = tmp_path_factory.mktemp("guard") / "proj"
    shutil.copytree(FIXTURE, root)
    tb = codegraph.toolbox(root, max_rows=5)
    assert tb.call_sync("graph_index", {}).ok
    yield root, tb


def _listing(folder: Path) -> set[str]:
    return {str(p) for p in folder.rglob("*")}


ESCAPES = [
    "COPY (MATCH (n) RETURN n.id) TO '{out}/leak.csv'",
    "MATCH (n) RETURN n LIMIT 1; COPY (MATCH (n) RETURN n.id) TO '{out}/leak.csv'",
    "LOAD FROM '/etc/passwd' (file_format='csv', delim=':') RETURN *",
    "LOAD WITH HEADERS (a STRING) FROM '/etc/passwd' RETURN *",
    "EXPORT DATABASE '{out}/dump'",
    "IMPORT DATABASE '{out}/dump'",
    "INSTALL httpfs",
    "LOAD EXTENSION httpfs",
    "ATTACH '{out}/other.db' AS other (dbtype lbug)",
    "DETACH other",
    "USE other",
    "CREATE (:Function {id: 'x'})",
    "MATCH (f:Function) CREATE (f)-[:CALLS {line: 1, how: 'x'}]->(f)",
    "MERGE (:Module {id: 'x'})",
    "MATCH (f:Function) SET f.name = 'x'",
    "MATCH (f:Function) DELETE f",
    "MATCH (f:Function) DETACH DELETE f",
    "MATCH (f:Function) REMOVE f.name",
    "DROP TABLE Function",
    "ALTER TABLE Function ADD extra STRING",
    "CREATE NODE TABLE T(id STRING, PRIMARY KEY (id))",
    "COPY Function FROM '{out}/rows.csv'",
    "BEGIN TRANSACTION",
    "COMMIT",
    "ROLLBACK",
    "CHECKPOINT",
    "CALL current_setting('threads') RETURN *",
    "CALL read_csv('/etc/passwd') RETURN *",
    "match (n) return n; copy (match (n) return n) to '{out}/leak.csv'",
    "/* hidden */ COPY (MATCH (n) RETURN n) TO '{out}/leak.csv'",
]


@pytest.mark.parametrize("statement", ESCAPES)
def test_statements_that_write_or_leave_the_graph_are_denied(
    built: tuple[Path, Toolbox], tmp_path: Path, statement: str
) -> None:
    """Each is refused with `denied` before reaching the engine, and no file appears anywhere."""
    root, tb = built
    before_root, before_out = _listing(root), _listing(tmp_path)
    result = tb.call_sync("graph_query", {"query": statement.replace("{out}", str(tmp_path))})
    assert not result.ok and result.error is not None
    assert result.error.code == "denied", result.error
    assert _listing(root) == before_root
    assert _listing(tmp_path) == before_out
    counts = tb.call_sync("graph_query", {"query": "MATCH (f:Function) RETURN count(f)"})
    assert counts.data["rows"] == [[14]]


def test_keywords_inside_strings_comments_and_properties_are_not_refused(built: tuple[Path, Toolbox]) -> None:
    """'COPY' in a literal, a comment or a property name does not trip the guard."""
    _, tb = built
    query = "MATCH (f:Function) // DELETE everything?\nWHERE f.name <> 'COPY TO' AND f.name <> \"SET\" RETURN count(f)"
    result = tb.call_sync("graph_query", {"query": query})
    assert result.ok, result.error
    assert result.data["rows"] == [[14]]


def test_schema_discovery_calls_are_allowed(built: tuple[Path, Toolbox]) -> None:
    """CALL show_tables() and table_info() work, so agents can find the schema."""
    tb = codegraph.toolbox(built[0], auto_index=False)
    tables = tb.call_sync("graph_query", {"query": "CALL show_tables() RETURN name"})
    assert tables.ok, tables.error
    names = {row[0] for row in tables.data["rows"]}
    assert {"File", "Module", "Class", "Function", "External", "CALLS", "IMPORTS", "OVERRIDES"} <= names
    info = tb.call_sync("graph_query", {"query": "CALL table_info('Function') RETURN name"})
    assert info.ok and ["kind"] in info.data["rows"]


def test_rows_beyond_the_cap_are_cut_and_flagged(built: tuple[Path, Toolbox]) -> None:
    """max_rows (capped by the toolbox limit of 5) truncates and says so."""
    _, tb = built
    result = tb.call_sync("graph_query", {"query": "MATCH (f:Function) RETURN f.id", "max_rows": 3})
    assert (result.data["row_count"], result.data["truncated"]) == (3, True)
    capped = tb.call_sync("graph_query", {"query": "MATCH (f:Function) RETURN f.id", "max_rows": 500})
    assert (capped.data["row_count"], capped.data["max_rows"], capped.data["truncated"]) == (5, 5, True)
    exact = tb.call_sync("graph_query", {"query": "MATCH (c:Class) RETURN c.id"})
    assert (exact.data["row_count"], exact.data["truncated"]) == (4, False)


@pytest.mark.parametrize(
    ("query", "hint"),
    [
        ("MATCH ()-[r]->() RETURN type(r) LIMIT 1", "label(r)"),
        ("MATCH p = shortestPath((a:Function)-[:CALLS*]->(b:Function)) RETURN p", "SHORTEST"),
        ("MATCH p = (a)-[:CALLS*1..2]->(b) RETURN [x IN nodes(p) | x.qname]", "properties(nodes(p)"),
    ],
)
def test_neo4j_dialect_errors_carry_a_hint(built: tuple[Path, Toolbox], query: str, hint: str) -> None:
    """Neo4j-isms fail as invalid_input with the ladybug spelling in the hint."""
    _, tb = built
    result = tb.call_sync("graph_query", {"query": query})
    assert not result.ok and result.error is not None
    assert result.error.code == "invalid_input"
    assert hint in (result.error.details or {}).get("hint", "")


def test_bad_input_is_invalid_input_naming_the_problem(built: tuple[Path, Toolbox]) -> None:
    """An empty query, an unterminated string and a missing parameter are invalid_input."""
    _, tb = built
    for query in ("  ;", "MATCH (f {name: 'x}) RETURN f"):
        result = tb.call_sync("graph_query", {"query": query})
        assert result.error is not None and result.error.code == "invalid_input", query
    missing = tb.call_sync("graph_query", {"query": "MATCH (f:Function {name: $n}) RETURN f.id"})
    assert missing.error is not None and missing.error.code == "invalid_input"
    assert "$n" in missing.error.message


def test_a_long_query_is_interrupted_by_the_engine_timeout(built: tuple[Path, Toolbox]) -> None:
    """The engine stops a runaway query at the configured timeout and the call reports `timeout`."""
    root, _ = built
    tb = codegraph.toolbox(root, query_timeout=0.2, auto_index=False)
    query = "UNWIND range(1, 4000) AS a UNWIND range(1, 4000) AS b UNWIND range(1, 4000) AS c RETURN sum(a*b*c)"
    result = tb.call_sync("graph_query", {"query": query})
    assert result.error is not None and result.error.code == "timeout", result.error


def test_the_schema_is_documented_in_the_tool_description(built: tuple[Path, Toolbox]) -> None:
    """Agents see every table, every relationship and every `how` value in graph_query's description."""
    _, tb = built
    description = tb["graph_query"].description
    for word in ("File", "Module", "Class", "Function", "External", "CONTAINS", "DEFINES", "IMPORTS", "CALLS",
                 "INHERITS", "OVERRIDES", "name-unique", "import-alt", "super", "ctor", "label(r)", "SHORTEST"):
        assert word in description


def test_cli_index_then_graph_prints_rows_and_json(built: tuple[Path, Toolbox], tmp_path: Path) -> None:
    """`toolhall index PATH` then `toolhall graph` with a parameter, as a table and as JSON."""
    root = tmp_path / "cli"
    shutil.copytree(FIXTURE, root)
    runner = CliRunner()
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        indexed = runner.invoke(app, ["index", str(root)])
        assert indexed.exit_code == 0, indexed.output
        assert "full: 5 files" in indexed.output and "broken.py" in indexed.output
        again = runner.invoke(app, ["index", str(root), "--json"])
        assert again.exit_code == 0 and '"mode": "unchanged"' in again.output
        query = "MATCH (c)-[:CALLS]->(f:Function {name: $n}) RETURN c.id AS caller ORDER BY caller"
        table = runner.invoke(app, ["graph", query, "-p", "n=slugify", "--path", str(root)])
        assert table.exit_code == 0, table.output
        assert table.output.split() == ["caller", "app.core.Base.step", "broken.fine", "main.main", "main.shout"]
        as_json = runner.invoke(app, ["graph", "MATCH (c:Class) RETURN count(c) AS n", "--json", "--path", str(root)])
        assert as_json.exit_code == 0 and '"rows": [\n    [\n      4' in as_json.output
        denied = runner.invoke(app, ["graph", "MATCH (n) DELETE n", "--path", str(root)])
        assert denied.exit_code == 1 and "DELETE is not allowed" in denied.output
        bad = runner.invoke(app, ["graph", "MATCH (n) RETURN n", "-p", "nonsense", "--path", str(root)])
        assert bad.exit_code == 2
    finally:
        os.chdir(old)
