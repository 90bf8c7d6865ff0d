"""SQLite backend: a read-only connection plus an authorizer in read-only mode.

A call first runs inline on the event loop, bounded by a progress handler to a few milliseconds: most
queries finish within that, with no thread hop (which costs more than the query itself). A call that
runs past the budget, or meets a lock held by another connection, is interrupted, rolled back and run again
in a worker thread, where the time limit is `sqlite3_interrupt` from the event loop's side at the deadline
and a lock is waited for; its text is remembered, so the next call with it goes to the thread at once.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Sequence
from functools import partial
from typing import Any
from urllib.parse import quote

from .._errors import ToolCallError
from ._sql_base import (
    Column,
    DatabaseURL,
    Interrupt,
    Mode,
    Outcome,
    Pool,
    RunRequest,
    database_error,
    in_thread,
    stopped_error,
)
from ._sql_guard import Dialect, Statement
from ._sql_values import row_to_json

__all__ = ["SqliteBackend"]

# Functions that touch files or load code; denied in every mode (the tool is bound to one database file).
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
# Pragmas read-only mode may run. Those marked as taking an argument read with it (a table or index name);
# the others only without one, since `PRAGMA user_version = 3` is the same pragma used to write.
_READ_PRAGMAS_WITH_ARG = frozenset(
    {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
     "integrity_check", "quick_check", "foreign_key_check", "table_list"}
)
_READ_PRAGMAS = _READ_PRAGMAS_WITH_ARG | {
    "user_version", "application_id", "schema_version", "data_version", "encoding", "page_size", "page_count",
    "freelist_count", "foreign_keys", "collation_list", "function_list", "module_list", "pragma_list",
    "compile_options", "database_list", "journal_mode", "auto_vacuum", "cache_size", "recursive_triggers",
}
_DENIED_ALWAYS = frozenset({"writable_schema", "trusted_schema"})
# An inline call may run _PROGRESS_STEPS * _INLINE_CHECKS VM instructions (a few milliseconds of work) and
# hold the loop for _INLINE_WALL seconds at most before it moves to a worker thread.
_PROGRESS_STEPS = 4000  # VM instructions between checks: tens of microseconds apart, under 1% overhead
_INLINE_CHECKS = 100
_INLINE_WALL = 0.02
_LOCK_WAIT = 5.0  # seconds a call in a worker thread waits for another connection's lock
_SLOW_TEXTS = 256  # statement texts remembered as too slow to run inline


class _MoveToThread(Exception):
    """The inline attempt ran out of budget (`work` or `clock`) or met a `lock`: it was rolled back, so the
    call runs again in a worker thread."""


class SqliteBackend:
    """SQLite through the standard library's `sqlite3`."""

    dialect: Dialect = "sqlite"
    pyformat = False
    grace = 0.0  # the time limit is enforced by interrupting the statement (sqlite3_interrupt) at once

    def __init__(self, url: DatabaseURL, mode: Mode) -> None:
        self._read_only = mode == "read_only"
        self._path = url.database
        if self._path is None:
            # A private shared-cache memory database, alive while the anchor connection is open.
            self._uri = f"file:toolhall-{uuid.uuid4().hex}?mode=memory&cache=shared"
        else:
            self._uri = f"file:{quote(self._path)}?mode={'ro' if self._read_only else 'rwc'}"
        self._anchor = self._connect(0.0) if self._path is None else None
        # Inline calls never wait for a lock (that would block the loop); threaded calls wait up to _LOCK_WAIT.
        self._inline: Pool[sqlite3.Connection] = Pool(sqlite3.Connection.close)
        self._pool: Pool[sqlite3.Connection] = Pool(sqlite3.Connection.close)
        self._slow: set[str] = set()  # texts that ran past the inline budget

    def _connect(self, lock_wait: float) -> sqlite3.Connection:
        conn = sqlite3.connect(self._uri, uri=True, isolation_level=None, check_same_thread=False, timeout=lock_wait)
        if self._read_only:
            conn.execute("PRAGMA query_only = 1")  # a second lock, for memory databases that cannot be mode=ro
        conn.set_authorizer(self._authorize)
        return conn

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, db: str | None, src: str | None) -> int:
        if action == sqlite3.SQLITE_ATTACH and arg1:
            # ATTACH and VACUUM INTO open files beside the configured database; a plain VACUUM attaches ''
            # (a temporary database), which stays allowed.
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_PRAGMA:
            name = (arg1 or "").lower()
            if name in _DENIED_ALWAYS:
                return sqlite3.SQLITE_DENY
            if self._read_only and not _read_pragma(name, arg2):
                return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    async def run(self, request: RunRequest) -> list[Outcome]:
        """Run the statements in one transaction (rolled back in read-only mode and on error)."""
        key = request.statements[0].text if len(request.statements) == 1 else ";".join(
            s.text for s in request.statements)
        if key not in self._slow and not _outside_transaction(request.statements):
            try:
                return self._run_inline(request)
            except _MoveToThread as moved:
                if moved.args[0] == "work":
                    self._remember_slow(key)
        return await in_thread(partial(self._run, request), request.timeout, self.grace)

    async def schema(self, table: str | None, timeout: float) -> dict[str, Any]:
        """Tables, columns, keys and indexes (one table in detail when named)."""
        return await in_thread(partial(self._schema, table), timeout, self.grace)

    async def diagnose(self) -> list[str]:
        """Warnings about the configured database file."""
        notes: list[str] = []
        if self._path is None:
            notes.append("sql: the SQLite database is in memory; it is empty at start and lost at exit")
        else:
            try:
                self._pool.put(self._checkout(self._pool, _LOCK_WAIT))
            except ToolCallError as error:
                notes.append(f"sql: {error.message}")
        return notes

    def _run(self, request: RunRequest, interrupt: Interrupt) -> list[Outcome]:
        conn = self._checkout(self._pool, _LOCK_WAIT)
        interrupt.arm(conn.interrupt)
        outcomes: list[Outcome] = []
        try:
            return self._transaction(conn, request, outcomes)
        except sqlite3.Error as error:
            raise _error(error, len(outcomes), interrupt) from None
        finally:
            interrupt.disarm()
            self._pool.put(conn, healthy=not conn.in_transaction)

    def _run_inline(self, request: RunRequest) -> list[Outcome]:
        """The call on the event loop, stopped by the progress handler once its budget is spent."""
        conn = self._checkout(self._inline, 0.0)
        start = time.perf_counter()
        wall_limit = start + min(_INLINE_WALL, request.timeout)
        checks = 0

        def spent() -> bool:
            # Counted VM work, not the clock, decides "too long", so a loaded machine does not send every
            # query to a thread; the clock is the backstop (one costly opcode) and the call's time limit.
            nonlocal checks
            checks += 1
            return checks > _INLINE_CHECKS or time.perf_counter() > wall_limit

        conn.set_progress_handler(spent, _PROGRESS_STEPS)
        outcomes: list[Outcome] = []
        try:
            return self._transaction(conn, request, outcomes)
        except sqlite3.Error as error:
            name = _code_name(error) or ""
            if name == "SQLITE_INTERRUPT" and time.perf_counter() - start >= request.timeout:
                raise stopped_error("timeout", statement=len(outcomes), timeout=request.timeout,
                                    sqlite_code=name) from None
            if name == "SQLITE_INTERRUPT":
                raise _MoveToThread("work" if checks > _INLINE_CHECKS else "clock") from None
            if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
                raise _MoveToThread("lock") from None
            raise _error(error, len(outcomes), None) from None
        finally:
            conn.set_progress_handler(None, 0)
            self._inline.put(conn, healthy=not conn.in_transaction)

    def _transaction(self, conn: sqlite3.Connection, request: RunRequest, outcomes: list[Outcome]) -> list[Outcome]:
        """Run the statements into `outcomes` in one transaction; on error roll back and re-raise."""
        own_transaction = not _outside_transaction(request.statements)
        try:
            if own_transaction:
                conn.execute("BEGIN")
            for statement in request.statements:
                outcomes.append(self._one(conn, statement, request))  # noqa: PERF401 - len() names a failure
            if own_transaction and conn.in_transaction:
                conn.execute("ROLLBACK" if request.read_only else "COMMIT")
            return outcomes
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _remember_slow(self, key: str) -> None:
        if len(self._slow) >= _SLOW_TEXTS:
            self._slow.clear()  # start over rather than track age (calls may come from several threads)
        self._slow.add(key)

    def _checkout(self, pool: Pool[sqlite3.Connection], lock_wait: float) -> sqlite3.Connection:
        try:
            return pool.take() or self._connect(lock_wait)
        except sqlite3.Error as error:
            raise database_error(
                f"cannot open the SQLite database {self._path!r}: {error}", sqlite_code=_code_name(error)
            ) from None

    def _one(self, conn: sqlite3.Connection, statement: Statement, request: RunRequest) -> Outcome:
        cursor = conn.execute(statement.text, request.params if request.params is not None else ())
        try:
            if cursor.description is None:
                affected = cursor.rowcount if cursor.rowcount >= 0 else None
                return Outcome(kind=statement.kind, rows_affected=affected)
            rows = cursor.fetchmany(request.max_rows + 1)
            truncated = len(rows) > request.max_rows
            total = len(rows)
            if truncated and statement.writes:
                total += sum(1 for _ in cursor)  # finish the write; discard rows past the cap
            kept = [row_to_json(r) for r in rows[: request.max_rows]]
            names = [d[0] for d in cursor.description]
            return Outcome(
                kind=statement.kind, columns=_columns(names, rows), rows=kept, truncated=truncated,
                rows_affected=total if statement.changes_rows else None,
            )
        finally:
            cursor.close()

    def _schema(self, table: str | None, interrupt: Interrupt) -> dict[str, Any]:
        conn = self._checkout(self._pool, _LOCK_WAIT)
        interrupt.arm(conn.interrupt)
        try:
            conn.execute("BEGIN")
            try:
                return _describe(conn, table)
            finally:
                conn.execute("ROLLBACK")
        except sqlite3.Error as error:
            raise _error(error, None, interrupt) from None
        finally:
            interrupt.disarm()
            self._pool.put(conn, healthy=not conn.in_transaction)

    def close(self) -> None:
        """Close pooled connections (and the in-memory database's anchor)."""
        self._pool.close()
        self._inline.close()
        if self._anchor is not None:
            self._anchor.close()


