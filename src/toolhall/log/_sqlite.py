"""`SqliteLog`: the default store, one SQLite file in WAL mode with group commit.

Durability: `synchronous=NORMAL` in WAL mode makes a committed transaction survive the process being
killed (the WAL is in the OS page cache), though not a power loss; that is the promise DESIGN.md makes,
and it lets a commit cost microseconds instead of an fsync. Several processes may share one file: writes
wait for the lock (`busy_timeout`, then our own retries) instead of failing with "database is locked".

Where rows are committed: a group of durable rows (those of one event-loop turn) is committed on the loop's
own thread through a connection that never waits (`busy_timeout=0`, no autocheckpoint), about 50 µs of
CPU per commit here; if another process holds the write lock, the group goes to the writer thread, whose
connection waits. The writer thread also checkpoints the WAL every ~4,000 pages the loop's connection wrote.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from .._redact import Redactor
from ._callwrites import Op, RowPlan, plan_rows
from ._migrations import MIGRATIONS, MIGRATIONS_TABLE, Dialect
from ._rows import RowCodec
from ._sqlbase import DEFAULT_MAX_OUTPUT_BYTES, UPDATE_CALL, UPSERT_CALL, SqlLogBase, wrap_error
from ._writer import report_failure, report_recovery

__all__ = ["SqliteLog"]

T = TypeVar("T")
_BUSY_TIMEOUT_MS = 5_000
_RETRY_FOR_S = 60.0  # beyond SQLite's own busy wait: a write gives up only after this long
# WAL pages between checkpoints (SQLite's default is 1,000). Each checkpoint syncs the WAL and the database
# (three fdatasyncs), which on this VM cost more CPU than the page copies; every 4,000 pages, a sequential
# call measured ~95-115 µs of process CPU against ~130-175 every 1,000. The WAL then peaks near 16 MB.
_CHECKPOINT_PAGES = 4000


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SqliteLog(SqlLogBase):
    """A call log, approval queue and session state in one SQLite file (created on first use).

    Example:
        ```python
        log = SqliteLog(".toolhall/state.db")
        session = Session(toolbox, log=log)
        ...
        for record in log.calls(status="error", limit=10):
            print(record.tool, record.error_message)
        ```

    Args:
        path: the database file (its folder is created), or `":memory:"` for a private in-memory log.
        redact: whether the default secret fields and patterns are redacted.
        redact_fields: extra argument names whose values are always redacted.
        redact_patterns: extra regular expressions redacted in every string (a `secret` group limits
            what is replaced).
        redactor: a ready `Redactor` (instead of the three options above).
        max_output_bytes: the cap on each stored output (default 10 MB); longer outputs are cut and the
            row marked truncated.
    """

    _dialect: Dialect = "sqlite"

    def __init__(
        self,
        path: str | Path = ".toolhall/state.db",
        *,
        redact: bool = True,
        redact_fields: Iterable[str] = (),
        redact_patterns: Iterable[str] = (),
        redactor: Redactor | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    ) -> None:
        if not isinstance(path, str | Path):
            raise TypeError(f"SqliteLog path must be a str or Path; got {type(path).__name__}")
        self._memory = str(path) == ":memory:"
        self.path: Path | None = None if self._memory else Path(path)
        self._target = f"file:toolhall-{uuid.uuid4().hex}?mode=memory&cache=shared" if self._memory else str(self.path)
        self._lock = threading.Lock()
        self._conn = self._connect(create=True)
        # In memory, one connection serves everything (each connection would see its own database).
        self._writer_conn: sqlite3.Connection | None = self._conn if self._memory else None
        self._inline_conn: sqlite3.Connection | None = None
        self._inline = not self._memory
        self._inline_pages = 0
        super().__init__(
            redact=redact,
            redact_fields=redact_fields,
            redact_patterns=redact_patterns,
            redactor=redactor,
            max_output_bytes=max_output_bytes,
        )

    def __repr__(self) -> str:
        return f"SqliteLog({':memory:' if self._memory else str(self.path)!r})"

    # -- connections -------------------------------------------------------------------------------
    def _connect(self, *, create: bool = False) -> sqlite3.Connection:
        if create and self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise wrap_error(exc, f"creating the folder of {self.path}") from exc
        try:
            conn = sqlite3.connect(
                self._target, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False,
                uri=self._memory,
            )  # fmt: skip
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            if not self._memory:
                _retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute(f"PRAGMA wal_autocheckpoint = {_CHECKPOINT_PAGES}")
            if create:
                _retry(lambda: _migrate(conn))
        except sqlite3.Error as exc:
            raise wrap_error(exc, f"opening {self._target}") from exc
        return conn

    def _ts_in(self, value: datetime | None) -> Any:
        # Fixed-width UTC text sorts in time order, so range queries and prune use the index.
        if value is None:
            return None
        return (value if value.tzinfo is UTC else value.astimezone(UTC)).isoformat(timespec="microseconds")

    def _ts_out(self, value: Any) -> Any:
        return None if value is None else datetime.fromisoformat(value)

    # -- dialect hooks -----------------------------------------------------------------------------
    def _write_plan(self, plan: RowPlan) -> None:
        if self._writer_conn is None:
            self._writer_conn = self._connect()
        conn = self._writer_conn

        def attempt() -> None:
            with self._lock if self._memory else _NO_LOCK:
                _commit_plan(conn, plan, self._codec)

        _retry(attempt)

    def _commit_inline(self, ops: list[Op]) -> bool:
        # Runs on the event loop's thread, so it must never wait: no busy timeout, no checkpoint
        # (the writer thread's connection checkpoints), and any lock held elsewhere means "queue it".
        conn = self._inline_conn
        try:
            if conn is None:
                conn = self._inline_conn = sqlite3.connect(
                    self._target, timeout=0, isolation_level=None, check_same_thread=False
                )
                conn.execute("PRAGMA busy_timeout = 0")
                conn.execute("PRAGMA wal_autocheckpoint = 0")
                conn.execute("PRAGMA synchronous = NORMAL")
            _commit_plan(conn, plan_rows(ops, self._codec), self._codec)
            # The WAL would grow without end: have the writer thread checkpoint about as often as SQLite's
            # own autocheckpoint would (a commit writes a few pages, plus about one per row).
            self._inline_pages += 3 + len(ops)
            if self._inline_pages >= _CHECKPOINT_PAGES:
                self._inline_pages = 0
                self._writer.request_maintenance()
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                return False  # let the writer thread wait for the lock instead
            report_failure(self, f"writing {len(ops)} call row(s)", exc)
        except Exception as exc:  # noqa: BLE001 - a failing store never fails a call
            report_failure(self, f"writing {len(ops)} call row(s)", exc)
        else:
            report_recovery(self)
        return True

    def _maintain(self) -> None:
        if self._writer_conn is None:
            self._writer_conn = self._connect()
        self._writer_conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._lock:
                return _retry(lambda: self._conn.execute(sql, tuple(params)).fetchall())
        except sqlite3.Error as exc:
            raise wrap_error(exc, "reading") from exc

    def _change(self, sql: str, params: Sequence[Any] = ()) -> int:
        try:
            with self._lock:
                return _retry(lambda: self._conn.execute(sql, tuple(params)).rowcount)
        except sqlite3.Error as exc:
            raise wrap_error(exc, "writing") from exc

    def _close_connections(self) -> None:
        with self._lock:
            for extra in (self._writer_conn, self._inline_conn):
                if extra is not None and extra is not self._conn:
                    extra.close()
            self._conn.close()


def _commit_plan(conn: sqlite3.Connection, plan: RowPlan, codec: RowCodec) -> None:
    """Write a plan in one transaction: whole rows upserted, narrow updates (whole rows where one is missing)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        if plan.inserts:
            conn.executemany(UPSERT_CALL, plan.inserts)
        if plan.updates and conn.executemany(UPDATE_CALL, plan.updates).rowcount < len(plan.updates):
            conn.executemany(UPSERT_CALL, plan.fallback(codec))  # a row nobody inserted (a failed commit)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_LOCK = _NoLock()


def _retry(operation: Callable[[], T]) -> T:
    """Run an operation, retrying with jittered backoff while another process holds the lock."""
    deadline = time.monotonic() + _RETRY_FOR_S
    delay = 0.001
    while True:
        try:
            return operation()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.1)


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute(MIGRATIONS_TABLE)
    applied = {row[0] for row in conn.execute("SELECT name FROM toolhall_migrations")}
    if all(m.name in applied for m in MIGRATIONS):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-read under the write lock: another process may have migrated meanwhile.
        applied = {row[0] for row in conn.execute("SELECT name FROM toolhall_migrations")}
        for migration in MIGRATIONS:
            if migration.name in applied:
                continue
            for statement in migration.statements("sqlite"):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO toolhall_migrations (name, applied_at) VALUES (?, ?)",
                (migration.name, datetime.now(UTC).isoformat(timespec="microseconds")),
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
