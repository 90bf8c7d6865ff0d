"""PostgreSQL backend over psycopg 3's asyncio connections: read-only sessions, server-side time limits, streamed rows.

Calls run on the event loop (no worker thread). Every statement goes through `AsyncCursor.stream()`, which
uses the extended query protocol (the server refuses a second statement hidden in the text) and reads rows
in chunks, so a ten-million-row result is never held in memory: reading stops at `max_rows + 1` and psycopg
cancels the rest on the server. The time limit is the session's `statement_timeout`; should the server not
answer by `grace` seconds later, or should the caller give up, the statement is cancelled on the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import psycopg
from psycopg import pq
from psycopg.abc import PQGen
from psycopg.generators import fetch

from .._codes import ErrorCode
from .._errors import ToolCallError
from ._sql_base import Column, DatabaseURL, Mode, Outcome, RunRequest, ServerBackend, database_error, stopped_error
from ._sql_guard import Dialect, Statement
from ._sql_pgschema import describe, diagnose_role
from ._sql_values import row_to_json

__all__ = ["PostgresBackend"]

_CHUNK = 500  # rows per network chunk while streaming (libpq 17+); fewer when the cap is lower
_DENIED_STATES = {"42501", "25006"}  # insufficient_privilege, read_only_sql_transaction
_ExecStatus = pq.ExecStatus
_IDLE, _INERROR = pq.TransactionStatus.IDLE, pq.TransactionStatus.INERROR
T = TypeVar("T")


if not callable(getattr(psycopg.AsyncCursor, "_stream_fetchone_gen", None)):  # pragma: no cover - a future psycopg
    raise ImportError(f"psycopg {psycopg.__version__} is not supported: toolhall needs psycopg>=3.2,<3.4")


class _StreamCursor(psycopg.AsyncCursor[tuple[Any, ...]]):
    """`stream()` that keeps the closing result, so empty results have columns and writes a row count.

    psycopg's own version drops the final result (and refuses one without rows); no public API streams rows
    and keeps it (a named cursor cannot run writes, EXPLAIN or SHOW and costs three more round trips), so
    this mirrors psycopg 3.2-3.3's private `_stream_fetchone_gen` (pinned `<3.4` in pyproject) and keeps that
    result as `pgresult`. The tests pin the behaviour: empty results with columns, writes with row counts.
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
    pg: psycopg.AsyncConnection[tuple[Any, ...]]
    cancel_key: pq.abc.PGcancel
    """The session's cancel key (the server's pid and secret), still usable after psycopg drops the link."""
    timeout_ms: int = 0
    reports_read_only: bool = False
    """Whether the server reports default_transaction_read_only (PostgreSQL 14+), so a lone read can run
    as its own implicit read-only transaction, without BEGIN and ROLLBACK round trips."""
    interrupted: bool = False
    """A statement was cut short by a timeout or the caller: the connection is never reused."""

    def still_read_only(self) -> bool:
        return self.pg.info.parameter_status("default_transaction_read_only") == "on"


class PostgresBackend(ServerBackend[_Conn]):
    """PostgreSQL through psycopg 3 (asyncio connections, used on the caller's event loop)."""

    dialect: Dialect = "postgres"
    server = "PostgreSQL"

    def __init__(self, url: DatabaseURL, mode: Mode) -> None:
        # Idle connections outlive the event loop that opened them (call_sync runs a loop per call): psycopg
        # binds a connection to no loop while nobody waits on its lock, and the pool hands one to one call.
        super().__init__(url, mode, _finish)

    async def run(self, request: RunRequest) -> list[Outcome]:
        """Run the statements in one transaction (rolled back in read-only mode and on error)."""
        conn = await self._checkout()
        try:
            return await _limited(conn, self._run(conn, request), request.timeout, self.grace)
        finally:
            self._release(conn)

    async def schema(self, table: str | None, timeout: float) -> dict[str, Any]:
        """Tables, columns, keys and indexes (one table in detail when named)."""
        conn = await self._checkout()
        try:
            return await _limited(conn, self._schema(conn, table, timeout), timeout, self.grace)
        finally:
            self._release(conn)

    async def diagnose(self) -> list[str]:
        """Warnings about the configured role: a superuser, file or program privileges, write grants."""
        try:
            conn = await self._checkout()
        except ToolCallError as error:
            return [f"sql: {error.message}"]
        try:
            return await diagnose_role(conn.pg)
        finally:
            self._release(conn)

    async def _checkout(self) -> _Conn:
        conn = self._pool.take()
        if conn is not None:
            return conn
        try:
            pg = await psycopg.AsyncConnection.connect(
                self._url.url, autocommit=True, connect_timeout=10, application_name="toolhall",
                cursor_factory=_StreamCursor,
            )
        except psycopg.Error as error:
            raise self._cannot_connect(error, sqlstate=error.sqlstate) from None
        # Always autocommit: a lone statement is its own transaction (one round trip); batches say BEGIN.
        conn = _Conn(pg, pg.pgconn.get_cancel())
        if self._read_only:
            # Two locks: the session default is read-only, and every explicit transaction says READ ONLY.
            await pg.execute("SET default_transaction_read_only = on")
            conn.reports_read_only = conn.still_read_only()
        return conn

    def _release(self, conn: _Conn) -> None:
        pg = conn.pg
        healthy = not conn.interrupted and not pg.closed and pg.info.transaction_status == _IDLE
        if healthy and self._read_only and not conn.still_read_only():
            healthy = False  # the session was talked out of read-only: never reuse it
        self._pool.put(conn, healthy=healthy)

    async def _set_timeout(self, conn: _Conn, seconds: float) -> None:
        wanted = max(1, round(seconds * 1000))
        if conn.timeout_ms != wanted:  # a session setting, so only a changed limit costs a round trip
            await conn.pg.execute(f"SET statement_timeout = {wanted:d}")
            conn.timeout_ms = wanted

    async def _run(self, conn: _Conn, request: RunRequest) -> list[Outcome]:
        pg = conn.pg
        statements = request.statements
        outcomes: list[Outcome] = []
        try:
            await self._set_timeout(conn, request.timeout)
            # A lone statement in autocommit is an implicit transaction: atomic, rolled back on error, and
            # read-only by the session default (checked after the call when the server reports it).
            implicit = len(statements) == 1 and (not request.read_only or conn.reports_read_only)
            cursor = pg.cursor()
            if not implicit:
                # After a query has run, PostgreSQL refuses SET TRANSACTION READ WRITE in this transaction.
                await cursor.execute("BEGIN READ ONLY; SELECT 1" if request.read_only else "BEGIN")
            savepoints = len(statements) > 1 and not request.read_only
            for statement in statements:
                outcomes.append(await _one(pg, cursor, statement, request, savepoints))  # noqa: PERF401 - len() names a failure
            if not implicit:
                failed = pg.info.transaction_status == _INERROR
                await cursor.execute("ROLLBACK" if request.read_only or failed else "COMMIT")
            return outcomes
        except psycopg.Error as error:
            await _rollback(pg)
            raise _error(error, len(outcomes)) from None
        finally:
            if any(s.kind == "set" for s in statements):
                conn.timeout_ms = 0  # a SET may have changed statement_timeout: the next call sets it again

    async def _schema(self, conn: _Conn, table: str | None, timeout: float) -> dict[str, Any]:
        try:
            await self._set_timeout(conn, timeout)
            return await describe(conn.pg, table)
        except psycopg.Error as error:
            raise _error(error, None) from None


