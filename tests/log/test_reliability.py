"""Reliability, for real: a SIGKILL mid-run, and eight processes sharing one log."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._services import require_postgres

from .conftest import fresh_pg_tables

_ROOT = Path(__file__).resolve().parents[2]
_ENV = {**os.environ, "PYTHONPATH": str(_ROOT)}


def _spawn(kind: str, target: str, count: int, marks: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.log._worker_proc", kind, target, str(count), marks],
        cwd=_ROOT, env=_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_sigkill_mid_run_leaves_a_readable_log_with_every_started_call(tmp_path: Path) -> None:
    """Every call whose handler started has its row after the process is killed with SIGKILL."""
    db, marks = tmp_path / "state.db", tmp_path / "started.txt"
    proc = _spawn("sqlite", str(db), 1000, str(marks))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if marks.exists() and marks.read_text().count("\n") >= 200:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    started = [line for line in marks.read_text().splitlines() if line]
    assert 200 <= len(started) < 1000, "the kill should land mid-run"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        ids = {row[0] for row in conn.execute("SELECT id FROM toolhall_calls")}
    missing = [call_id for call_id in started if call_id not in ids]
    assert missing == []


def _run_eight(kind: str, target: str) -> None:
    procs = [_spawn(kind, target, 2000, "-") for _ in range(8)]
    outputs = [proc.communicate(timeout=240) for proc in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert "failed=0" in out, out + err
        assert "database is locked" not in err


@pytest.mark.slow
def test_eight_processes_share_one_sqlite_log_without_losing_a_row(tmp_path: Path) -> None:
    """8 × 2,000 calls into one SQLite file: 16,000 final rows, no lock error escapes."""
    db = tmp_path / "state.db"
    _run_eight("sqlite", str(db))
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT status, count(*) FROM toolhall_calls GROUP BY status").fetchall()
    assert rows == [("ok", 16000)]


@pytest.mark.slow
@pytest.mark.postgres
def test_eight_processes_share_one_postgres_log_without_losing_a_row() -> None:
    """8 × 2,000 calls into one PostgreSQL log: 16,000 final rows."""
    dsn = require_postgres()
    fresh_pg_tables(dsn)
    _run_eight("postgres", dsn)
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT status, count(*) FROM toolhall_calls GROUP BY status").fetchall()
    assert rows == [("ok", 16000)]
