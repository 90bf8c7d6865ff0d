"""What every SQL backend shares: the parsed URL, the run request and outcome, cancellation, a small pool."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

import anyio

from .._codes import ErrorCode
from .._errors import ConfigError, ToolCallError
from ._sql_guard import Dialect, Statement

__all__ = [
    "Backend",
    "Column",
    "DatabaseURL",
    "Interrupt",
    "Mode",
    "Outcome",
    "Params",
    "Pool",
    "RunRequest",
    "ServerBackend",
    "database_error",
    "in_thread",
    "parse_url",
    "stopped_error",
]

Mode = Literal["read_only", "read_write"]
"""How much the tool may change: `read_only` is enforced by the database, `read_write` allows any SQL."""

Params = Sequence[Any] | Mapping[str, Any] | None
"""Statement parameters: a list for positional placeholders, an object for named ones."""

_SCHEMES: dict[str, Dialect] = {
    "sqlite": "sqlite",
    "sqlite3": "sqlite",
    "postgresql": "postgres",
    "postgres": "postgres",
    "postgresql+psycopg": "postgres",
    "postgresql+psycopg2": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "mysql+pymysql": "mysql",
    "mariadb+pymysql": "mysql",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class DatabaseURL:
    """A SQLAlchemy-style database URL, parsed."""

    dialect: Dialect
    """Which backend speaks to it."""
    url: str
    """The URL as given (with the driver suffix removed for PostgreSQL, which libpq reads itself)."""
    host: str | None = None
    port: int | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    database: str | None = None
    """The database name, or for SQLite the file path (None: an in-memory database)."""
    query: Mapping[str, str] = field(default_factory=dict)

    @property
    def safe(self) -> str:
        """The URL without its password, for messages."""
        if self.password is None:
            return self.url
        return self.url.replace(f":{self.password}@", ":***@", 1)


def parse_url(url: str) -> DatabaseURL:
    """Parse `sqlite:///path.db`, `postgresql://user@host/db`, `mysql://root@127.0.0.1:3306/test`.

    Raises:
        ConfigError: An unknown scheme or a URL without the parts the backend needs.
    """
    if not isinstance(url, str) or "://" not in url:
        raise ConfigError(f"url: expected a database URL such as sqlite:///data.db, got {url!r}")
    scheme, _, rest = url.partition("://")
    dialect = _SCHEMES.get(scheme.lower())
    if dialect is None:
        known = ", ".join(sorted(_SCHEMES))
        raise ConfigError(f"url: unknown database scheme {scheme!r} (known: {known})")
    if dialect == "sqlite":
        return _sqlite_url(url, rest)
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"url: the port in {url!r} is not a number") from None
    database = unquote(parts.path.lstrip("/")) or None
    if dialect == "mysql" and database is None:
        raise ConfigError(f"url: name the database in the path, as in mysql://user@host:3306/dbname (got {url!r})")
    normalised = "postgresql://" + rest if dialect == "postgres" else url
    return DatabaseURL(
        dialect=dialect, url=normalised, host=parts.hostname, port=port,
        user=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password is not None else None,
        database=database, query=dict(parse_qsl(parts.query)),
    )


def _sqlite_url(url: str, rest: str) -> DatabaseURL:
    # sqlite:///relative.db, sqlite:////absolute.db, sqlite:// and sqlite:///:memory: (in memory)
    path, _, query = rest.partition("?")
    if path and not path.startswith("/"):
        raise ConfigError(
            f"url: a SQLite URL has three slashes before a relative path (sqlite:///data.db), got {url!r}"
        )
    path = unquote(path[1:]) if path else ""
    database = None if path in {"", ":memory:"} else path
    return DatabaseURL(dialect="sqlite", url=url, database=database, query=dict(parse_qsl(query)))


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRequest:
    """One call's work for a backend: statements that share a transaction."""

    statements: Sequence[Statement]
    params: Params
    max_rows: int
    timeout: float
    read_only: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    """A result column."""

    name: str
    type: str | None


@dataclass(slots=True, kw_only=True)
class Outcome:
    """What one statement produced."""

    kind: str
    columns: list[Column] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    truncated: bool = False
    rows_affected: int | None = None
    status: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The outcome as the tool's JSON result."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "columns": [{"name": c.name, "type": c.type} for c in self.columns],
            "rows": self.rows,
            "row_count": len(self.rows),
            "truncated": self.truncated,
            "rows_affected": self.rows_affected,
        }
        if self.status is not None:
            out["status"] = self.status
        return out


class Interrupt:
    """Cancel a running statement from another thread: the backend arms it, a timeout or the caller fires it."""

    __slots__ = ("_cancel", "_fired", "_lock", "reason")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancel: Callable[[], None] | None = None
        self._fired = False
        self.reason: Literal["timeout", "cancelled"] | None = None

    @property
    def fired(self) -> bool:
        """Whether the statement was asked to stop."""
        return self._fired

    def arm(self, cancel: Callable[[], None]) -> None:
        """Register how to stop the current statement (runs it now if already fired)."""
        with self._lock:
            self._cancel = cancel
            fired = self._fired
        if fired:
            cancel()

    def disarm(self) -> None:
        """The statement finished: nothing to cancel any more."""
        with self._lock:
            self._cancel = None

    def fire(self, reason: Literal["timeout", "cancelled"]) -> None:
        """Stop the statement on the server (idempotent, safe from any thread)."""
        with self._lock:
            if self._fired:
                return
            self._fired = True
            self.reason = reason
            cancel = self._cancel
        if cancel is not None:
            try:
                cancel()
            except Exception:  # the statement may have finished (or the link died) meanwhile: nothing to stop
                pass


