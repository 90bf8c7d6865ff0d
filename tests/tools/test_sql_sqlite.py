"""The SQL tools against SQLite (always runs): modes, the authorizer, limits, values, schema, errors."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from tests.tools._sql_support import query, read_only_backend, refusal
from toolhall import ToolCall
from toolhall._errors import ConfigError
from toolhall.tools import sql

T = TypeVar("T")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            """
            CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),
                                 total NUMERIC, placed TEXT DEFAULT CURRENT_TIMESTAMP, receipt BLOB);
            CREATE INDEX orders_customer ON orders(customer_id);
            INSERT INTO customers VALUES (1, 'ada'), (2, 'bob');
            INSERT INTO orders (customer_id, total, receipt) VALUES (1, 9.5, x'00ff'), (2, 20, NULL);
            """
        )
    conn.close()
    return path


def url(path: Path) -> str:
    return f"sqlite:///{path}"


def test_select_returns_columns_rows_and_kind(db: Path) -> None:
    """A read gives column names and types, JSON-safe rows and the statement kind."""
    result = query(sql.toolbox(url=url(db)), "SELECT id, total, receipt FROM orders ORDER BY id")
    assert result.ok, result.error
    data = result.data
    assert data["kind"] == "select"
    assert [c["name"] for c in data["columns"]] == ["id", "total", "receipt"]
    assert data["columns"][0]["type"] == "integer"
    assert data["rows"] == [[1, 9.5, {"base64": "AP8="}], [2, 20, None]]
    assert data["row_count"] == 2 and data["truncated"] is False and data["rows_affected"] is None


def test_params_positional_and_named(db: Path) -> None:
    """`?` takes a list and `:name` an object."""
    tb = sql.toolbox(url=url(db))
    assert query(tb, "SELECT name FROM customers WHERE id = ?", params=[2]).data["rows"] == [["bob"]]
    assert query(tb, "SELECT name FROM customers WHERE id = :id", params={"id": 1}).data["rows"] == [["ada"]]


@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM orders",
        "WITH gone AS (DELETE FROM orders RETURNING *) SELECT * FROM gone",
        "INSERT INTO customers VALUES (3, 'eve')",
        "UPDATE customers SET name = 'x'",
        "DROP TABLE orders",
        "CREATE TABLE evil (a)",
        "ATTACH DATABASE 'other.db' AS o",
        "VACUUM INTO 'copy.db'",
        "PRAGMA writable_schema = 1",
        "SELECT load_extension('evil')",
        "REPLACE INTO customers VALUES (1, 'x')",
    ],
)
def test_read_only_refuses_writes_and_leaves_data_alone(db: Path, statement: str) -> None:
    """Every write in read-only mode is denied, and the data is unchanged."""
    result = query(sql.toolbox(url=url(db)), statement)
    assert not result.ok and result.error.code == "denied", result.error
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM orders").fetchone() == (2,)
    conn.close()
    assert sorted(p.name for p in db.parent.iterdir()) == ["shop.db"]


def test_read_only_connection_refuses_a_write_the_guard_never_saw(db: Path) -> None:
    """The second lock: a read-only connection refuses a write that reaches it."""
    with read_only_backend(url(db)) as backend:
        error = refusal(backend, "DELETE FROM orders")
    assert error.code == "denied" and re.search("readonly|read-only|not authorized", error.message)


def test_authorizer_blocks_attach_and_vacuum_into_in_read_write_mode(db: Path) -> None:
    """The tool is bound to one file: ATTACH and VACUUM INTO are refused even when writes are allowed."""
    tb = sql.toolbox(url=url(db), mode="read_write")
    for statement in (f"ATTACH DATABASE '{db.parent / 'x.db'}' AS o", f"VACUUM INTO '{db.parent / 'y.db'}'"):
        result = query(tb, statement)
        assert not result.ok and result.error.code == "denied", result.error
    assert sorted(p.name for p in db.parent.iterdir()) == ["shop.db"]


def test_read_write_runs_ddl_and_dml_in_a_transaction(db: Path) -> None:
    """DDL and writes work; rows_affected counts changed rows."""
    tb = sql.toolbox(url=url(db), mode="read_write")
    assert query(tb, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)").data["kind"] == "create"
    inserted = query(tb, "INSERT INTO notes (body) VALUES (?), (?)", params=["a", "b"])
    assert inserted.data["rows_affected"] == 2
    returning = query(tb, "UPDATE notes SET body = upper(body) RETURNING id, body")
    assert returning.data["rows"] == [[1, "A"], [2, "B"]] and returning.data["rows_affected"] == 2
    assert query(tb, "VACUUM").ok


def test_batch_is_rolled_back_when_a_statement_fails(db: Path) -> None:
    """With allow_multiple, a failing statement rolls back the ones before it."""
    tb = sql.toolbox(url=url(db), mode="read_write", allow_multiple=True)
    result = query(tb, "DELETE FROM orders; INSERT INTO nowhere VALUES (1)")
    assert not result.ok and result.error.details["statement"] == 1
    assert query(tb, "SELECT count(*) FROM orders").data["rows"] == [[2]]
    ok = query(tb, "INSERT INTO customers VALUES (3, 'eve'); SELECT count(*) FROM customers")
    assert ok.data["kind"] == "batch" and ok.data["results"][1]["rows"] == [[3]]


def test_multiple_statements_are_refused_by_default(db: Path) -> None:
    """Stacked statements need allow_multiple."""
    result = query(sql.toolbox(url=url(db), mode="read_write"), "SELECT 1; DELETE FROM orders")
    assert result.error.code == "denied" and result.error.details["reason"] == "multiple_statements"
    assert result.error.details["kinds"] == ["select", "delete"]


def test_rows_are_capped_without_fetching_the_rest(db: Path) -> None:
    """An endless recursive CTE returns max_rows rows and says it was cut."""
    tb = sql.toolbox(url=url(db), max_rows=50)
    endless = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r"
    result = query(tb, endless)
    assert result.data["row_count"] == 50 and result.data["truncated"] is True
    assert query(tb, endless, max_rows=3).data["rows"] == [[1], [2], [3]]
    assert query(tb, endless, max_rows=10_000).data["max_rows"] == 50  # capped by the configuration


def test_long_query_times_out(db: Path) -> None:
    """A query past its time limit is interrupted inside SQLite and reported as a timeout."""
    endless = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    result = query(sql.toolbox(url=url(db)), endless, timeout=0.2)
    assert result.error.code == "timeout" and result.duration_ms < 3000


def test_database_errors_come_back_as_results(db: Path) -> None:
    """Unknown tables and syntax errors are results with the database's message and code."""
    tb = sql.toolbox(url=url(db), mode="read_write")
    missing = query(tb, "SELECT * FROM nowhere")
    assert missing.error.code == "execution_error" and "no such table" in missing.error.message
    assert missing.error.details["sqlite_code"] == "SQLITE_ERROR"
    assert query(tb, "SELEC 1").error.code == "execution_error"
    denied = query(sql.toolbox(url=url(db)), "SELEC 1")
    assert denied.error.code == "denied" and "could not be parsed" in denied.error.message


