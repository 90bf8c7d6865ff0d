"""The SQL tools against the real MariaDB/MySQL server: a SELECT-only account for the read-only suite, root
to prove the guard, KILL/max_statement_time checked in the process list. Names are unique per run."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests._services import require_mysql
from tests.tools._sql_support import assert_denied_and_unchanged, query, read_only_backend, refusal
from toolhall.tools import sql

pymysql = pytest.importorskip("pymysql")
pytestmark = pytest.mark.mysql


@dataclass
class My:
    admin_url: str
    reader_url: str
    table: str


def _connect(url: str) -> Any:
    parts = urlsplit(url)
    return pymysql.connect(host=parts.hostname, port=parts.port or 3306, user=parts.username or "root",
                           password=parts.password or "", database=parts.path.lstrip("/"), autocommit=True)


@pytest.fixture(scope="module")
def my() -> Iterator[My]:
    url = require_mysql()
    suffix = uuid.uuid4().hex[:10]
    table, user = f"toolhall_sql_{suffix}", f"toolhall_ro_{suffix}"
    parts = urlsplit(url)
    database = parts.path.lstrip("/")
    admin = _connect(url)
    with admin.cursor() as cur:
        cur.execute(f"""CREATE TABLE {table} (id int AUTO_INCREMENT PRIMARY KEY, name varchar(20) NOT NULL,
                        price decimal(12, 2), born date, seen datetime, blob_ blob, KEY ix_name (name))""")
        cur.execute(f"""INSERT INTO {table} (name, price, born, seen, blob_) VALUES
                        ('ada', 12.34, '1815-12-10', '2024-01-02 03:04:05', x'00ff'),
                        ('bob', NULL, NULL, NULL, NULL)""")
        cur.execute(f"CREATE USER '{user}'@'127.0.0.1'")
        cur.execute(f"GRANT SELECT ON `{database}`.`{table}` TO '{user}'@'127.0.0.1'")
    reader = urlunsplit((parts.scheme, f"{user}@{parts.hostname}:{parts.port or 3306}", parts.path, "", ""))
    try:
        yield My(url, reader, table)
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {table}")
            cur.execute(f"DROP USER IF EXISTS '{user}'@'127.0.0.1'")
        admin.close()


def running(admin_url: str, marker: str) -> list[Any]:
    deadline = time.monotonic() + 5
    conn = _connect(admin_url)
    try:
        while True:
            with conn.cursor() as cur:
                cur.execute("SELECT ID FROM information_schema.PROCESSLIST "
                            "WHERE INFO LIKE %s AND ID <> CONNECTION_ID()", (f"%{marker}%",))
                found = list(cur.fetchall())
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)
    finally:
        conn.close()


def test_values_come_back_json_safe(my: My) -> None:
    """Decimals, dates, datetimes and blobs become JSON-safe values with type names."""
    result = query(sql.toolbox(url=my.reader_url), f"SELECT * FROM {my.table} ORDER BY id")
    assert result.ok, result.error
    assert result.data["rows"][0] == [1, "ada", 12.34, "1815-12-10", "2024-01-02T03:04:05", {"base64": "AP8="}]
    assert {c["name"]: c["type"] for c in result.data["columns"]}["price"] == "decimal"


def test_params_are_escaped(my: My) -> None:
    """`%s` placeholders take params; a quote in a value cannot change the statement."""
    tb = sql.toolbox(url=my.reader_url)
    assert query(tb, f"SELECT id FROM {my.table} WHERE name = %s", params=["bob"]).data["rows"] == [[2]]
    assert query(tb, f"SELECT id FROM {my.table} WHERE name = %s", params=["x' OR '1'='1"]).data["rows"] == []


@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM {t}",
        "UPDATE {t} SET name = 'x'",
        "INSERT INTO {t} (name) VALUES ('eve')",
        "REPLACE INTO {t} (id, name) VALUES (1, 'x')",
        "TRUNCATE TABLE {t}",
        "DROP TABLE {t}",
        "LOAD DATA INFILE '/etc/hostname' INTO TABLE {t}",
        "SELECT * FROM {t} INTO OUTFILE '/tmp/toolhall_evil.txt'",
        "SELECT load_file('/etc/hostname')",
        "SELECT 1 /*!, (DELETE FROM {t}) */",
        "SET SESSION TRANSACTION READ WRITE",
        "SELECT 1; DELETE FROM {t}",
        "SELECT get_lock('toolhall', 1)",
        "SELECT 1 INTO @x",
    ],
)
@pytest.mark.parametrize("who", ["reader", "root"])
def test_read_only_refuses_every_write_trick(my: My, statement: str, who: str) -> None:
    """In read-only mode each write is denied (for root too) and the table is unchanged."""
    assert_denied_and_unchanged(my.reader_url if who == "reader" else my.admin_url, statement.format(t=my.table),
                                admin_url=my.admin_url, check=f"SELECT count(*) FROM {my.table}", rows=[[2]])


def test_the_database_refuses_a_write_that_passes_the_guard(my: My) -> None:
    """The read-only session and transaction stop even root's writes sent straight to the backend (1792)."""
    with read_only_backend(my.admin_url) as backend:
        for text in (f"DELETE FROM {my.table}", f"CREATE TABLE {my.table}_evil (a int)"):
            error = refusal(backend, text)
            assert error.code == "denied" and error.details["errno"] == 1792
    assert query(sql.toolbox(url=my.admin_url), f"SELECT count(*) FROM {my.table}").data["rows"] == [[2]]