def _read_pragma(name: str, argument: str | None) -> bool:
    return name in _READ_PRAGMAS and (argument is None or name in _READ_PRAGMAS_WITH_ARG)


def _outside_transaction(statements: Sequence[Statement]) -> bool:
    # VACUUM cannot run inside a transaction; a lone one runs on its own.
    return len(statements) == 1 and statements[0].kind == "vacuum"


_STORAGE = {int: "integer", float: "real", str: "text", bytes: "blob"}


def _columns(names: list[str], rows: list[Any]) -> list[Column]:
    # SQLite has no column types in a result, only per-value storage classes: report the first value's.
    types: list[str | None] = [None] * len(names)
    for row in rows:
        for i, value in enumerate(row):
            if types[i] is None and value is not None:
                types[i] = _STORAGE.get(type(value), type(value).__name__)
        if all(types):
            break
    return [Column(name=n, type=t) for n, t in zip(names, types, strict=True)]


def _code_name(error: sqlite3.Error) -> str | None:
    return getattr(error, "sqlite_errorname", None)


def _error(error: sqlite3.Error, index: int | None, interrupt: Interrupt | None) -> ToolCallError:
    name = _code_name(error) or ""
    if name == "SQLITE_INTERRUPT" and interrupt is not None and interrupt.fired:
        return stopped_error(interrupt.reason, statement=index, sqlite_code=name)
    denied = name.startswith(("SQLITE_READONLY", "SQLITE_AUTH")) or "not authorized" in str(error)
    return database_error(str(error), code="denied" if denied else "execution_error", statement=index,
                          sqlite_code=name or None)


