"""Stores under test: SQLite in a temp folder, PostgreSQL for real (skips locally without a server)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests._services import require_postgres
from toolhall.log import CallRecord, PostgresLog, SqliteLog


def fresh_pg_tables(dsn: str) -> None:
    """Drop toolhall's tables so a test starts from an empty database."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS toolhall_calls, toolhall_approvals, toolhall_state, toolhall_migrations")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Each store implementation, empty."""
    if request.param == "sqlite":
        log: Any = SqliteLog(tmp_path / "sub" / "state.db")
    else:
        dsn = require_postgres()
        fresh_pg_tables(dsn)
        log = PostgresLog(dsn)
    yield log
    log.close()


def record(**changes: Any) -> CallRecord:
    """A call record with defaults."""
    base: dict[str, Any] = {
        "id": "call_" + uuid.uuid4().hex, "tool": "read_file", "status": "running",
        "started_at": datetime.now(UTC), "session_id": "s1", "input": {"path": "a.txt"},
    }  # fmt: skip
    base.update(changes)
    return CallRecord(**base)
