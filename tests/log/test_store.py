"""SqliteLog and PostgresLog behave the same: rows, queries, prune, state, approvals, redaction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolhall import LogStore, LogStoreError
from toolhall.log import PendingApproval, SqliteLog

from .conftest import record


def test_stores_implement_the_protocol(store: Any) -> None:
    """Both stores satisfy the LogStore protocol."""
    assert isinstance(store, LogStore)


@pytest.mark.anyio
async def test_a_durable_write_is_readable_at_once_and_round_trips(store: Any) -> None:
    """Every field written comes back as it was."""
    rec = record(subjects=("a.txt",), parent_id="p1", worker="w", role="r", tool_version="v1", data={"k": [1, 2]})
    await store.write(rec, durable=True)
    got = store.get(rec.id)
    assert got is not None
    assert got.subjects == ("a.txt",) and got.parent_id == "p1" and got.data == {"k": [1, 2]}
    assert got.started_at == rec.started_at and got.status == "running"


@pytest.mark.anyio
async def test_later_writes_replace_the_row(store: Any) -> None:
    """The row of a call is kept current: the final write wins."""
    rec = record()
    await store.write(rec, durable=True)
    done = record(id=rec.id, status="ok", output="hello", ended_at=datetime.now(UTC), duration_ms=2.5, output_chars=5)
    await store.write(done)
    got = store.get(rec.id)
    assert got is not None and got.status == "ok" and got.output == "hello" and got.duration_ms == 2.5


@pytest.mark.anyio
async def test_calls_filters_and_orders_newest_first(store: Any) -> None:
    """Filters by session, tool, status and age; newest first; limit applies."""
    now = datetime.now(UTC)
    old = record(started_at=now - timedelta(days=2), tool="old_tool")
    await store.write(old)
    for i in range(3):
        await store.write(record(started_at=now + timedelta(seconds=i), status="ok" if i else "error", session_id="s2"))
    assert [r.tool for r in store.calls(tool="old_tool")] == ["old_tool"]
    recent = store.calls(since=timedelta(hours=1))
    assert len(recent) == 3 and recent[0].started_at > recent[-1].started_at
    assert len(store.calls(session_id="s2", status="ok")) == 2
    assert len(store.calls(limit=1)) == 1
    assert len(store.calls(limit=None)) == 4


def test_calls_rejects_an_unknown_status_naming_the_allowed_ones(store: Any) -> None:
    """A wrong status is a clear error."""
    with pytest.raises(ValueError, match="status must be one of .*cancelled"):
        store.calls(status="done")
    with pytest.raises(ValueError, match="limit must be a positive integer"):
        store.calls(limit=0)


@pytest.mark.anyio
async def test_prune_deletes_only_old_calls(store: Any) -> None:
    """Calls older than the cutoff go; newer ones stay."""
    now = datetime.now(UTC)
    await store.write(record(id="old", started_at=now - timedelta(days=40)))
    await store.write(record(id="new", started_at=now))
    assert store.prune(timedelta(days=30)) == 1
    assert store.get("old") is None and store.get("new") is not None


def test_session_state_round_trips(store: Any) -> None:
    """get/set/delete state per session and key."""
    assert store.get_state("s1", "cookies") is None
    store.set_state("s1", "cookies", "jar-1")
    store.set_state("s1", "cookies", "jar-2")
    store.set_state("s2", "cookies", "other")
    assert store.get_state("s1", "cookies") == "jar-2"
    store.delete_state("s1", "cookies")
    store.delete_state("s1", "cookies")
    assert store.get_state("s1", "cookies") is None and store.get_state("s2", "cookies") == "other"


@pytest.mark.anyio
async def test_an_answer_from_elsewhere_wakes_the_waiting_call(store: Any) -> None:
    """A pending approval answered (as a console would) ends the wait promptly, once."""
    store.request_approval(
        PendingApproval(call_id="c1", tool="write_file", requested_at=datetime.now(UTC), session_id="s1",
                        arguments={"path": "x", "token": "sekret"}, subjects=("x",))
    )  # fmt: skip
    [pending] = store.pending_approvals()
    assert pending.arguments == {"path": "x", "token": "[REDACTED]"}
    result: list[Any] = []

    async def waiter() -> None:
        result.append(await store.wait_for_answer("c1", timeout=5))

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.sleep(0.1)
        started = anyio.current_time()
        await anyio.to_thread.run_sync(lambda: store.answer_approval("c1", "approve", scope="tool", answered_by="t"))
    assert anyio.current_time() - started < 1.0
    assert result[0].decision == "approve" and result[0].scope == "tool"
    assert store.answer_approval("c1", "deny") is False
    assert store.pending_approvals() == []


@pytest.mark.anyio
async def test_waiting_for_an_answer_times_out_with_none(store: Any) -> None:
    """No answer within the timeout gives None."""
    store.request_approval(PendingApproval(call_id="c2", tool="t", requested_at=datetime.now(UTC)))
    assert await store.wait_for_answer("c2", timeout=0.1) is None


@pytest.mark.anyio
async def test_secrets_are_redacted_before_they_are_written(store: Any) -> None:
    """Argument fields, URL passwords and tokens never reach the table."""
    rec = record(
        input={"url": "postgres://bob:hunter2@db/x", "api_key": "abc123", "n": 3},
        status="ok",
        output="Authorization: Bearer abcdefghijklmnop and sk-ant-abcdefghijklmnopqrstuv",
    )
    await store.write(rec, durable=True)
    got = store.get(rec.id)
    assert got is not None
    assert got.input == {"url": "postgres://bob:[REDACTED]@db/x", "api_key": "[REDACTED]", "n": 3}
    assert "abcdefghijklmnop" not in (got.output or "") and "sk-ant" not in (got.output or "")


@pytest.mark.anyio
async def test_output_over_the_cap_is_cut_and_marked(tmp_path: Path) -> None:
    """The stored output stops at the cap and the row says it was truncated."""
    with SqliteLog(tmp_path / "s.db", max_output_bytes=1000) as log:
        rec = record(status="ok", output="é" * 5000, output_chars=5000)
        await log.write(rec, durable=True)
        got = log.get(rec.id)
    assert got is not None and got.truncated and len((got.output or "").encode()) <= 1000
    assert got.output_chars == 5000


def test_sqlite_creates_its_folder_and_reopens_migrated(tmp_path: Path) -> None:
    """The file and folder appear on first use; reopening applies no migration twice."""
    path = tmp_path / "a" / "b" / "state.db"
    SqliteLog(path).close()
    SqliteLog(path).close()
    import sqlite3

    with sqlite3.connect(path) as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM toolhall_migrations")]
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert names == ["0001_calls_approvals_state"] and mode == "wal"


def test_an_unusable_path_is_a_log_store_error(tmp_path: Path) -> None:
    """A path that cannot hold a database raises LogStoreError naming it."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(LogStoreError, match="file"):
        SqliteLog(blocker / "state.db")


@pytest.mark.anyio
async def test_a_failing_store_never_fails_the_write_and_reports_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Writes to a broken database return normally; the logger hears about it once."""
    log = SqliteLog(tmp_path / "s.db")
    import sqlite3

    with sqlite3.connect(tmp_path / "s.db") as conn:  # break it for real, from outside
        conn.execute("DROP TABLE toolhall_calls")
    for _ in range(5):
        await log.write(record(), durable=True)
    log.close()
    failures = [r for r in caplog.records if "failed" in r.getMessage()]
    assert len(failures) == 1