def _describe(conn: sqlite3.Connection, table: str | None) -> dict[str, Any]:
    listing = conn.execute(
        "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' "
        "ESCAPE '\\' ORDER BY name"
    ).fetchall()
    kinds = {name: kind for name, kind in listing}
    if table is None:
        return {"tables": [{"name": n, "type": k, "columns": _public(_table_columns(conn, n))} for n, k in listing]}
    if table not in kinds:
        raise ToolCallError(
            f"no table or view named {table!r}", code="not_found",
            details={"reason": "no_such_table", "tables": sorted(kinds)[:50]},
        )
    columns = _table_columns(conn, table)
    primary = [c["name"] for c in sorted((c for c in columns if c["_pk"]), key=lambda c: c["_pk"])]
    keys = conn.execute("SELECT id, seq, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?) ORDER BY id, seq",
                        (table,)).fetchall()
    return {
        "name": table, "type": kinds[table], "columns": _public(columns),
        "primary_key": primary, "foreign_keys": _foreign_keys(keys), "indexes": _indexes(conn, table),
    }


def _table_columns(conn: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        'SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_xinfo(?) '
        "WHERE hidden IN (0, 2, 3) ORDER BY cid",
        (table,),
    ).fetchall()
    return [
        {"name": n, "type": t or None, "nullable": not nn, "default": d, "primary_key": bool(pk), "_pk": pk}
        for n, t, nn, d, pk in rows
    ]


def _public(columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in c.items() if k != "_pk"} for c in columns]


def _foreign_keys(rows: list[Any]) -> list[dict[str, Any]]:
    grouped: dict[int, dict[str, Any]] = {}
    for key_id, _seq, target, source, to in rows:
        entry = grouped.setdefault(key_id, {"columns": [], "references": {"table": target, "columns": []}})
        entry["columns"].append(source)
        entry["references"]["columns"].append(to)
    return list(grouped.values())


def _indexes(conn: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    found = conn.execute("SELECT name, \"unique\", origin FROM pragma_index_list(?) ORDER BY name", (table,)).fetchall()
    out = []
    for name, unique, origin in found:
        cols = [r[0] for r in conn.execute("SELECT name FROM pragma_index_info(?) ORDER BY seqno", (name,))]
        out.append({"name": name, "columns": cols, "unique": bool(unique), "primary": origin == "pk"})
    return out
