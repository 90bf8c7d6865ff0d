"""MySQL/MariaDB backend over PyMySQL: read-only session and transactions, server-side time limits, KILL QUERY.

Rows are read with an unbuffered cursor, so a huge result is never held in memory; once `max_rows + 1` rows
are read from a plain read, the rest is stopped with `KILL QUERY` from a side connection. Multi-statement
packets stay disabled (the PyMySQL default), so the server itself refuses a second statement in one call,
and `LOAD DATA LOCAL` stays off.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import pymysql
from pymysql.constants import FIELD_TYPE
from pymysql.cursors import SSCursor

from .._codes import ErrorCode
from .._errors import ToolCallError
from ._sql_base import (
    Column,
    DatabaseURL,
    Interrupt,
    Mode,
    Outcome,
    RunRequest,
    ServerBackend,
    database_error,
    in_thread,
    stopped_error,
)
from ._sql_guard import Dialect, Statement
from ._sql_myschema import describe, diagnose_grants
from ._sql_values import row_to_json

__all__ = ["MysqlBackend"]

_RENAMES = {"var_string": "varchar", "string": "char", "newdecimal": "decimal", "long": "int", "longlong": "bigint",
            "tiny": "tinyint", "short": "smallint", "int24": "mediumint", "newdate": "date", "long_blob": "longblob",
            "medium_blob": "mediumblob", "tiny_blob": "tinyblob"}
_TYPE_NAMES = {v: _RENAMES.get(k.lower(), k.lower()) for k, v in vars(FIELD_TYPE).items()
               if k.isupper() and isinstance(v, int)}
_TIMEOUT_ERRNOS = {1969, 3024}  # MariaDB max_statement_time, MySQL max_execution_time
_KILLED = 1317  # query execution was interrupted (KILL QUERY)
_DENIED_ERRNOS = {1792, 1142, 1143, 1044, 1045, 1227, 1290, 1370, 1148, 1095}
_CHUNK = 500


@dataclass(slots=True)
class _Conn:
    db: pymysql.connections.Connection[Any]
    thread_id: int
    timeout: float | None = None
    dead: bool = False


class MysqlBackend(ServerBackend[_Conn]):
    """MySQL or MariaDB through PyMySQL (blocking connections, each call in a worker thread)."""

    dialect: Dialect = "mysql"
    server = "MySQL"

    def __init__(self, url: DatabaseURL, mode: Mode) -> None:
        super().__init__(url, mode, lambda c: c.db.close())
        self._mariadb: bool | None = None
        self._side: pymysql.connections.Connection[Any] | None = None
        self._side_lock = threading.Lock()

    def _open(self) -> pymysql.connections.Connection[Any]:
        url = self._url
        return pymysql.connect(
            host=url.host or "127.0.0.1", port=url.port or 3306, user=url.user or "root", password=url.password or "",
            database=url.database, charset="utf8mb4", autocommit=True, connect_timeout=10, local_infile=False,
        )

    def _connect(self) -> _Conn:
        db = self._open()
        if self._mariadb is None:
            self._mariadb = "mariadb" in db.get_server_info().lower()
        if self._read_only:
            # Session-wide, so even the statement after a DDL's implicit commit is read-only.
            db.query("SET SESSION TRANSACTION READ ONLY")
        return _Conn(db, db.thread_id())

    def _checkout(self) -> _Conn:
        try:
            return self._pool.take() or self._connect()
        except pymysql.MySQLError as error:
            raise self._cannot_connect(error, errno=_errno(error)) from None

    def _set_timeout(self, conn: _Conn, seconds: float) -> None:
        if conn.timeout != seconds:
            if self._mariadb:
                conn.db.query(f"SET SESSION max_statement_time = {seconds:.3f}")
            else:  # MySQL limits only SELECT this way; KILL QUERY covers the rest
                conn.db.query(f"SET SESSION max_execution_time = {max(1, round(seconds * 1000)):d}")
            conn.timeout = seconds

    def kill(self, thread_id: int) -> None:
        """Stop the statement running on connection `thread_id` (from a side connection)."""
        with self._side_lock:
            if self._side is None or not self._side.open:
                self._side = self._open()
            self._side.query(f"KILL QUERY {int(thread_id):d}")

    async def run(self, request: RunRequest) -> list[Outcome]:
        """Run the statements in one transaction (rolled back in read-only mode and on error)."""
        return await in_thread(partial(self._run, request), request.timeout, self.grace)

    async def schema(self, table: str | None, timeout: float) -> dict[str, Any]:
        """Tables, columns, keys and indexes (one table in detail when named)."""
        return await in_thread(partial(self._schema, table, timeout), timeout, self.grace)

    async def diagnose(self) -> list[str]:
        """Warnings about the configured account: all privileges, FILE or SUPER, write grants."""
        return await anyio.to_thread.run_sync(self._diagnose)

    def _run(self, request: RunRequest, interrupt: Interrupt) -> list[Outcome]:
        conn = self._checkout()
        outcomes: list[Outcome] = []
        healthy = False
        try:
            self._set_timeout(conn, request.timeout)
            interrupt.arm(lambda: self.kill(conn.thread_id))
            conn.db.query("START TRANSACTION READ ONLY" if request.read_only else "START TRANSACTION")
            for statement in request.statements:
                outcomes.append(self._one(conn, statement, request, interrupt))  # noqa: PERF401 - len() names a failure
            if not conn.dead:
                conn.db.query("ROLLBACK" if request.read_only else "COMMIT")
            healthy = not conn.dead
            return outcomes
        except pymysql.MySQLError as error:
            healthy = _rollback(conn)
            raise _error(error, len(outcomes), interrupt) from None
        finally:
            interrupt.disarm()
            self._pool.put(conn, healthy=healthy)

    def _one(self, conn: _Conn, statement: Statement, request: RunRequest, interrupt: Interrupt) -> Outcome:
        cursor = SSCursor(conn.db)
        try:
            cursor.execute(statement.text, request.params)
            if cursor.description is None:
                affected = max(cursor.rowcount, 0) if statement.changes_rows else None
                return Outcome(kind=statement.kind, rows_affected=affected)
            columns = [Column(name=d[0], type=_TYPE_NAMES.get(d[1])) for d in cursor.description]
            rows = _read(cursor, request.max_rows + 1)
            truncated = len(rows) > request.max_rows
            seen = len(rows)
            if truncated and statement.writes:
                seen += _drain(cursor)  # finish the write; discard rows past the cap
            elif truncated:
                self._stop(conn, cursor, interrupt, abandon=_may_abandon(request, statement))
            kept = [row_to_json(r) for r in rows[: request.max_rows]]
            return Outcome(kind=statement.kind, columns=columns, rows=kept, truncated=truncated,
                           rows_affected=seen if statement.writes else None)
        finally:
            _close(cursor)

    def _stop(self, conn: _Conn, cursor: SSCursor, interrupt: Interrupt, *, abandon: bool) -> None:
        """A plain read past the cap: stop it on the server rather than read (and discard) the rest.

        When nothing is left to commit, closing the connection is the quickest stop (the server aborts the
        query on its next write); otherwise KILL QUERY, then read what was already in flight.
        """
        if abandon:
            result = getattr(cursor, "_result", None)
            if result is not None:  # PyMySQL would otherwise try to read the rest from the closed socket
                result.unbuffered_active = False
            cursor.connection = None
            conn.dead = True
            conn.db.close()
            return
        if not interrupt.fired:
            self.kill(conn.thread_id)
        try:
            _drain(cursor)
        except pymysql.MySQLError as error:
            if _errno(error) != _KILLED:
                raise

    def _schema(self, table: str | None, timeout: float, interrupt: Interrupt) -> dict[str, Any]:
        conn = self._checkout()
        healthy = False
        try:
            self._set_timeout(conn, timeout)
            interrupt.arm(lambda: self.kill(conn.thread_id))
            described = describe(conn.db, table)
            healthy = True
            return described
        except pymysql.MySQLError as error:
            raise _error(error, None, interrupt) from None
        finally:
            interrupt.disarm()
            self._pool.put(conn, healthy=healthy)

    def _diagnose(self) -> list[str]:
        try:
            conn = self._checkout()
        except ToolCallError as error:
            return [f"sql: {error.message}"]
        try:
            return diagnose_grants(conn.db)
        finally:
            self._pool.put(conn)

    def close(self) -> None:
        """Close pooled connections and the side connection."""
        super().close()
        with self._side_lock:
            side, self._side = self._side, None
        if side is not None:
            try:
                side.close()
            except pymysql.MySQLError:  # already closed by the server; nothing left to release
                pass


def _may_abandon(request: RunRequest, statement: Statement) -> bool:
    # The connection can be dropped only after the call's last statement, with no writes to commit.
    last = request.statements[-1] is statement
    return last and (request.read_only or len(request.statements) == 1)


def _read(cursor: SSCursor, limit: int) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    while len(rows) < limit:
        batch = cursor.fetchmany(min(_CHUNK, limit - len(rows)))
        if not batch:
            break
        rows.extend(batch)
    return rows


def _drain(cursor: SSCursor) -> int:
    count = 0
    while batch := cursor.fetchmany(_CHUNK):
        count += len(batch)
    return count


def _close(cursor: SSCursor) -> None:
    try:
        cursor.close()
    except pymysql.MySQLError:  # an unread, killed result: the connection reports it here; already handled
        pass


def _rollback(conn: _Conn) -> bool:
    try:
        conn.db.query("ROLLBACK")
        return True
    except pymysql.MySQLError:  # the link is gone; the pool drops the connection
        return False


def _errno(error: pymysql.MySQLError) -> int | None:
    first = error.args[0] if error.args else None
    return first if isinstance(first, int) else None


def _error(error: pymysql.MySQLError, index: int | None, interrupt: Interrupt) -> ToolCallError:
    errno = _errno(error)
    message = str(error.args[1]) if len(error.args) > 1 else str(error)
    if errno in _TIMEOUT_ERRNOS or (errno == _KILLED and interrupt.fired):
        return stopped_error(interrupt.reason, statement=index, said=message, errno=errno)
    code: ErrorCode = "denied" if errno in _DENIED_ERRNOS else "execution_error"
    return database_error(message, code=code, statement=index, errno=errno)
