"""SQL tools for one database: `sql_query` and `sql_schema`, read-only unless configured otherwise.

Read-only mode is a promise the database keeps (a read-only transaction in PostgreSQL and MySQL, a
read-only connection with an authorizer in SQLite); a sqlglot guard in front refuses writes with a clear
`denied` naming the statement kind, and refuses what a read-only transaction does not stop (a superuser's
`COPY ... TO PROGRAM`, `lo_import`, `pg_read_file`, `dblink`, MySQL's `LOAD_FILE`). Give the tool a role
with only `SELECT` privileges: `diagnose(url)` (run by `toolhall doctor`) warns when it is a superuser.

Example:
    ```python
    from toolhall.tools import sql

    tb = sql.toolbox(url="postgresql://reader@127.0.0.1/shop")
    result = tb.call_sync("sql_query", {"sql": "SELECT id, total FROM orders WHERE id = %s", "params": [7]})
    ```
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Annotated, Any

from pydantic import Field

from .._errors import ConfigError, ToolCallError
from .._tool import Tool, tool
from .._toolbox import Toolbox, run_sync
from ._sql_base import Backend, Mode, Outcome, RunRequest, parse_url
from ._sql_guard import Analysis, analyse

__all__ = ["diagnose", "toolbox"]

_GRACE = 2.0  # the most a backend waits past its server-side limit before the client cancels
_PLACEHOLDERS = {"sqlite": "? or :name", "postgres": "%s or %(name)s", "mysql": "%s or %(name)s"}
_NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL", "mysql": "MySQL/MariaDB"}


def toolbox(
    url: str,
    mode: Mode = "read_only",
    *,
    max_rows: int = 1000,
    timeout: float = 30.0,
    allow_multiple: bool = False,
) -> Toolbox:
    """The `sql_query` and `sql_schema` tools for the database at `url`.

    Args:
        url: A SQLAlchemy-style URL: `sqlite:///relative.db`, `sqlite:////absolute.db`, `sqlite://` (in
            memory), `postgresql://user:password@host:5432/db`, `mysql://user:password@host:3306/db`.
        mode: `read_only` (the default; enforced by the database, plus the statement guard) or
            `read_write` (any statement, DDL included, each call in its own transaction).
        max_rows: The most rows a call returns (a call may ask for fewer); further rows are never fetched.
        timeout: The longest a call may run, in seconds, enforced on the server (a call may ask for less).
        allow_multiple: Whether one call may carry several `;`-separated statements (run in one transaction).

    Raises:
        ConfigError: A bad option (the message names it), or the driver for the URL is not installed.
    """
    _check_options(mode, max_rows, timeout, allow_multiple)
    backend = _backend(url, mode)
    return Toolbox([_query_tool(backend, mode, max_rows, timeout, allow_multiple),
                    _schema_tool(backend, timeout)], name="sql")


def diagnose(url: str) -> list[str]:
    """Warnings about a configured database for `toolhall doctor`; an empty list means all is well.

    Warns when the role is a superuser (or holds file or program privileges a read-only transaction does not
    restrain), when the server cannot be reached, and when a SQLite database is in memory or missing.

    Args:
        url: The database URL from `[tools.sql] url`.
    """
    try:
        backend = _backend(url, "read_only")
    except ConfigError as error:
        return [f"sql: {error}"]
    try:
        warnings: list[str] = run_sync(backend.diagnose)
        return warnings
    finally:
        backend.close()


def _check_options(mode: str, max_rows: int, timeout: float, allow_multiple: bool) -> None:
    if mode not in ("read_only", "read_write"):
        raise ConfigError(f"mode: expected 'read_only' or 'read_write', got {mode!r}")
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ConfigError(f"max_rows: expected a whole number of at least 1, got {max_rows!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ConfigError(f"timeout: expected a positive number of seconds, got {timeout!r}")
    if not isinstance(allow_multiple, bool):
        raise ConfigError(f"allow_multiple: expected true or false, got {allow_multiple!r}")


def _backend(url: str, mode: Mode) -> Backend:
    parsed = parse_url(url)
    if parsed.dialect == "sqlite":
        from ._sql_sqlite import SqliteBackend

        return SqliteBackend(parsed, mode)
    if parsed.dialect == "postgres":
        try:
            from ._sql_postgres import PostgresBackend
        except ImportError as error:
            raise ConfigError(f"url: PostgreSQL needs psycopg; install toolhall[postgres] ({error})") from None
        return PostgresBackend(parsed, mode)
    try:
        from ._sql_mysql import MysqlBackend
    except ImportError as error:
        raise ConfigError(f"url: MySQL/MariaDB needs pymysql; install toolhall[mysql] ({error})") from None
    return MysqlBackend(parsed, mode)


def _subjects(backend: Backend, arguments: Mapping[str, Any]) -> list[str]:
    sql = arguments.get("sql")
    if not isinstance(sql, str):
        return []
    analysis = analyse(sql, backend.dialect, backend.pyformat and arguments.get("params") is not None)
    return [sql, *(f"kind:{kind}" for kind in analysis.kinds)]


def _query_tool(backend: Backend, mode: Mode, row_limit: int, time_limit: float, allow_multiple: bool) -> Tool:
    read_only = mode == "read_only"
    dialect = backend.dialect

    @tool(
        name="sql_query", description=_query_description(dialect, mode, row_limit, time_limit, allow_multiple),
        read_only=read_only, destructive=not read_only, idempotent=read_only, open_world=False,
        timeout=time_limit + 2 * _GRACE, subject=partial(_subjects, backend),
    )
    async def sql_query(
        sql: Annotated[str, Field(min_length=1)],
        params: list[Any] | dict[str, Any] | None = None,
        max_rows: Annotated[int | None, Field(ge=1)] = None,
        timeout: Annotated[float | None, Field(gt=0)] = None,
    ) -> dict[str, Any]:
        """Run SQL.

        Args:
            sql: The SQL statement.
            params: Values for the statement's placeholders: a list for positional ones, an object for named ones.
            max_rows: The most rows to return (capped by the configured limit).
            timeout: Seconds before the statement is cancelled on the server (capped by the configured limit).
        """
        with_params = params is not None
        analysis = analyse(sql, dialect, backend.pyformat and with_params)
        _vet(analysis, read_only=read_only, allow_multiple=allow_multiple, with_params=with_params)
        request = RunRequest(
            statements=analysis.statements, params=params, read_only=read_only,
            max_rows=min(max_rows or row_limit, row_limit),
            timeout=min(timeout or time_limit, time_limit),
        )
        outcomes = await backend.run(request)
        return _result(outcomes, request.max_rows)

    return sql_query


def _schema_tool(backend: Backend, timeout: float) -> Tool:
    @tool(
        name="sql_schema", read_only=True, destructive=False, idempotent=True, open_world=False,
        timeout=timeout + 2 * _GRACE, subject="table",
        description=f"Describe the {_NAMES[backend.dialect]} database: without `table`, every table and view "
        "with its columns; with `table`, its columns (type, nullable, default), primary key, foreign keys "
        "and indexes. Look here before writing a query.",
    )
    async def sql_schema(table: Annotated[str | None, Field(min_length=1)] = None) -> dict[str, Any]:
        """Describe tables.

        Args:
            table: One table or view to describe in detail (`schema.table` allowed); omit for all tables.
        """
        return await backend.schema(table, timeout)

    return sql_schema


def _vet(analysis: Analysis, *, read_only: bool, allow_multiple: bool, with_params: bool) -> None:
    statements = analysis.statements
    if not statements:
        raise ToolCallError("sql: no statement found (the text is empty or only comments)", code="invalid_input",
                            details={"reason": "empty"})
    if analysis.problem is not None:
        raise ToolCallError(analysis.problem, code="denied", details={"reason": "hidden_sql"})
    kinds = [s.kind for s in statements]
    if len(statements) > 1 and not allow_multiple:
        raise ToolCallError(
            f"sql: {len(statements)} statements in one call ({', '.join(kinds)}); this tool runs one statement "
            "per call (allow_multiple is off): send them one at a time",
            code="denied", details={"reason": "multiple_statements", "kinds": kinds},
        )
    if len(statements) > 1 and with_params:
        raise ToolCallError("params: placeholders can only be used with a single statement",
                            code="invalid_input", details={"reason": "params_with_multiple_statements"})
    if read_only:
        for index, statement in enumerate(statements):
            if statement.read_only_problem is not None:
                raise ToolCallError(
                    f"denied in read-only mode: {statement.read_only_problem}", code="denied",
                    details={"reason": "read_only", "kind": statement.kind, "kinds": list(statement.kinds),
                             "statement": index},
                )


def _result(outcomes: list[Outcome], max_rows: int) -> dict[str, Any]:
    if len(outcomes) == 1:
        return {**outcomes[0].to_dict(), "max_rows": max_rows}
    return {"kind": "batch", "results": [o.to_dict() for o in outcomes], "max_rows": max_rows}


def _query_description(dialect: str, mode: str, max_rows: int, timeout: float, allow_multiple: bool) -> str:
    name = _NAMES[dialect]
    if mode == "read_only":
        reads = "SELECT, WITH, EXPLAIN, read-only PRAGMA" if dialect == "sqlite" else "SELECT, WITH, EXPLAIN, SHOW"
        what = f"Run a read-only SQL query against the {name} database ({reads}; anything that writes is refused)."
    else:
        what = (f"Run SQL against the {name} database: queries, writes and DDL. Each call runs in its own "
                "transaction, committed on success and rolled back on error.")
    one = "Several ;-separated statements may be sent in one call." if allow_multiple else "One statement per call."
    return (
        f"{what} {one} Pass values through `params` with {_PLACEHOLDERS[dialect]} placeholders rather than "
        f"quoting them into the SQL. Returns columns (name, type), rows (at most {max_rows}; `truncated` says "
        f"when more existed), row_count, the statement kind and rows_affected for writes. Dates come back as "
        f"ISO 8601 text, exact decimals as text, bytes as base64. Statements are cancelled after {timeout:g} s. "
        "Call sql_schema first to see the tables."
    )
