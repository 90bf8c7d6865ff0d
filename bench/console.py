"""Console cost and latency: what a store poll costs, how soon a call shows up live, how soon an answer lands.

1. **Poll cost**: one feed poll (`CallFeed.refresh`) with nothing new, and with 100 new calls, over SQLite (and
   PostgreSQL when a server answers at TOOLHALL_TEST_PG_DSN), on a store already holding 10,000 calls; and the
   first snapshot (2,000 recent calls loaded). The feed polls only while a page is open, every 0.1 s.
2. **Live latency**: from a call returning to the agent to its `call` event reaching an HTTP client on the
   event stream (the default 0.1 s poll interval), median and p95 over 40 calls.
3. **Answer latency**: from the console's POST of an approval to the agent's waiting call returning, when the
   agent shares the console's store object, and when it uses a second store instance on the same file (as
   another process does).

Run: `.venv/bin/python bench/console.py` (prints tables; no assertion: numbers depend on the machine and load).
"""

# ruff: noqa: E402 - the imports must follow the sys.path fix below
from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http` package (httpx and uvicorn import it): import
# everything with this folder off the path, then put it back for `_common`.
BENCH = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != BENCH]

import asyncio
import json
import os
import socket
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
import uvicorn

from toolhall import PostgresLog, Session, SqliteLog, Toolbox, tool
from toolhall.console import CallFeed, QueueApprover, console_routes
from toolhall.log import CallRecord
from toolhall.mcp.server import http_app

sys.path.insert(0, str(BENCH))
from _common import describe_machine, print_table

PG_DSN = os.environ.get("TOOLHALL_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
TOKEN = "bench-token"


@tool(read_only=True)
def echo(text: str) -> str:
    """Say it back."""
    return text


@tool(subject="path")
def write_note(path: str) -> str:
    """Needs approval."""
    return path


def _pg_up() -> bool:
    parts = urlsplit(PG_DSN)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 5432), timeout=1):
            return True
    except OSError:
        return False


def _pg_store() -> tuple[PostgresLog, str]:
    import psycopg
    from psycopg.conninfo import make_conninfo

    schema = "bench_console_" + uuid.uuid4().hex[:8]
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return PostgresLog(make_conninfo(PG_DSN, options=f"-csearch_path={schema}")), schema


def _drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _fill(store: Any, count: int, *, start: datetime, spacing_ms: float = 120.0) -> None:
    rows = [
        CallRecord(
            id="call_" + uuid.uuid4().hex,
            tool=f"tool_{i % 7}",
            status="ok" if i % 9 else "error",
            started_at=start + timedelta(milliseconds=spacing_ms * i),
            session_id=f"s{i % 5}",
            input={"path": f"f{i}.txt"},
            output="x" * 400,
            ended_at=start + timedelta(milliseconds=spacing_ms * i + 3),
            duration_ms=3.0 + i % 11,
        )  # fmt: skip
        for i in range(count)
    ]

    async def write() -> None:
        for row in rows:
            await store.write(row)

    asyncio.run(write())
    store.flush()


def _ms(seconds: list[float]) -> tuple[str, str]:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{statistics.median(ordered) * 1000:.1f}", f"{p95 * 1000:.1f}"


def poll_cost(name: str, store: Any) -> list[list[str]]:
    """Snapshot load, idle poll and a poll after 100 new calls, on a store holding 10,000 calls (20 minutes' worth)."""
    _fill(store, 10_000, start=datetime.now(UTC) - timedelta(minutes=20))
    feed = CallFeed(store)

    async def measure() -> list[list[str]]:
        t0 = time.perf_counter()
        await feed.snapshot()
        first = time.perf_counter() - t0
        idle = []
        for _ in range(30):
            t0 = time.perf_counter()
            await feed.refresh()
            idle.append(time.perf_counter() - t0)
        busy = []
        for _ in range(5):
            await asyncio.to_thread(_fill, store, 100, start=datetime.now(UTC), spacing_ms=1.0)
            t0 = time.perf_counter()
            await feed.refresh()
            busy.append(time.perf_counter() - t0)
        return [
            [name, "first snapshot (2,000 calls)", f"{first * 1000:.1f}", ""],
            [name, "poll, nothing new", *_ms(idle)],
            [name, "poll, 100 new calls", *_ms(busy)],
        ]

    return asyncio.run(measure())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _cancel_the_rest() -> None:
    left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)


class _Server:
    def __init__(self, store: Any, agent_store: Any) -> None:
        self.session = Session(
            Toolbox([echo, write_note]), log=agent_store, approver=QueueApprover(agent_store, timeout=30)
        )
        port = _free_port()
        app = http_app(self.session, token=TOKEN, port=port, routes=console_routes(store, token=TOKEN))
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1)
        )
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)

    def _run(self) -> None:
        self.loop.run_until_complete(self.server.serve())
        # The console's poller outlives a stream whose client left unnoticed: cancel what is left.
        self.loop.run_until_complete(_cancel_the_rest())

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(self.session.call(name, arguments), self.loop)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.loop.close()


def _events(client: httpx.Client) -> Iterator[tuple[str, Any]]:
    """The console's events, reconnecting with Last-Event-ID as a browser does (streams are short)."""
    last_id = None
    while True:
        headers = {"Last-Event-ID": last_id} if last_id else {}
        with client.stream("GET", "/console/api/events", headers=headers) as response:
            kind = None
            for line in response.iter_lines():
                if line.startswith("id: "):
                    last_id = line[4:]
                elif line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind:
                    yield kind, json.loads(line[6:])


def live_latency(folder: Path) -> list[str]:
    """Call returned → its `ok` event received, over the event stream."""
    store = SqliteLog(folder / "live.db")
    server = _Server(store, store)
    waits = []
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10) as client:
            events = _events(client)
            next(events)
            for i in range(40):
                result = server.call("echo", {"text": f"n{i}"}).result(5)
                done = time.perf_counter()
                next(e for k, e in events if k == "call" and e["id"] == result.call_id and e["status"] == "ok")
                waits.append(time.perf_counter() - done)
            events.close()
    finally:
        server.close()
        store.close()
    return ["call returned → event at the page (SQLite, 0.1 s poll)", *_ms(waits)]


def answer_latency(folder: Path, *, shared: bool) -> list[str]:
    """POST approve → the agent's waiting call returns."""
    store = SqliteLog(folder / f"answer-{shared}.db")
    agent_store = store if shared else SqliteLog(folder / f"answer-{shared}.db")
    server = _Server(store, agent_store)
    waits = []
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10) as client:
            for i in range(20):
                future = server.call("write_note", {"path": f"p{i}"})
                while not (pending := store.pending_approvals()):
                    time.sleep(0.005)
                t0 = time.perf_counter()
                client.post(f"/console/api/approvals/{pending[0].call_id}", json={"decision": "approve"})
                future.result(5)
                waits.append(time.perf_counter() - t0)
    finally:
        server.close()
        if not shared:
            agent_store.close()
        store.close()
    label = "same store object" if shared else "another store instance (as another process)"
    return [f"POST approve → agent's call returns ({label})", *_ms(waits)]


def main() -> None:
    """Print the tables."""
    print(describe_machine())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sqlite = SqliteLog(folder / "poll.db")
        rows = poll_cost("SQLite", sqlite)
        sqlite.close()
        if _pg_up():
            pg, schema = _pg_store()
            try:
                rows += poll_cost("PostgreSQL", pg)
            finally:
                pg.close()
                _drop_schema(schema)
        else:
            rows.append(["PostgreSQL", "skipped: no server at TOOLHALL_TEST_PG_DSN", "", ""])
        print_table("Feed poll cost (store holds 10,000 calls)", ["store", "poll", "median ms", "p95 ms"], rows)
        latency = [live_latency(folder), answer_latency(folder, shared=True), answer_latency(folder, shared=False)]
        print_table("Latency", ["path", "median ms", "p95 ms"], latency)


if __name__ == "__main__":
    main()
