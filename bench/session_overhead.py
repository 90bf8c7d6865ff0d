"""Session overhead: µs per call through `Session` (no log, SQLite, PostgreSQL) against `Toolbox.call`,
and logged calls per second, sequential and with 100 concurrent calls.

Run: `.venv/bin/python bench/session_overhead.py` (prints tables; no assertion, numbers vary with the machine
and its load). PostgreSQL rows are skipped when no server answers at TOOLHALL_TEST_PG_DSN; they use a schema of
their own (`toolhall_bench`), so tests dropping toolhall's tables in the same database meanwhile do not interfere.

Calls per second are wall-clock and fall with the machine's load; "CPU µs / call" (this process's CPU time,
every thread, over the calls) moves much less with load and is the number to compare between runs.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import describe_machine, interleaved_us, print_table  # noqa: E402

from toolhall import Policy, PostgresLog, Session, SqliteLog, Toolbox, tool  # noqa: E402

PG_DSN = os.environ.get("TOOLHALL_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
PG_SCHEMA = "toolhall_bench"


@tool(read_only=True)
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    await asyncio.sleep(0)  # a real tool yields at least once; it lets concurrent calls share commits
    return a + b


def _pg_up() -> bool:
    parts = urlsplit(PG_DSN)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 5432), timeout=1):
            return True
    except OSError:
        return False


def _fresh_pg() -> PostgresLog:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {PG_SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA {PG_SCHEMA}")
    options = quote(f"-c search_path={PG_SCHEMA}")
    return PostgresLog(PG_DSN + ("&" if "?" in PG_DSN else "?") + f"options={options}")


async def _throughput(session: Session, calls: int, concurrency: int) -> tuple[float, float]:
    """Calls per second (wall clock) and CPU µs per call (every thread of this process)."""
    args = {"a": 1, "b": 2}
    start, cpu = time.perf_counter(), time.process_time()

    async def worker(count: int) -> None:
        for _ in range(count):
            await session.call("add", args)

    # `concurrency` callers, each calling in a loop: always that many calls in flight. (A semaphore over one
    # task per call measured the semaphore: waking the next of 20,000 waiters walks the queue.)
    share, extra = divmod(calls, concurrency)
    await asyncio.gather(*(worker(share + (i < extra)) for i in range(concurrency)))
    if session.log is not None:
        await asyncio.to_thread(session.log.flush)
    elapsed = time.perf_counter() - start
    return calls / elapsed, (time.process_time() - cpu) / calls * 1e6


async def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    toolbox = Toolbox([add])
    stores: dict[str, Any] = {"no log": False, "SqliteLog": SqliteLog(tmp / "state.db")}
    if _pg_up():
        stores["PostgresLog"] = _fresh_pg()
    sessions = {name: Session(toolbox, log=store, policy=Policy()) for name, store in stores.items()}
    args = {"a": 1, "b": 2}

    cases: dict[str, Any] = {"Toolbox.call": lambda: toolbox.call("add", args)}
    for name, session in sessions.items():
        cases[f"Session ({name})"] = lambda s=session: s.call("add", args)
    per_call = await interleaved_us(cases, rounds=15, budget_s=0.05)
    base = per_call["Toolbox.call"]
    print(describe_machine())
    print_table(
        "µs per sequential call (median of interleaved rounds)",
        ["path", "µs / call", "added vs Toolbox.call"],
        [[name, f"{us:.1f}", "" if name == "Toolbox.call" else f"+{us - base:.1f}"] for name, us in per_call.items()],
    )
    rows = []
    for name, session in sessions.items():
        if name == "no log":
            continue
        sequential, seq_cpu = await _throughput(session, 5_000, 1)
        concurrent, conc_cpu = await _throughput(session, 20_000, 100)
        rows.append([name, f"{sequential:,.0f}", f"{seq_cpu:.0f}", f"{concurrent:,.0f}", f"{conc_cpu:.0f}"])
    print_table(
        "logged calls per second (durable row before each handler; every row committed at the end)",
        ["store", "sequential", "CPU µs / call", "100 concurrent", "CPU µs / call"],
        rows,
    )
    for session in sessions.values():
        session.close()
    for store in stores.values():
        if store is not False:
            store.close()


if __name__ == "__main__":
    asyncio.run(main())
