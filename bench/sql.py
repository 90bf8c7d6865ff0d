"""SQL tool benchmark: per-query overhead of `sql_query` against the raw driver, and peak memory of a
10-million-row query capped at 1,000 rows.

Run: `.venv/bin/python bench/sql.py` (prints a table; no assertion, numbers vary with the machine). PostgreSQL
rows are skipped when no server answers at TOOLHALL_TEST_PG_DSN (default postgresql://postgres@127.0.0.1/test).
"""

from __future__ import annotations

import os
import resource
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from toolhall.tools import sql

PG_DSN = os.environ.get("TOOLHALL_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
ROUNDS = 400
SLOW_SQLITE = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {n}) SELECT count(*) FROM r"
SLOW_PG = "SELECT count(*) FROM generate_series(1, {n})"
HUGE = {
    "sqlite": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10000000) SELECT n FROM r",
    # in the select list, so PostgreSQL streams it (in FROM, the function materialises all rows first)
    "postgres": "SELECT generate_series(1, 10000000) AS g",
}


async def paired_us(raw: Callable[[], Any], tb: Any, text: str, params: list[Any] | None,
                    rounds: int = ROUNDS) -> Sample:
    """The raw driver and `sql_query`, sampled alternately so machine load hits both alike."""
    args = {"sql": text, "params": params}
    for _ in range(20):
        raw()
        result = await tb.call("sql_query", args)
        assert result.ok, result.error
    raws, tools = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        raw()
        middle = time.perf_counter()
        await tb.call("sql_query", args)
        end = time.perf_counter()
        raws.append((middle - start) * 1e6)
        tools.append((end - middle) * 1e6)
    return Sample(raws, tools)


def calibrate(raw: Callable[[str], Any], template: str) -> str:
    """The statement from `template` that takes about 1 ms on the raw driver.

    Timed by a low percentile, not the median, so that a loaded machine does not pick a smaller statement.
    """
    n = 1000
    while n < 10_000_000:
        text = template.format(n=n)
        if percentile([timed(lambda: raw(text)) for _ in range(30)], 10) >= 1000:  # noqa: B023 - used at once
            return text
        n = int(n * 1.25)
    return template.format(n=n)


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e6


def percentile(samples: list[float], pct: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[pct - 1]


@dataclass
class Sample:
    """Paired timings in microseconds: the raw driver's and the tool's, round by round."""

    raws: list[float]
    tools: list[float]

    def row(self, name: str) -> str:
        raw, tool = statistics.median(self.raws), statistics.median(self.tools)
        quiet_raw, quiet_tool = percentile(self.raws, 10), percentile(self.tools, 10)
        ratio = f"{tool / raw:.2f}x" if raw else "-"
        quiet_ratio = f"{quiet_tool / quiet_raw:.2f}x" if quiet_raw else "-"
        return (f"| {name} | {raw:.0f} | {tool:.0f} | {tool - raw:.0f} | {ratio} | {quiet_tool - quiet_raw:.0f} | "
                f"{quiet_ratio} |")


def sqlite_rows(folder: Path) -> list[tuple[str, Sample]]:
    path = folder / "bench.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, price REAL)")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, f"n{i}", i * 1.5) for i in range(1000)])
    conn.close()
    raw_conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def raw(text: str, params: tuple[Any, ...] = ()) -> Any:
        return raw_conn.execute(text, params).fetchmany(1001)

    tb = sql.toolbox(url=f"sqlite:///{path}")
    point = "SELECT id, name, price FROM t WHERE id = ?"
    slow = calibrate(raw, SLOW_SQLITE)
    return [
        ("sqlite point query", anyio.run(paired_us, lambda: raw(point, (7,)), tb, point, [7])),
        ("sqlite ~1 ms query", anyio.run(paired_us, lambda: raw(slow), tb, slow, None, 200)),
    ]


def pg_rows() -> list[tuple[str, Sample]]:
    import psycopg

    raw_conn = psycopg.connect(PG_DSN, autocommit=True)

    def raw(text: str, params: tuple[Any, ...] | None = None) -> Any:
        return raw_conn.execute(text, params).fetchmany(1001)

    tb = sql.toolbox(url=PG_DSN)
    point = "SELECT 1 AS id, 'x' AS name WHERE 1 = %s"
    slow = calibrate(raw, SLOW_PG)
    return [
        ("postgres point query", anyio.run(paired_us, lambda: raw(point, (1,)), tb, point, [1])),
        ("postgres ~1 ms query", anyio.run(paired_us, lambda: raw(slow), tb, slow, None, 200)),
    ]


def memory_child(dialect: str, url: str) -> None:
    """Run in a fresh process: peak RSS growth and Python allocation peak of one capped 10M-row query."""
    tb = sql.toolbox(url=url, max_rows=1000)
    tb.call_sync("sql_query", {"sql": "SELECT 1"})  # connect and import everything first
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    start = time.perf_counter()
    result = tb.call_sync("sql_query", {"sql": HUGE[dialect]})
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert result.ok and result.data["row_count"] == 1000 and result.data["truncated"], result.error
    print(f"{(after - before) / 1024:.1f} {peak / 2**20:.1f} {elapsed * 1000:.0f}")


def memory_row(dialect: str, url: str) -> str:
    out = subprocess.run([sys.executable, __file__, "--memory", dialect, url], capture_output=True, text=True,
                         check=True).stdout.split()
    return f"| {dialect} 10M rows capped at 1,000 | +{out[0]} MB RSS | {out[1]} MB Python peak | {out[2]} ms |"


def pg_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


def core_row() -> tuple[str, Sample]:
    """What the core's Toolbox.call costs by itself: a no-op async tool with the same parameters."""
    from toolhall import Toolbox, tool

    @tool
    async def noop(sql: str, params: list[Any] | None = None) -> dict[str, Any]:
        """Do nothing."""
        return {}

    tb = Toolbox([noop])

    async def alone() -> Sample:
        samples = []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            await tb.call("noop", {"sql": "SELECT 1", "params": None})
            samples.append((time.perf_counter() - start) * 1e6)
        return Sample([0.0] * ROUNDS, samples)

    return ("(core: Toolbox.call of a no-op async tool)", anyio.run(alone))


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        rows = [core_row(), *sqlite_rows(Path(folder))]
        if pg_up():
            rows += pg_rows()
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {ROUNDS} paired rounds (200 for "
              "~1 ms); p10 = 10th percentile of each side, nearer what a quiet machine shows")
        print()
        print("| query | raw driver (µs) | sql_query (µs) | added (µs) | ratio | added, p10 (µs) | ratio, p10 |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, sample in rows:
            print(sample.row(name))
        print()
        print("| memory | peak RSS growth | Python allocations peak | wall time |")
        print("|---|---:|---:|---:|")
        print(memory_row("sqlite", f"sqlite:///{folder}/bench.db"))
        if pg_up():
            print(memory_row("postgres", PG_DSN))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--memory":
        memory_child(sys.argv[2], sys.argv[3])
    else:
        main()