def test_empty_sql_is_invalid_input(db: Path) -> None:
    """Only comments: nothing to run."""
    assert query(sql.toolbox(url=url(db)), "-- nothing").error.code == "invalid_input"
    assert query(sql.toolbox(url=url(db)), "").error.code == "invalid_input"


def test_schema_lists_tables_and_describes_one(db: Path) -> None:
    """sql_schema shows columns, keys and indexes, and names unknown tables."""
    tb = sql.toolbox(url=url(db))
    listing = tb.call_sync("sql_schema", {}).data
    assert [t["name"] for t in listing["tables"]] == ["customers", "orders"]
    orders = tb.call_sync("sql_schema", {"table": "orders"}).data
    assert orders["primary_key"] == ["id"]
    reference = {"table": "customers", "columns": ["id"]}
    assert orders["foreign_keys"] == [{"columns": ["customer_id"], "references": reference}]
    index = {"name": "orders_customer", "columns": ["customer_id"], "unique": False, "primary": False}
    assert index in orders["indexes"]
    missing = tb.call_sync("sql_schema", {"table": "nope"})
    assert missing.error.code == "not_found" and missing.error.details["tables"] == ["customers", "orders"]


def test_subjects_carry_text_and_kinds(db: Path) -> None:
    """Policy sees the SQL text and `kind:` subjects, nested writes included."""
    tool = sql.toolbox(url=url(db))["sql_query"]
    text = "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d"
    assert tool.subjects({"sql": text}) == [text, "kind:select", "kind:delete"]
    assert tool.annotations.read_only is True  # type: ignore[attr-defined]


def test_memory_database_persists_across_calls() -> None:
    """`sqlite://` is one private in-memory database shared by the toolbox's calls."""
    tb = sql.toolbox(url="sqlite://", mode="read_write")
    query(tb, "CREATE TABLE t (a)")
    query(tb, "INSERT INTO t VALUES (1)")
    assert query(tb, "SELECT a FROM t").data["rows"] == [[1]]
    assert query(sql.toolbox(url="sqlite://", mode="read_write"), "SELECT a FROM t").error is not None


def test_missing_file_in_read_only_mode_is_an_error_result(tmp_path: Path) -> None:
    """Read-only mode never creates the database file."""
    result = query(sql.toolbox(url=url(tmp_path / "absent.db")), "SELECT 1")
    assert result.error.code == "execution_error" and "absent.db" in result.error.message
    assert not (tmp_path / "absent.db").exists()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"url": "oracle://x"}, "url"),
        ({"url": "sqlite:relative.db"}, "url"),
        ({"url": "sqlite:///x.db", "mode": "write"}, "mode"),
        ({"url": "sqlite:///x.db", "max_rows": 0}, "max_rows"),
        ({"url": "sqlite:///x.db", "timeout": -1}, "timeout"),
        ({"url": "mysql://root@127.0.0.1"}, "url"),
    ],
)
def test_bad_configuration_names_the_option(options: dict[str, Any], named: str) -> None:
    """Building the toolbox with a bad option raises ConfigError naming it."""
    with pytest.raises(ConfigError, match=f"^{named}:"):
        sql.toolbox(**options)


