"""The SQL tools against the real PostgreSQL server: a SELECT-only role for the read-only suite, the superuser
to prove the guard, server-side cancellation checked in pg_stat_activity. Names are unique per run."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import anyio
import pytest

from tests._services import require_postgres
from tests.tools._sql_support import assert_denied_and_unchanged, query, read_only_backend, refusal, run_direct
from toolhall.tools import sql

psycopg = pytest.importorskip("psycopg")
pytestmark = pytest.mark.postgres


@dataclass
class Pg:
    admin_url: str
    reader_url: str
    table: str
    secret: str
    role: str


def _with_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    netloc = f"{user}@{host}:{parts.port}" if parts.port else f"{user}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@pytest.fixture(scope="module")
def pg() -> Iterator[Pg]:
    dsn = require_postgres()
    suffix = uuid.uuid4().hex[:10]
    table, secret, role = f"toolhall_sql_{suffix}", f"toolhall_secret_{suffix}", f"toolhall_ro_{suffix}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(
            f"""CREATE TABLE {table} (
                id serial PRIMARY KEY, name text NOT NULL, price numeric(12, 2), born date,
                seen timestamptz, token uuid, blob bytea, doc jsonb, tags int[], wait interval)"""
        )
        admin.execute(
            f"""INSERT INTO {table} (name, price, born, seen, token, blob, doc, tags, wait) VALUES
                ('ada', 12.34, '1815-12-10', '2024-01-02 03:04:05+00', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
                 '\\x00ff', '{{"k": [1, 2.5]}}', '{{1,2}}', '90 seconds'),
                ('bob', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"""
        )
        admin.execute(f"CREATE TABLE {secret} (a int)")
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"GRANT SELECT ON {table} TO {role}")
        try:
            yield Pg(dsn, _with_user(dsn, role), table, secret, role)
        finally:
            admin.execute(f"DROP TABLE IF EXISTS {table}, {secret}")
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def active(admin_url: str, marker: str) -> list[str]:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT query FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s AND pid <> pg_backend_pid()",
            (f"%{marker}%",),
        ).fetchall()
    return [r[0] for r in rows]


def wait_until_idle(admin_url: str, marker: str) -> list[str]:
    deadline = time.monotonic() + 5
    while (running := active(admin_url, marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return running


def test_values_come_back_json_safe(pg: Pg) -> None:
    """Numeric, dates, uuid, bytea, jsonb, arrays and intervals become JSON-safe values with type names."""
    result = query(sql.toolbox(url=pg.reader_url), f"SELECT * FROM {pg.table} ORDER BY id")
    assert result.ok, result.error
    first = dict(zip([c["name"] for c in result.data["columns"]], result.data["rows"][0], strict=True))
    assert first == {
        "id": 1, "name": "ada", "price": 12.34, "born": "1815-12-10", "seen": "2024-01-02T03:04:05+00:00",
        "token": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "blob": {"base64": "AP8="}, "doc": {"k": [1, 2.5]},
        "tags": [1, 2], "wait": 90.0,
    }
    types = {c["name"]: c["type"] for c in result.data["columns"]}
    assert types["price"] == "numeric(12,2)" and types["token"] == "uuid"


def test_big_decimal_stays_exact(pg: Pg) -> None:
    """A numeric a float cannot hold comes back as exact text."""
    result = query(sql.toolbox(url=pg.reader_url), "SELECT 12345678901234567890.123456789::numeric AS n")
    assert result.data["rows"] == [["12345678901234567890.123456789"]]


def test_empty_result_still_has_columns(pg: Pg) -> None:
    """No rows, but the columns are described."""
    result = query(sql.toolbox(url=pg.reader_url), f"SELECT id, name FROM {pg.table} WHERE false")
    assert result.data["rows"] == [] and [c["name"] for c in result.data["columns"]] == ["id", "name"]


def test_params_are_bound_by_the_server(pg: Pg) -> None:
    """`%s` and `%(name)s` placeholders take params; quotes in values are harmless."""
    tb = sql.toolbox(url=pg.reader_url)
    assert query(tb, f"SELECT id FROM {pg.table} WHERE name = %s", params=["ada"]).data["rows"] == [[1]]
    named = query(tb, f"SELECT id FROM {pg.table} WHERE name = %(n)s", params={"n": "bob' OR '1'='1"})
    assert named.data["rows"] == []


@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM {t}",
        "WITH gone AS (DELETE FROM {t} RETURNING *) SELECT * FROM gone",
        "SELECT * INTO toolhall_copy_evil FROM {t}",
        "UPDATE {t} SET name = 'x'",
        "TRUNCATE {t}",
        "DROP TABLE {t}",
        "COPY (SELECT 1) TO PROGRAM 'true'",
        "SELECT lo_import('/etc/hostname')",
        "SELECT pg_read_file('/etc/hostname')",
        "SELECT * FROM dblink('dbname=test', 'DELETE FROM {t}') AS x(a int)",
        "SET TRANSACTION READ WRITE",
        "SET default_transaction_read_only = off",
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "DO $$ BEGIN DELETE FROM {t}; END $$",
        "SELECT 1; DELETE FROM {t}",
        "SELECT 1 /* harmless */; -- still harmless\nDELETE FROM {t}",
        "EXPLAIN ANALYZE DELETE FROM {t}",
        "COMMIT",
        "SELECT nextval('{t}_id_seq')",
    ],
)
@pytest.mark.parametrize("who", ["reader", "superuser"])
def test_read_only_refuses_every_write_trick(pg: Pg, statement: str, who: str) -> None:
    """In read-only mode each write is denied (for the superuser too) and the table is unchanged."""
    assert_denied_and_unchanged(pg.reader_url if who == "reader" else pg.admin_url, statement.format(t=pg.table),
                                admin_url=pg.admin_url, check=f"SELECT count(*), min(name) FROM {pg.table}",
                                rows=[[2, "ada"]])


def test_the_database_refuses_a_write_that_passes_the_guard(pg: Pg) -> None:
    """Read-only is kept by the server too: a write sent straight to the backend fails with 25006."""
    with read_only_backend(pg.admin_url) as backend:
        for text in (f"DELETE FROM {pg.table}", f"CREATE TABLE {pg.table}_evil (a int)"):
            error = refusal(backend, text)
            assert error.code == "denied" and error.details["sqlstate"] == "25006"
        stacked = refusal(backend, f"SET TRANSACTION READ WRITE; DELETE FROM {pg.table}")
        assert stacked.details["sqlstate"] == "25001"
    assert query(sql.toolbox(url=pg.admin_url), f"SELECT count(*) FROM {pg.table}").data["rows"] == [[2]]


def test_a_session_talked_out_of_read_only_is_never_reused(pg: Pg) -> None:
    """A SET that slipped past the guard cannot leak into later calls: that connection is dropped."""
    with read_only_backend(pg.admin_url) as backend:
        run_direct(backend, "SET default_transaction_read_only = off")
        assert refusal(backend, f"DELETE FROM {pg.table}").details["sqlstate"] == "25006"


def test_privileges_of_the_role_are_the_servers_answer(pg: Pg) -> None:
    """A table the SELECT-only role may not read is denied by PostgreSQL with 42501."""
    result = query(sql.toolbox(url=pg.reader_url), f"SELECT * FROM {pg.secret}")
    assert result.error.code == "denied" and result.error.details["sqlstate"] == "42501"


def test_ten_million_rows_are_cut_and_cancelled_on_the_server(pg: Pg) -> None:
    """A huge result returns max_rows rows, marked truncated, and leaves nothing running."""
    marker = f"huge_{uuid.uuid4().hex[:8]}"
    result = query(sql.toolbox(url=pg.reader_url), f"SELECT generate_series(1, 10000000) AS {marker}")
    assert result.data["row_count"] == 1000 and result.data["truncated"] is True
    assert result.data["rows"][-1] == [1000]
    assert wait_until_idle(pg.admin_url, marker) == []


def test_timeout_cancels_the_statement_on_the_server(pg: Pg) -> None:
    """statement_timeout stops a long query; pg_stat_activity no longer shows it."""
    marker = f"sleepy_{uuid.uuid4().hex[:8]}"
    result = query(sql.toolbox(url=pg.reader_url), f"SELECT pg_sleep(30) AS {marker}", timeout=0.5)
    assert result.error.code == "timeout" and result.error.details["sqlstate"] == "57014"
    assert wait_until_idle(pg.admin_url, marker) == []


@pytest.mark.anyio
async def test_cancelled_caller_cancels_the_statement_on_the_server(pg: Pg) -> None:
    """When the awaiting task is cancelled, the query is cancelled on the server, not left running."""
    marker = f"abandoned_{uuid.uuid4().hex[:8]}"
    tb = sql.toolbox(url=pg.reader_url)
    with anyio.move_on_after(0.5):
        await tb.call("sql_query", {"sql": f"SELECT pg_sleep(30) AS {marker}"})
    assert await anyio.to_thread.run_sync(wait_until_idle, pg.admin_url, marker) == []


def test_read_write_runs_ddl_and_commits(pg: Pg) -> None:
    """DDL and DML in read-write mode, each call committed, with rows_affected and the command status."""
    name = f"toolhall_rw_{uuid.uuid4().hex[:10]}"
    tb = sql.toolbox(url=pg.admin_url, mode="read_write")
    try:
        assert query(tb, f"CREATE TABLE {name} (id int PRIMARY KEY, v text)").data["status"] == "CREATE TABLE"
        inserted = query(tb, f"INSERT INTO {name} VALUES (%s, %s), (%s, %s)", params=[1, "a", 2, "b"])
        assert inserted.data["rows_affected"] == 2
        returning = query(tb, f"UPDATE {name} SET v = upper(v) RETURNING id, v")
        assert sorted(returning.data["rows"]) == [[1, "A"], [2, "B"]] and returning.data["rows_affected"] == 2
        duplicate = query(tb, f"INSERT INTO {name} VALUES (1, 'dup')")
        assert duplicate.error.code == "execution_error" and duplicate.error.details["sqlstate"] == "23505"
    finally:
        assert query(tb, f"DROP TABLE IF EXISTS {name}").ok


def test_failed_batch_is_rolled_back_and_cut_reads_keep_earlier_writes(pg: Pg) -> None:
    """A failing statement undoes its batch; a read cut at max_rows does not undo the writes before it."""
    name = f"toolhall_rw_{uuid.uuid4().hex[:10]}"
    tb = sql.toolbox(url=pg.admin_url, mode="read_write", allow_multiple=True)
    try:
        query(tb, f"CREATE TABLE {name} (id int)")
        failed = query(tb, f"INSERT INTO {name} VALUES (1); SELECT 1 / 0")
        assert failed.error.details == {"sqlstate": "22012", "statement": 1}
        cut = query(tb, f"INSERT INTO {name} VALUES (2); SELECT generate_series(1, 1000000)", max_rows=3)
        assert cut.data["results"][1]["truncated"] is True
        assert query(tb, f"SELECT id FROM {name}").data["rows"] == [[2]]
    finally:
        query(tb, f"DROP TABLE IF EXISTS {name}")


def test_syntax_errors_carry_the_sqlstate(pg: Pg) -> None:
    """In read-write mode the server's syntax error comes back; unknown tables give 42P01 in both modes."""
    rw = sql.toolbox(url=pg.admin_url, mode="read_write")
    assert query(rw, "SELEC 1").error.details["sqlstate"] == "42601"
    missing = query(sql.toolbox(url=pg.reader_url), "SELECT * FROM toolhall_no_such_table")
    assert missing.error.code == "execution_error" and missing.error.details["sqlstate"] == "42P01"


def test_schema_describes_columns_keys_and_indexes(pg: Pg) -> None:
    """sql_schema lists the role's tables and describes one; an unknown table is not_found."""
    tb = sql.toolbox(url=pg.reader_url)
    listing = tb.call_sync("sql_schema", {}).data
    assert pg.table in [t["name"] for t in listing["tables"]]
    detail = tb.call_sync("sql_schema", {"table": pg.table}).data
    assert detail["primary_key"] == ["id"]
    assert [c["name"] for c in detail["columns"]][:3] == ["id", "name", "price"]
    assert detail["columns"][1]["nullable"] is False
    assert detail["indexes"][0]["primary"] is True
    assert tb.call_sync("sql_schema", {"table": "toolhall_no_such_table"}).error.code == "not_found"


def test_diagnose_warns_about_a_superuser_only(pg: Pg) -> None:
    """doctor's check: the superuser is flagged, the SELECT-only role is clean."""
    assert any("superuser" in note for note in sql.diagnose(pg.admin_url))
    assert sql.diagnose(pg.reader_url) == []
    assert sql.diagnose("postgresql://nobody@127.0.0.1:1/none")[0].startswith("sql: cannot connect")


def test_client_cancels_on_the_server_when_the_server_limit_is_gone(pg: Pg) -> None:
    """With statement_timeout switched off inside the call, the client's own deadline cancels the query."""
    marker = f"unlimited_{uuid.uuid4().hex[:8]}"
    tb = sql.toolbox(url=pg.admin_url, mode="read_write", allow_multiple=True)
    result = query(tb, f"SET statement_timeout = 0; SELECT pg_sleep(30) AS {marker}", timeout=0.3)
    assert result.error.code == "timeout" and result.error.details["timeout"] == 0.3, result.error
    assert result.duration_ms < 5000
    assert wait_until_idle(pg.admin_url, marker) == []
    again = query(tb, f"SELECT pg_sleep(30) AS {marker}", timeout=0.3)  # the next call restores the limit
    assert again.error.code == "timeout" and again.duration_ms < 1500, again.error
