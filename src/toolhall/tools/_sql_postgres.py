"""PostgreSQL backend over psycopg 3: read-only transactions, server-side statement timeouts, streamed rows.

Every statement goes through `Cursor.stream()`, which uses the extended query protocol (the server refuses
a second statement hidden in the text) and reads rows in chunks, so a ten-million-row result is never held
in memory: reading stops at `max_rows + 1` and psycopg cancels the rest on the server.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from functools import partial
from typing import Any

import psycopg
from psycopg import pq
from psycopg.abc import PQGen
from psycopg.generators import fetch

from .._codes import ErrorCode
from .._errors import ToolCallError
from ._sql_base import Column, DatabaseURL, Interrupt, Mode, Outcome, Pool, RunRequest, database_error
from ._sql_guard import Dialect, Statement
from ._sql_pgschema import describe, diagnose_role
from ._sql_values import row_to_json

__all__ = ["PostgresBackend"]

_CHUNK = 500  # rows per network chunk while streaming (libpq 17+); fewer when the cap is lower
_DENIED_STATES = {"42501", "25006"}  # insufficient_privilege, read_only_sql_transaction
_ExecStatus = pq.ExecStatus


class _StreamCursor(psycopg.Cursor[tuple[Any, ...]]):
    """`stream()` that keeps the closing result, so empty results have columns and writes a row count.

    psycopg's own version drops the final result (and refuses one without rows); this override mirrors it
    (psycopg 3.2-3.3 `_stream_fetchone_gen`) and keeps that result as `pgresult`. The tests pin the behaviour.
    """

    def _stream_fetchone_gen(self, first: bool) -> PQGen[pq.abc.PGresult | None]:
        res: pq.abc.PGresult | None = yield from fetch(self._pgconn)
        if res is None:
            return None
        status = res.status
        if status in (_ExecStatus.SINGLE_TUPLE, _ExecStatus.TUPLES_CHUNK):
            self.pgresult = res
            self._tx.set_pgresult(res, set_loaders=first)
            if first:
                self._make_row = self._make_row_maker()
            return res
        if status in (_ExecStatus.TUPLES_OK, _ExecStatus.COMMAND_OK):
            self.pgresult = res
            self._tx.set_pgresult(res, set_loaders=first)
            while res is not None:
                res = yield from fetch(self._pgconn)
            return None
        self._raise_for_result(res)
        return None


@dataclass(slots=True)
class _Conn:
    pg: psycopg.Connection[tuple[Any, ...]]
    timeout_ms: int = 0
    reports_read_only: bool = False
    """Whether the server reports default_transaction_read_only (PostgreSQL 14+), so a lone read can run
    as its own implicit read-only transaction, without BEGIN and ROLLBACK round trips."""

    def still_read_only(self) -> bool:
        return self.pg.info.parameter_status("default_transaction_read_only") == "on"


class PostgresBackend:
    """PostgreSQL through psycopg 3 (sync connections, used from worker threads)."""

    dialect: Dialect = "postgres"
    pyformat = True
    grace = 2.0  # the server's own limit fires first; the client cancels only if the server does not answer

    def __init__(self, url: DatabaseURL, mode: Mode) -> None:
        self._url = url
        self._read_only = mode == "read_only"
        self._pool: Pool[_Conn] = Pool(self._connect, lambda c: c.pg.close())

    def _connect(self) -> _Conn:
        pg = psycopg.connect(self._url.url, autocommit=True, connect_timeout=10, application_name="toolhall",
                             cursor_factory=_StreamCursor)
        if self._read_only:
            # Two locks: every transaction psycopg opens says BEGIN READ ONLY, and the session default agrees.
            pg.execute("SET default_transaction_read_only = on")
            pg.read_only = True
        pg.autocommit = False
        conn = _Conn(pg)
        conn.reports_read_only = self._read_only and conn.still_read_only()
        return conn

    def _checkout(self) -> _Conn:
        try:
            return self._pool.get()
        except psycopg.Error as error:
            raise database_error(f"cannot connect to PostgreSQL at {self._url.safe}: {error}",
                                 sqlstate=error.sqlstate, reason="connect") from None

    def _set_timeout(self, conn: _Conn, seconds: float) -> None:
        wanted = max(1, round(seconds * 1000))
        if conn.timeout_ms != wanted:  # a session setting, so only a changed limit costs a round trip
            conn.pg.autocommit = True
            conn.pg.execute(f"SET statement_timeout = {wanted:d}")
            conn.pg.autocommit = False
            conn.timeout_ms = wanted

    def run(self, request: RunRequest, interrupt: Interrupt) -> list[Outcome]:
        """Run the statements in one transaction (rolled back in read-only mode and on error)."""
        conn = self._checkout()
        pg = conn.pg
        outcomes: list[Outcome] = []
        try:
            self._set_timeout(conn, request.timeout)
            interrupt.arm(partial(pg.cancel_safe, timeout=5.0))
            lone_read = conn.reports_read_only and len(request.statements) == 1
            pg.autocommit = lone_read or _outside_transaction(request)
            cursor = pg.cursor()
            if request.read_only and len(request.statements) > 1:
                # Once a query has run, PostgreSQL refuses SET TRANSACTION READ WRITE in this transaction.
                cursor.execute("SELECT 1")
            savepoints = len(request.statements) > 1 and not request.read_only
            for statement in request.statements:
                outcomes.append(_one(pg, cursor, statement, request, savepoints))  # noqa: PERF401 - len() names a failure
            if pg.autocommit:
                pass
            elif request.read_only or pg.info.transaction_status == pq.TransactionStatus.INERROR:
                pg.rollback()
            else:
                pg.commit()
            return outcomes
        except psycopg.Error as error:
            _rollback(pg)
            raise _error(error, len(outcomes), interrupt) from None
        finally:
            interrupt.disarm()
            self._release(conn)

    def _release(self, conn: _Conn) -> None:
        pg = conn.pg
        healthy = not pg.closed and not pg.broken and pg.info.transaction_status == pq.TransactionStatus.IDLE
        if healthy and self._read_only and not conn.still_read_only():
            healthy = False  # the session was talked out of read-only: never reuse it
        if healthy and pg.autocommit:
            pg.autocommit = False
        self._pool.put(conn, healthy=healthy)

    def schema(self, table: str | None, timeout: float, interrupt: Interrupt) -> dict[str, Any]:
        """Tables, columns, keys and indexes (one table in detail when named)."""
        conn = self._checkout()
        try:
            self._set_timeout(conn, timeout)
            interrupt.arm(partial(conn.pg.cancel_safe, timeout=5.0))
            return describe(conn.pg, table)
        except psycopg.Error as error:
            raise _error(error, None, interrupt) from None
        finally:
            _rollback(conn.pg)
            interrupt.disarm()
            self._release(conn)

    def diagnose(self) -> list[str]:
        """Warnings about the configured role: a superuser, file or program privileges, write grants."""
        try:
            conn = self._checkout()
        except ToolCallError as error:
            return [f"sql: {error.message}"]
        try:
            return diagnose_role(conn.pg)
        finally:
            _rollback(conn.pg)
            self._release(conn)

    def close(self) -> None:
        """Close pooled connections."""
        self._pool.close()


def _outside_transaction(request: RunRequest) -> bool:
    # VACUUM, CREATE DATABASE, ... CONCURRENTLY refuse to run in a transaction block; alone they run as is.
    if request.read_only or len(request.statements) != 1:
        return False
    text = request.statements[0].text.lower()
    kind = request.statements[0].kind
    return kind in {"vacuum", "reindex", "cluster"} or (kind in {"create", "drop", "alter"} and (
        "concurrently" in text or " database " in f" {text} " or " tablespace " in f" {text} "
        or text.startswith("alter system")
    ))


def _one(
    pg: psycopg.Connection[tuple[Any, ...]], cursor: psycopg.Cursor[tuple[Any, ...]], statement: Statement,
    request: RunRequest, savepoint: bool,
) -> Outcome:
    guard = savepoint and not statement.writes
    if guard:
        cursor.execute("SAVEPOINT toolhall_read")
    rows: list[list[Any]] = []
    columns: list[Column] | None = None
    seen = 0
    stream = cursor.stream(statement.text, request.params, size=min(_CHUNK, request.max_rows + 1))
    assert isinstance(stream, Generator)  # closing it is what cancels an abandoned read on the server
    try:
        for row in stream:
            seen += 1
            if columns is None:
                columns = _columns(cursor)
            if seen <= request.max_rows:
                rows.append(row_to_json(row))
            elif not statement.writes:
                break  # a plain read: psycopg cancels the rest on the server
    finally:
        stream.close()
    truncated = seen > request.max_rows
    result = cursor.pgresult if seen <= request.max_rows or statement.writes else None
    if guard:
        failed = pg.info.transaction_status == pq.TransactionStatus.INERROR
        cursor.execute("ROLLBACK TO SAVEPOINT toolhall_read" if failed else "RELEASE SAVEPOINT toolhall_read")
    if columns is None and result is not None and result.nfields:
        columns = _columns(cursor)
    return Outcome(
        kind=statement.kind, columns=columns or [], rows=rows, truncated=truncated,
        rows_affected=_affected(result, statement, seen, columns is not None), status=_status(result),
    )


def _columns(cursor: psycopg.Cursor[tuple[Any, ...]]) -> list[Column]:
    return [Column(name=d.name, type=d.type_display) for d in cursor.description or ()]


def _status(result: pq.abc.PGresult | None) -> str | None:
    # The command tag ("UPDATE 3"); libpq leaves it empty on the closing result of a chunked stream.
    if result is None or not result.command_status:
        return None
    return result.command_status.decode("utf-8", "replace")


def _affected(result: pq.abc.PGresult | None, statement: Statement, seen: int, has_rows: bool) -> int | None:
    if not statement.changes_rows:
        return None
    if has_rows:
        return seen  # a write with RETURNING returns one row per row it changed
    return result.command_tuples if result is not None else None


def _rollback(pg: psycopg.Connection[tuple[Any, ...]]) -> None:
    if pg.closed or pg.broken:
        return
    try:
        pg.rollback()
    except psycopg.Error:  # the connection died under us; the pool drops it
        pass


def _error(error: psycopg.Error, index: int | None, interrupt: Interrupt) -> ToolCallError:
    state = error.sqlstate
    message = str(error) or type(error).__name__
    if state == "57014":  # query_canceled: our timeout, the statement_timeout, or the caller's cancel
        if interrupt.reason == "cancelled":
            return database_error("the statement was cancelled on the server", code="cancelled",
                                  statement=index, sqlstate=state)
        return database_error(f"the statement ran past its time limit and was cancelled on the server ({message})",
                              code="timeout", statement=index, sqlstate=state)
    code: ErrorCode = "denied" if state in _DENIED_STATES else "execution_error"
    return database_error(message, code=code, statement=index, sqlstate=state,
                          reason=None if state else "connection")