C = TypeVar("C")
T = TypeVar("T")


class Pool(Generic[C]):
    """A few idle connections, reused across calls; a broken one is dropped instead of returned.

    The caller opens a new connection when `take` finds none idle (with a blocking or an async driver alike).
    """

    def __init__(self, close: Callable[[C], None], max_idle: int = 4) -> None:
        self._close = close
        self._idle: list[C] = []
        self._lock = threading.Lock()  # calls may come from several threads, each with its own event loop
        self._max_idle = max_idle

    def take(self) -> C | None:
        """An idle connection, or None when the caller must open one."""
        with self._lock:
            return self._idle.pop() if self._idle else None

    def put(self, conn: C, *, healthy: bool = True) -> None:
        """Return a connection after a call (closed instead when unhealthy or the pool is full)."""
        if healthy:
            with self._lock:
                if len(self._idle) < self._max_idle:
                    self._idle.append(conn)
                    return
        self.discard(conn)

    def discard(self, conn: C) -> None:
        """Close a connection for good."""
        try:
            self._close(conn)
        except Exception:  # closing a dead connection may fail; it is gone either way
            pass

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            self.discard(conn)


class ServerBackend(Generic[C]):
    """What the PostgreSQL and MySQL backends share: the URL, the mode, idle connections, the grace period."""

    pyformat = True
    grace = 2.0
    """The server's own time limit fires first (its error is the better report); the client cancels this many
    seconds later only if the server has not answered."""
    server = "the database"
    """The server's name in messages."""

    def __init__(self, url: DatabaseURL, mode: Mode, close: Callable[[C], None]) -> None:
        self._url = url
        self._read_only = mode == "read_only"
        self._pool: Pool[C] = Pool(close)

    def close(self) -> None:
        """Close pooled connections."""
        self._pool.close()

    def _cannot_connect(self, error: Exception, **details: Any) -> ToolCallError:
        return database_error(f"cannot connect to {self.server} at {self._url.safe}: {error}", reason="connect",
                              **details)


class Backend(Protocol):
    """One database: runs statements in a transaction and describes its schema.

    Every method stops its statement on the server when the time limit passes or the awaiting task is
    cancelled, and reports database errors as `ToolCallError` (timeouts with code `timeout`).
    """

    dialect: Dialect
    pyformat: bool

    async def run(self, request: RunRequest) -> list[Outcome]:
        """Run the statements in one transaction (rolled back in read-only mode and on error)."""
        ...

    async def schema(self, table: str | None, timeout: float) -> dict[str, Any]:
        """Tables, columns, keys and indexes (one table in detail when named)."""
        ...

    async def diagnose(self) -> list[str]:
        """Warnings about the configured connection (a superuser role, a missing database)."""
        ...

    def close(self) -> None:
        """Close pooled connections."""
        ...


async def in_thread(job: Callable[[Interrupt], T], timeout: float, grace: float) -> T:
    """Run a blocking driver job in a worker thread; on timeout or cancellation, stop it on the server.

    Args:
        job: The work; it arms the `Interrupt` with how to stop its statement.
        timeout: The call's time limit in seconds.
        grace: Seconds to wait past `timeout` before interrupting: 0 when the interrupt is the limit itself
            (SQLite), longer when the server enforces its own limit first (its error is the better report).
    """
    interrupt = Interrupt()
    try:
        with anyio.fail_after(timeout + grace):
            return await anyio.to_thread.run_sync(job, interrupt, abandon_on_cancel=True)
    except TimeoutError:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(interrupt.fire, "timeout")
        raise stopped_error("timeout", timeout=timeout) from None
    except anyio.get_cancelled_exc_class():
        # The caller gave up (or the session's own timeout fired): stop the statement before unwinding.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(interrupt.fire, "cancelled")
        raise


def stopped_error(
    reason: Literal["timeout", "cancelled"] | None, *, statement: int | None = None, timeout: float | None = None,
    said: str | None = None, **details: Any,
) -> ToolCallError:
    """The error for a statement stopped in the database: `cancelled` when the caller gave up, else `timeout`.

    Args:
        reason: Why the client stopped it (None: the server's own time limit did).
        statement: Which statement of the call (from 0), when known.
        timeout: The time limit in seconds, when known.
        said: The server's own message, quoted in the timeout message.
        **details: The driver's error code (sqlstate, errno, sqlite_code).
    """
    if reason == "cancelled":
        return database_error("the statement was cancelled in the database", code="cancelled",
                              statement=statement, **details)
    limit = f" of {timeout:g} s" if timeout is not None else ""
    note = f" ({said})" if said else ""
    return database_error(f"the statement ran past its time limit{limit} and was cancelled in the database{note}",
                          code="timeout", statement=statement, timeout=timeout, **details)


def database_error(
    message: str, *, code: ErrorCode = "execution_error", statement: int | None = None, **details: Any
) -> ToolCallError:
    """A database's own error as a tool error: its message, and its code in `details`."""
    info = {k: v for k, v in details.items() if v is not None}
    if statement is not None:
        info["statement"] = statement
    return ToolCallError(message.strip(), code=code, details=info)
