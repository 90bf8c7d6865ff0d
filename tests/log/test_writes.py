"""How call rows are written: durable before `write` returns, grouped, narrow later writes, fallbacks."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from toolhall.log import SqliteLog

from .conftest import record


def _outside(store: Any, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run SQL on a connection of our own, as another process would see the store."""
    if isinstance(store, SqliteLog):
        with sqlite3.connect(store.path) as conn:  # type: ignore[arg-type]
            return conn.execute(sql, params).fetchall()
    import psycopg

    with psycopg.connect(store.dsn, autocommit=True) as conn:
        cursor = conn.execute(sql.replace("?", "%s"), params)
        return cursor.fetchall() if cursor.description else []


def _ids(store: Any) -> set[str]:
    return {row[0] for row in _outside(store, "SELECT id FROM toolhall_calls")}


class _Reader:
    """One connection of our own that sees what is committed; `has(id)` asks it synchronously."""

    def __init__(self, store: Any) -> None:
        if isinstance(store, SqliteLog):
            self.conn: Any = sqlite3.connect(store.path, isolation_level=None)  # type: ignore[arg-type]
            self.sql = "SELECT 1 FROM toolhall_calls WHERE id = ?"
        else:
            import psycopg

            self.conn = psycopg.connect(store.dsn, autocommit=True)
            self.sql = "SELECT 1 FROM toolhall_calls WHERE id = %s"

    def has(self, call_id: str) -> bool:
        return self.conn.execute(self.sql, (call_id,)).fetchone() is not None


@pytest.mark.anyio
@pytest.mark.parametrize("calls", [50, 300])
async def test_concurrent_durable_writes_are_each_committed_before_they_return(store: Any, calls: int) -> None:
    """Many calls writing at once (one group on the loop's thread; over 256, on the writer thread): each row
    is visible to another connection the moment its write returns."""
    reader = _Reader(store)
    missing: list[str] = []

    async def one() -> None:
        rec = record()
        await store.write(rec, durable=True)
        if not reader.has(rec.id):  # synchronously: nothing else runs on this loop before the check
            missing.append(rec.id)

    try:
        async with anyio.create_task_group() as tg:
            for _ in range(calls):
                tg.start_soon(one)
    finally:
        reader.conn.close()
    assert missing == []


@pytest.mark.anyio
async def test_a_final_write_updates_the_row_and_keeps_what_the_start_wrote(store: Any) -> None:
    """running → ok by the same record's fields: input, subjects and start time stay, the outcome lands."""
    start = record(subjects=("a.txt",), parent_id="p", worker="w", role="r", tool_version="v")
    await store.write(start, durable=True)
    done = replace(start, status="error", output="boom", error_code="execution_error", error_message="it broke",
                   error_details={"line": 3}, ended_at=datetime.now(UTC), duration_ms=1.5, output_chars=4,
                   approval="policy")  # fmt: skip
    await store.write(done)
    got = store.get(start.id)
    assert got is not None
    assert (got.status, got.output, got.error_code, got.error_message, got.error_details) == (
        "error", "boom", "execution_error", "it broke", {"line": 3}
    )  # fmt: skip
    assert got.input == {"path": "a.txt"} and got.subjects == ("a.txt",) and got.parent_id == "p"
    assert got.started_at == start.started_at and got.duration_ms == 1.5 and got.approval == "policy"


@pytest.mark.anyio
async def test_a_later_write_whose_row_vanished_writes_the_whole_row(store: Any) -> None:
    """If the started row is gone (deleted from outside), the final write still leaves a complete row."""
    start = record()
    await store.write(start, durable=True)
    await anyio.to_thread.run_sync(_outside, store, "DELETE FROM toolhall_calls WHERE id = ?", (start.id,))
    await store.write(replace(start, status="ok", output="fine"), durable=True)
    got = store.get(start.id)
    assert got is not None and got.status == "ok" and got.output == "fine" and got.input == {"path": "a.txt"}


@pytest.mark.anyio
async def test_a_reused_call_id_with_other_fields_replaces_the_whole_row(store: Any) -> None:
    """A second call under the same id (a model repeating ids) is not merged into the first one's row."""
    first = record(tool="read_file", input={"path": "a"})
    await store.write(first, durable=True)
    second = record(id=first.id, tool="write_file", input={"path": "b"})
    await store.write(second, durable=True)
    got = store.get(first.id)
    assert got is not None and got.tool == "write_file" and got.input == {"path": "b"}
    third = record(id=first.id, tool="run_command", input={"command": "ls"}, status="ok")
    await store.write(third, durable=True)
    got = store.get(first.id)
    assert got is not None and got.tool == "run_command" and got.input == {"command": "ls"} and got.status == "ok"


@pytest.mark.anyio
async def test_a_large_output_is_stored_whole_off_the_event_loop(store: Any) -> None:
    """A final row with a large output (redacted by the writer thread) is stored in full, redacted."""
    start = record()
    await store.write(start, durable=True)
    big = "line of output\n" * 20_000 + "token=sk-ant-abcdefghijklmnopqrstuv\n"
    await store.write(replace(start, status="ok", output=big, output_chars=len(big)))
    await store.write(record(), durable=True)  # a later durable write must not wait for it, nor lose it
    got = store.get(start.id)
    assert got is not None and got.status == "ok" and got.output_chars == len(big)
    assert got.output is not None and got.output.startswith("line of output") and "sk-ant" not in got.output


@pytest.mark.anyio
async def test_lazy_final_rows_reach_the_store_without_a_flush(store: Any) -> None:
    """A final row nobody waits for is committed by the writer thread within moments."""
    rec = record(status="ok")
    await store.write(rec)
    with anyio.fail_after(5):
        while rec.id not in await anyio.to_thread.run_sync(_ids, store):
            await anyio.sleep(0.01)


@pytest.mark.anyio
async def test_final_writes_of_many_vanished_rows_write_whole_rows(store: Any) -> None:
    """A group of final writes whose rows were deleted meanwhile still leaves every row complete."""
    starts = [record() for _ in range(6)]

    async def start(rec: Any) -> None:
        await store.write(rec, durable=True)

    async with anyio.create_task_group() as tg:
        for rec in starts:
            tg.start_soon(start, rec)
    await anyio.to_thread.run_sync(_outside, store, "DELETE FROM toolhall_calls")
    for rec in starts:
        await store.write(replace(rec, status="ok", output="done"))
    store.flush()
    rows = _outside(store, "SELECT status, output, input FROM toolhall_calls")
    assert len(rows) == 6 and {row[:2] for row in rows} == {("ok", "done")} and rows[0][2] == '{"path":"a.txt"}'
