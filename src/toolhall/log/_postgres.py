"""`PostgresLog`: the same store in PostgreSQL, over psycopg 3 with a connection pool.

psycopg is imported when a `PostgresLog` is created (it is the optional `toolhall[postgres]` extra).
The group-commit writer thread keeps one connection of its own and sends each batch as one round trip: the
new rows (upserts), the later writes (narrow updates) and the commit, in a pipeline. Queries, state and
approvals borrow from the pool.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .._redact import Redactor
from ._callwrites import RowPlan
from ._migrations import MIGRATIONS, MIGRATIONS_TABLE, Dialect
from ._sqlbase import DEFAULT_MAX_OUTPUT_BYTES, UPDATE_CALL, UPSERT_CALL, SqlLogBase, wrap_error

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

__all__ = ["PostgresLog"]

_MIGRATION_LOCK = 0x746F6F6C68616C6C  # "toolhall": serialises migrations across processes


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


_UPSERT = _pg(UPSERT_CALL)
_UPDATE = _pg(UPDATE_CALL)
_UPSERT_AND_UPDATE = f"WITH i AS ({_UPSERT}), u AS ({_UPDATE} RETURNING 1) SELECT count(*) FROM u"
Row = tuple[Any, ...]


def _write_pair(conn: psycopg.Connection[Any], plan: RowPlan) -> int:
    """A row or two (one call starting, the one before finishing): one statement, one round trip.

    A lone caller's commit is mostly psycopg's own work per round trip and per transaction: one
    autocommitted statement (a CTE holding both writes) cost ~120 µs of CPU against ~150-210 µs for a
    transaction of two statements, pipelined or not. Returns the number of rows the update changed.
    """
    if plan.inserts and plan.updates:
        row = conn.execute(_UPSERT_AND_UPDATE, plan.inserts[0] + plan.updates[0]).fetchone()
        return int(row[0]) if row else 0
    if plan.inserts:
        conn.execute(_UPSERT, plan.inserts[0])
        return 0
    return conn.execute(_UPDATE, plan.updates[0]).rowcount


def _write_batch(conn: psycopg.Connection[Any], inserts: Sequence[Row], updates: Sequence[Row]) -> int:
    """Many rows: one transaction in one round trip (a pipeline), `executemany` per kind of write.

    Measured against one multi-row statement (per batch size, or over arrays with `unnest`): executemany
    costs the least CPU per row (psycopg dumps scalars in C but arrays in Python). Returns the number of
    rows the updates changed.
    """
    with conn.cursor() as upsert, conn.cursor() as update:
        with conn.pipeline(), conn.transaction():
            if inserts:
                upsert.executemany(_UPSERT, inserts)
            if updates:
                update.executemany(_UPDATE, updates)
        return update.rowcount if updates else 0  # known once the pipeline has synced


class PostgresLog(SqlLogBase):
    """A call log, approval queue and session state in PostgreSQL (tables created on first use).

    Example:
        ```python
        log = PostgresLog("postgresql://toolhall@db.internal/agents")
        session = Session(toolbox, log=log)
        ```

    Args:
        dsn: a libpq connection string or URL.
        redact: whether the default secret fields and patterns are redacted.
        redact_fields: extra argument names whose values are always redacted.
        redact_patterns: extra regular expressions redacted in every string.
        redactor: a ready `Redactor` (instead of the three options above).
        max_output_bytes: the cap on each stored output (default 10 MB).
        pool_size: the most pooled connections for queries, state and approvals.
    """

    _dialect: Dialect = "postgres"

    def __init__(
        self,
        dsn: str,
        *,
        redact: bool = True,
        redact_fields: Iterable[str] = (),
        redact_patterns: Iterable[str] = (),
        redactor: Redactor | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        pool_size: int = 4,
    ) -> None:
        if not isinstance(dsn, str) or not dsn:
            raise ValueError(f"PostgresLog needs a DSN (a non-empty string); got {dsn!r}")
        try:
            import psycopg
            import psycopg_pool
        except ImportError as exc:  # pragma: no cover - the test extra installs it
            raise ImportError("PostgresLog needs psycopg: pip install 'toolhall[postgres]'") from exc
        self.dsn = dsn
        self._psycopg = psycopg
        self._writer_conn: psycopg.Connection[Any] | None = None
        self._writer_lock = threading.Lock()
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                _migrate(conn)
            self._pool: psycopg_pool.ConnectionPool[Any] = psycopg_pool.ConnectionPool(
                dsn, min_size=1, max_size=max(1, pool_size), kwargs={"autocommit": True}, open=True
            )
        except psycopg.Error as exc:
            raise wrap_error(exc, f"connecting to {_safe(dsn)}") from exc
        super().__init__(
            redact=redact,
            redact_fields=redact_fields,
            redact_patterns=redact_patterns,
            redactor=redactor,
            max_output_bytes=max_output_bytes,
        )

    def __repr__(self) -> str:
        return f"PostgresLog({_safe(self.dsn)!r})"

    def _ts_in(self, value: datetime | None) -> Any:
        return value

    def _ts_out(self, value: Any) -> Any:
        return value

    def _write_plan(self, plan: RowPlan) -> None:
        psycopg = self._psycopg
        with self._writer_lock:
            conn = self._connection()
            try:
                if len(plan.inserts) <= 1 and len(plan.updates) <= 1:
                    updated = _write_pair(conn, plan)
                else:
                    updated = _write_batch(conn, plan.inserts, plan.updates)
                if updated < len(plan.updates):
                    # A row nobody inserted (its commit failed): write the whole rows.
                    _write_batch(conn, plan.fallback(self._codec), [])
            except psycopg.Error:
                if conn.broken:  # the next batch reconnects
                    conn.close()
                raise

    def _connection(self) -> psycopg.Connection[Any]:
        if self._writer_conn is None or self._writer_conn.closed:
            self._writer_conn = self._psycopg.connect(self.dsn, autocommit=True)
            # The row must survive *our* process crashing, which it does once the server has it;
            # waiting for the server's fsync as well would cost milliseconds per commit.
            self._writer_conn.execute("SET synchronous_commit = off")
        return self._writer_conn

    def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._pool.connection() as conn:
                return list(conn.execute(_pg(sql), tuple(params)).fetchall())
        except self._psycopg.Error as exc:
            raise wrap_error(exc, "reading") from exc

    def _change(self, sql: str, params: Sequence[Any] = ()) -> int:
        try:
            with self._pool.connection() as conn:
                count: int = conn.execute(_pg(sql), tuple(params)).rowcount
                return count
        except self._psycopg.Error as exc:
            raise wrap_error(exc, "writing") from exc

    def _close_connections(self) -> None:
        with self._writer_lock:
            if self._writer_conn is not None:
                self._writer_conn.close()
        self._pool.close()


def _safe(dsn: str) -> str:
    """The DSN without its password, for messages."""
    return Redactor().text(dsn)


def _migrate(conn: psycopg.Connection[Any]) -> None:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(MIGRATIONS_TABLE)
        applied = {row[0] for row in conn.execute("SELECT name FROM toolhall_migrations").fetchall()}
        for migration in MIGRATIONS:
            if migration.name in applied:
                continue
            for statement in migration.statements("postgres"):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO toolhall_migrations (name, applied_at) VALUES (%s, now()::text)", (migration.name,)
            )
