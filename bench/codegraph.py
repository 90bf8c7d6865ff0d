"""Code graph on the running interpreter's standard library: full and incremental indexing, query latency,
database size, and the same questions answered by grepping the tree with `search_files`.

Run: `.venv/bin/python bench/codegraph.py` (about a minute on 2 cores). The stdlib is copied to a scratch
folder first (without site-packages, lib-dynload, config-* and __pycache__) so edits never touch it.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe_machine, print_table  # noqa: E402

from toolhall.tools import codegraph, search  # noqa: E402
from toolhall.tools._graph_service import forget  # noqa: E402

QUERIES = {
    "callers of a function by name (formataddr)": (
        "MATCH (c)-[:CALLS]->(f:Function {name: $name}) RETURN DISTINCT c.qname AS caller, f.qname AS callee",
        {"name": "formataddr"},
    ),
    "3-hop call chain from logging.basicConfig": (
        "MATCH (a:Function {qname: $q})-[:CALLS*1..3]->(b:Function) RETURN count(DISTINCT b) AS n",
        {"q": "logging.basicConfig"},
    ),
    "3-hop callers of email.message_from_string": (
        "MATCH (a:Function)-[:CALLS*1..3]->(b:Function {qname: $q}) RETURN count(DISTINCT a) AS n",
        {"q": "email.message_from_string"},
    ),
    "top-10 most-called functions": (
        "MATCH ()-[:CALLS]->(f:Function) RETURN f.qname AS callee, count(*) AS n ORDER BY n DESC LIMIT 10",
        None,
    ),
    "imports of a module (email.utils)": (
        "MATCH (m:Module {qname: $m})-[:IMPORTS]->(d:Module) RETURN DISTINCT d.qname AS dep ORDER BY dep",
        {"m": "email.utils"},
    ),
}

GREPS = {
    "callers of a function by name (formataddr)": {"pattern": r"\bformataddr\(", "glob": "*.py", "limit": 10_000},
    "imports of a module (email.utils)": {"pattern": r"^(import|from) ", "path": "email/utils.py", "limit": 10_000},
    "3-hop callers of email.message_from_string": {"pattern": r"\bmessage_from_string\(", "glob": "*.py",
                                                   "limit": 10_000},
}


def copy_stdlib(target: Path) -> Path:
    """A scratch copy of the stdlib sources."""
    source = Path(sysconfig.get_paths()["stdlib"])
    skip = shutil.ignore_patterns("site-packages", "lib-dynload", "config-*", "__pycache__", "*.pyc")
    shutil.copytree(source, target, ignore=skip, symlinks=True)
    return target


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return (time.perf_counter() - start) * 1000, value


def touch_files(root: Path, count: int, round_: int) -> None:
    """Append a small function calling a stdlib function to `count` files (a real content change)."""
    files = sorted(p for p in root.rglob("*.py") if "test" not in p.parts)[: count * 7 : 7]
    for number, path in enumerate(files[:count]):
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"\n\ndef _bench_added_{round_}_{number}():\n    return len([])\n")


PHASES = ("load", "scan", "parse", "tables", "resolve", "diff", "write", "cache")


def phase_row(label: str, data: dict[str, Any]) -> list[str]:
    """Seconds per indexing stage, as `graph_index` reports them."""
    phases: dict[str, float] = data.get("phases", {})
    cells = [f"{phases[name]:.2f}" if name in phases else "" for name in PHASES]
    return [label, *cells, f"{data['seconds']:.2f}"]


def index_rows(root: Path) -> tuple[list[list[str]], list[list[str]], Any]:
    tb = codegraph.toolbox(root, max_rows=1000)
    rows: list[list[str]] = []
    phases: list[list[str]] = []
    ms, result = timed(lambda: tb.call_sync("graph_index", {}))
    assert result.ok, result.error
    stats = result.data
    phases.append(phase_row("full index", stats))
    rows.append(["full index", f"{ms / 1000:.2f} s", f"{stats['files'] / (ms / 1000):.0f} files/s",
                 f"{stats['files']} files, {stats['nodes']} nodes, {stats['edges']} edges"])
    db = root / ".toolhall" / "graph"
    rows.append(["database size", f"{(db / 'graph.db').stat().st_size / 2**20:.1f} MiB",
                 f"cache {(db / 'state.sqlite').stat().st_size / 2**20:.1f} MiB", ""])
    ms, result = timed(lambda: tb.call_sync("graph_index", {}))
    rows.append(["re-index, nothing changed", f"{ms:.0f} ms", result.data["mode"], f"hashed {result.data['hashed']}"])
    phases.append(phase_row("nothing changed", result.data))
    for round_, count in enumerate((1, 10, 100)):
        touch_files(root, count, round_)
        ms, result = timed(lambda: tb.call_sync("graph_index", {}))
        assert result.ok, result.error
        data = result.data
        rows.append([f"incremental, {count} file(s) changed", f"{ms:.0f} ms", data["mode"],
                     f"parsed {data['parsed']}, resolved {data['resolved']}, "
                     f"+{data['edges_added']}/-{data['edges_removed']} edges"])
        phases.append(phase_row(f"{count} file(s) changed", data))
    forget([db])
    touch_files(root, 1, 9)
    cold = codegraph.toolbox(root, max_rows=1000)
    ms, result = timed(lambda: cold.call_sync("graph_index", {}))
    rows.append(["incremental, 1 file, new process (cache load)", f"{ms:.0f} ms", result.data["mode"],
                 f"parsed {result.data['parsed']}, resolved {result.data['resolved']}"])
    phases.append(phase_row("1 file, new process", result.data))
    return rows, phases, cold


def query_rows(root: Path, tb: Any) -> list[list[str]]:
    files = search.toolbox(root)
    rows: list[list[str]] = []
    for label, (query, params) in QUERIES.items():
        args = {"query": query, "params": params}
        first, result = timed(lambda a=args: tb.call_sync("graph_query", a))
        assert result.ok, result.error
        runs = [timed(lambda a=args: tb.call_sync("graph_query", a))[0] for _ in range(15)]
        answer = result.data["rows"]
        summary = str(answer[0][0]) if len(answer) == 1 else f"{len(answer)} rows"
        grep = GREPS.get(label)
        grep_cell = "n/a (needs a parser)"
        if grep is not None:
            grep_ms, grep_result = timed(lambda g=grep: files.call_sync("search_files", g))
            lines = [line for line in str(grep_result.output).splitlines() if line.strip()]
            grep_cell = f"{grep_ms:.0f} ms, {len(lines)} lines (unresolved)"
        rows.append([label, f"{statistics.median(runs):.1f} ms", f"{first:.1f} ms", summary, grep_cell])
    return rows


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="toolhall-bench-graph-") as scratch:
        root = copy_stdlib(Path(scratch) / "Lib")
        count = sum(1 for _ in root.rglob("*.py"))
        print(f"codegraph bench: {count} stdlib .py files from {sysconfig.get_paths()['stdlib']}")
        print(describe_machine())
        rows, phases, tb = index_rows(root)
        print_table("Indexing", ["step", "time", "rate / mode", "detail"], rows)
        print_table("Where indexing time goes (seconds per stage, from graph_index's `phases`)",
                    ["run", *PHASES, "total"], phases)
        print_table("Queries (median of 15 warm runs, first run) vs search_files",
                    ["question", "graph median", "graph first", "graph answer", "search_files"],
                    query_rows(root, tb))


if __name__ == "__main__":
    main()