def test_ten_million_rows_are_cut_and_stopped_on_the_server(my: My) -> None:
    """A huge result returns max_rows rows, marked truncated, and leaves nothing running."""
    marker = f"huge_{uuid.uuid4().hex[:8]}"
    result = query(sql.toolbox(url=my.admin_url), f"SELECT seq AS {marker} FROM seq_1_to_10000000")
    assert result.data["row_count"] == 1000 and result.data["truncated"] is True
    assert running(my.admin_url, marker) == []


def test_timeout_stops_the_statement_on_the_server(my: My) -> None:
    """max_statement_time stops a long query; the process list no longer shows it."""
    marker = f"sleepy_{uuid.uuid4().hex[:8]}"
    result = query(sql.toolbox(url=my.reader_url), f"SELECT sleep(30) AS {marker}", timeout=0.5)
    assert result.error.code == "timeout", result.error
    assert running(my.admin_url, marker) == []


def test_read_write_commits_and_rolls_back_failed_batches(my: My) -> None:
    """DML is committed per call; a failing batch is undone; errors carry the server's errno."""
    name = f"toolhall_rw_{uuid.uuid4().hex[:10]}"
    tb = sql.toolbox(url=my.admin_url, mode="read_write", allow_multiple=True)
    try:
        assert query(tb, f"CREATE TABLE {name} (id int PRIMARY KEY)").data["rows_affected"] is None
        assert query(tb, f"INSERT INTO {name} VALUES (%s), (%s)", params=[1, 2]).data["rows_affected"] == 2
        failed = query(tb, f"DELETE FROM {name}; INSERT INTO {name} VALUES (1), (1)")
        assert failed.error.details == {"errno": 1062, "statement": 1}
        assert query(tb, f"SELECT count(*) FROM {name}").data["rows"] == [[2]]
        assert query(tb, "SELEC 1").error.details["errno"] == 1064
    finally:
        query(tb, f"DROP TABLE IF EXISTS {name}")


def test_schema_describes_columns_keys_and_indexes(my: My) -> None:
    """sql_schema describes the table the account can see; unknown tables are not_found."""
    tb = sql.toolbox(url=my.reader_url)
    assert [t["name"] for t in tb.call_sync("sql_schema", {}).data["tables"]] == [my.table]
    detail = tb.call_sync("sql_schema", {"table": my.table}).data
    assert detail["primary_key"] == ["id"]
    assert {"name": "ix_name", "columns": ["name"], "unique": False, "primary": False} in detail["indexes"]
    assert tb.call_sync("sql_schema", {"table": "nope"}).error.code == "not_found"


def test_diagnose_flags_root_but_not_a_select_only_account(my: My) -> None:
    """doctor's check: root's global privileges are flagged, the SELECT-only account is clean."""
    assert any("global privileges" in note for note in sql.diagnose(my.admin_url))
    assert sql.diagnose(my.reader_url) == []