def test_bad_arguments_are_invalid_input(db: Path) -> None:
    """max_rows below 1 or a non-positive timeout are refused before running."""
    tb = sql.toolbox(url=url(db))
    assert query(tb, "SELECT 1", max_rows=0).error.code == "invalid_input"
    assert query(tb, "SELECT 1", timeout=0).error.code == "invalid_input"
    assert query(tb, "SELECT ?", params=[1, 2]).error.code == "execution_error"


@pytest.mark.anyio
async def test_concurrent_calls_each_get_their_own_connection(db: Path) -> None:
    """call_many runs reads side by side and keeps their results apart."""
    tb = sql.toolbox(url=url(db))
    calls = [ToolCall("sql_query", {"sql": "SELECT ?", "params": [i]}) for i in range(20)]
    results = await tb.call_many(calls, concurrency=8)
    assert [r.data["rows"] for r in results] == [[[i]] for i in range(20)]


@pytest.mark.anyio
async def test_cancelling_the_caller_interrupts_the_statement(db: Path) -> None:
    """A caller's cancel scope stops a running query instead of leaving it to finish."""
    tb = sql.toolbox(url=url(db))
    endless = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    with anyio.move_on_after(0.3):
        await tb.call("sql_query", {"sql": endless})
    with anyio.fail_after(5):  # the pool is free again: the interrupted connection came back
        assert (await tb.call("sql_query", {"sql": "SELECT 1"})).ok


def test_a_write_past_the_inline_budget_is_rolled_back_and_run_once_in_a_thread(db: Path) -> None:
    """A big write interrupted on the event loop is undone before it runs again: no row is written twice."""
    tb = sql.toolbox(url=url(db), mode="read_write")
    query(tb, "CREATE TABLE big (n INTEGER)")
    fill = f"INSERT INTO big {count_to(300_000, 'SELECT n FROM r')}"
    for _ in range(2):  # the second call goes straight to the thread (its text is remembered as slow)
        assert query(tb, fill).data["rows_affected"] == 300_000
    counted = query(tb, "SELECT count(*), count(DISTINCT n) FROM big").data["rows"]
    assert counted == [[600_000, 300_000]]


def count_to(n: int, then: str = "SELECT count(*) FROM r") -> str:
    return f"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {n}) {then}"


def ticks_during(call: Callable[[], Awaitable[T]]) -> tuple[T, int]:
    """Await `call` on a fresh loop beside a task ticking every 10 ms; how often it ticked meanwhile."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async def main() -> tuple[T, int]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            await anyio.sleep(0.05)
            before = ticks
            result = await call()
            tg.cancel_scope.cancel()
        return result, ticks - before

    return anyio.run(main)


def test_a_long_read_leaves_the_event_loop_free(db: Path) -> None:
    """While a long query runs, other tasks on the loop keep running (it moved off the loop)."""
    tb = sql.toolbox(url=url(db))
    result, ticks = ticks_during(lambda: tb.call("sql_query", {"sql": count_to(3_000_000)}))
    assert result.data["rows"] == [[3_000_000]]
    assert ticks >= 3, f"the loop ticked only {ticks} times while the query ran for {result.duration_ms} ms"


def test_a_lock_held_elsewhere_is_waited_for_off_the_loop(db: Path) -> None:
    """A write that meets another connection's lock waits in a worker thread, then succeeds."""
    tb = sql.toolbox(url=url(db), mode="read_write")
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(0.3, holder.execute, ["COMMIT"])
    release.start()
    try:
        result, ticks = ticks_during(lambda: tb.call("sql_query", {"sql": "INSERT INTO customers VALUES (3, 'eve')"}))
    finally:
        release.join()
        holder.close()
    assert result.ok and result.data["rows_affected"] == 1, result.error
    assert ticks >= 3, f"the loop ticked only {ticks} times while the call waited {result.duration_ms} ms"
    assert query(tb, "SELECT name FROM customers WHERE id = 3").data["rows"] == [["eve"]]


def test_diagnose_names_a_memory_or_missing_database(tmp_path: Path) -> None:
    """doctor's check for SQLite: a memory database and a missing file are named."""
    assert "in memory" in sql.diagnose("sqlite://")[0]
    assert "absent.db" in sql.diagnose(url(tmp_path / "absent.db"))[0]


@pytest.mark.anyio
async def test_diagnose_is_callable_from_inside_an_event_loop(db: Path) -> None:
    """diagnose() is synchronous, yet works where a loop is already running (doctor inside a server)."""
    assert sql.diagnose(url(db)) == []