async def _limited(conn: _Conn, work: Awaitable[T], timeout: float, grace: float) -> T:
    """Await `work` on this task (no extra task or thread: each costs event-loop turns) within the time limit.

    The server's statement_timeout normally ends a long statement first; `grace` seconds later the client
    steps in. On that deadline, or when the caller gives up, psycopg cancels the statement on the server and
    waits for it to end; a caller whose cancel scope interrupts that wait again (anyio re-delivers
    cancellation) makes psycopg drop the connection instead, so the cancel is then sent here with the
    connection's cancel key.
    """
    try:
        async with asyncio.timeout(timeout + grace):
            return await work
    except TimeoutError:
        await _make_sure_stopped(conn)
        raise stopped_error("timeout", timeout=timeout) from None
    except asyncio.CancelledError:
        await _make_sure_stopped(conn)
        raise


async def _make_sure_stopped(conn: _Conn) -> None:
    conn.interrupted = True
    if conn.pg.closed or conn.pg.info.transaction_status == pq.TransactionStatus.ACTIVE:
        with anyio.CancelScope(shield=True):
            try:  # PQcancel blocks while it connects to the server: a thread keeps the loop free
                await anyio.to_thread.run_sync(conn.cancel_key.cancel)
            except psycopg.Error:  # the server is unreachable: the statement ends with the session
                pass


async def _one(
    pg: psycopg.AsyncConnection[tuple[Any, ...]], cursor: psycopg.AsyncCursor[tuple[Any, ...]],
    statement: Statement, request: RunRequest, savepoint: bool,
) -> Outcome:
    guard = savepoint and not statement.writes
    if guard:
        await cursor.execute("SAVEPOINT toolhall_read")
    rows: list[list[Any]] = []
    columns: list[Column] | None = None
    seen = 0
    stream = cursor.stream(statement.text, request.params, size=min(_CHUNK, request.max_rows + 1))
    assert isinstance(stream, AsyncGenerator)  # closing it is what cancels an abandoned read on the server
    try:
        async for row in stream:
            seen += 1
            if columns is None:
                columns = _columns(cursor)
            if seen <= request.max_rows:
                rows.append(row_to_json(row))
            elif not statement.writes:
                break  # a plain read: psycopg cancels the rest on the server
    finally:
        await stream.aclose()
    truncated = seen > request.max_rows
    result = cursor.pgresult if seen <= request.max_rows or statement.writes else None
    if guard:
        failed = pg.info.transaction_status == _INERROR
        await cursor.execute("ROLLBACK TO SAVEPOINT toolhall_read" if failed else "RELEASE SAVEPOINT toolhall_read")
    if columns is None and result is not None and result.nfields:
        columns = _columns(cursor)
    return Outcome(
        kind=statement.kind, columns=columns or [], rows=rows, truncated=truncated,
        rows_affected=_affected(result, statement, seen, columns is not None), status=_status(result),
    )


def _columns(cursor: psycopg.AsyncCursor[tuple[Any, ...]]) -> list[Column]:
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


def _finish(conn: _Conn) -> None:
    # AsyncConnection.close() is libpq's PQfinish and nothing else; done here so a sync close() can call it.
    conn.pg.pgconn.finish()


async def _rollback(pg: psycopg.AsyncConnection[tuple[Any, ...]]) -> None:
    if pg.closed or pg.info.transaction_status == _IDLE:
        return
    try:
        await pg.execute("ROLLBACK")
    except psycopg.Error:  # the connection died under us; the pool drops it
        pass


def _error(error: psycopg.Error, index: int | None) -> ToolCallError:
    state = error.sqlstate
    message = str(error) or type(error).__name__
    if state == "57014":  # query_canceled: the session's statement_timeout (client-side stops raise elsewhere)
        return stopped_error(None, statement=index, said=message, sqlstate=state)
    code: ErrorCode = "denied" if state in _DENIED_STATES else "execution_error"
    return database_error(message, code=code, statement=index, sqlstate=state,
                          reason=None if state else "connection")
