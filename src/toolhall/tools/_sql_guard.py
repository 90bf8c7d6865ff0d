"""Split, classify and vet SQL with sqlglot before it reaches a server.

The guard is the second lock, not the first: in read-only mode the database itself refuses writes (a
read-only transaction, a read-only SQLite connection). The guard exists to give a clear `denied` with the
statement kind before the round trip, to feed policy rules (`sql_query(kind:drop)`), and to refuse what a
read-only transaction does not stop: a superuser's `COPY ... TO PROGRAM`, `lo_import`, `pg_read_file`,
`dblink`, MySQL's `LOAD_FILE` and `INTO OUTFILE`.

It fails closed: in read-only mode a statement sqlglot cannot parse, or parses into a shape it does not
recognise, is refused rather than guessed at.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import sqlglot
from sqlglot import Token, TokenType, exp
from sqlglot.dialects.dialect import Dialect as _SqlglotDialect
from sqlglot.errors import SqlglotError

__all__ = ["READ_KINDS", "Analysis", "Dialect", "Statement", "analyse"]

Dialect = Literal["sqlite", "postgres", "mysql"]
"""The SQL dialects the tool speaks."""

READ_KINDS = frozenset({"select", "show", "describe", "explain", "pragma"})
"""Statement kinds read-only mode lets through (after the tree and function checks)."""

# Kinds that change data or schema; a statement containing one anywhere is not a plain read, so a cut
# result must be drained rather than cancelled (cancelling would abort the write).
WRITE_KINDS = frozenset(
    {"insert", "update", "delete", "merge", "create", "drop", "alter", "truncate", "into", "replace", "copy"}
)

# Kinds whose row count means "rows changed".
DML_KINDS = frozenset({"insert", "update", "delete", "merge", "replace", "into", "copy"})

_KIND_OF: dict[type[exp.Expr], str] = {
    exp.Insert: "insert",
    exp.Update: "update",
    exp.Delete: "delete",
    exp.Merge: "merge",
    exp.Create: "create",
    exp.Drop: "drop",
    exp.Alter: "alter",
    exp.TruncateTable: "truncate",
    exp.Copy: "copy",
    exp.Set: "set",
    exp.Show: "show",
    exp.Describe: "describe",
    exp.Pragma: "pragma",
    exp.Transaction: "begin",
    exp.Commit: "commit",
    exp.Rollback: "rollback",
    exp.Use: "use",
    exp.Grant: "grant",
    exp.Revoke: "revoke",
    exp.Attach: "attach",
    exp.Detach: "detach",
    exp.Values: "select",
}

# Nested nodes that make a statement something other than a read, wherever they appear.
_NESTED_WRITES: dict[type[exp.Expr], str] = {
    exp.Insert: "insert",
    exp.Update: "update",
    exp.Delete: "delete",
    exp.Merge: "merge",
    exp.Into: "into",
    exp.Copy: "copy",
}

# Functions that reach outside the transaction: server files, large objects, other connections, server
# state, session-level locks, dynamic SQL. A read-only transaction stops none of the file ones for a superuser.
_DENIED_FUNCTIONS = frozenset(
    {
        "set_config", "nextval", "setval", "pg_notify", "query_to_xml", "query_to_xml_and_xmlschema",
        "query_to_xmlschema", "cursor_to_xml", "cursor_to_xmlschema", "pg_reload_conf", "pg_rotate_logfile",
        "pg_promote", "pg_stat_file", "pg_current_logfile", "load_file", "get_lock", "release_lock",
        "release_all_locks", "sys_exec", "sys_eval", "load_extension", "readfile", "writefile", "edit",
        "fts3_tokenizer", "sqlite_offset",
    }
)
_DENIED_PREFIXES = (
    "lo_", "pg_read_", "pg_ls_", "pg_file_", "pg_logdir_", "dblink", "pg_terminate_", "pg_cancel_",
    "pg_advisory_", "pg_try_advisory_", "pg_stat_reset", "pg_create_", "pg_drop_", "pg_replication_",
    "pg_logical_", "pg_backup_", "pg_start_backup", "pg_stop_backup", "pg_switch_", "pg_import_",
    "pg_wal_replay_", "pg_copy_", "pg_log_",
)

# Where an EXPLAIN's inner statement starts.
_STATEMENT_STARTS = frozenset(
    {TokenType.SELECT, TokenType.WITH, TokenType.INSERT, TokenType.UPDATE, TokenType.DELETE,
     TokenType.MERGE, TokenType.VALUES, TokenType.TABLE, TokenType.CREATE, TokenType.EXECUTE,
     TokenType.L_PAREN}
)

_PYFORMAT = re.compile(r"%%|%\([^)]*\)s|%s")


class _QuietFallback(logging.Filter):
    """Drop sqlglot's per-statement "falling back to Command" warning: the guard handles commands itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_QuietFallback())


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """One statement of a call's SQL, as the guard sees it."""

    text: str
    """The statement's own text, exactly as it is sent to the server (no trailing semicolon)."""
    kind: str
    """Its kind: `select`, `insert`, `drop`, `explain`, ... (the first keyword when sqlglot cannot tell)."""
    kinds: tuple[str, ...]
    """Its kind followed by the kinds of every nested write (`WITH d AS (DELETE ...) SELECT` → select, delete)."""
    returns_rows: bool | None
    """Whether it produces a result set; None when the guard cannot tell."""
    read_only_problem: str | None
    """Why read-only mode must refuse it, or None when it is a plain read."""

    @property
    def changes_rows(self) -> bool:
        """Whether it inserts, updates or deletes rows (so rows affected means something)."""
        return any(k in DML_KINDS for k in self.kinds)

    @property
    def writes(self) -> bool:
        """Whether it (or anything inside it) changes data or schema."""
        return any(k in WRITE_KINDS for k in self.kinds)


@dataclass(frozen=True, slots=True, kw_only=True)
class Analysis:
    """The guard's view of one call's SQL text."""

    statements: tuple[Statement, ...]
    """The non-empty statements, in order."""
    problem: str | None = None
    """A reason to refuse the text whatever the mode (unbalanced quotes, MySQL executable comments)."""

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every statement kind in the text, each once, in order of appearance."""
        return tuple(dict.fromkeys(k for s in self.statements for k in s.kinds))


@lru_cache(maxsize=2048)
def analyse(sql: str, dialect: Dialect, pyformat: bool = False) -> Analysis:
    """Split `sql` into statements and classify each one; cached by the statement text.

    Args:
        sql: The SQL text of one call.
        dialect: The server's dialect.
        pyformat: Whether the driver will read `%s` / `%(name)s` placeholders (params were given).
    """
    parse_text = _PYFORMAT.sub(_placeholder, sql) if pyformat else sql
    try:
        tokens = _SqlglotDialect.get_or_raise(dialect).tokenize(parse_text)
    except SqlglotError as error:
        first = _first_word(sql)
        stmt = Statement(
            text=sql.strip(), kind=first, kinds=(first,), returns_rows=None,
            read_only_problem=f"the SQL could not be parsed, so it cannot be verified as a read: {_short(error)}",
        )
        return Analysis(statements=(stmt,))
    problem = _executable_comment(tokens) if dialect == "mysql" else None
    statements = tuple(
        _statement(sql[start:end].strip(), parse_text[start:end], dialect)
        for start, end in _segments(tokens, len(sql))
    )
    return Analysis(statements=statements, problem=problem)


def _placeholder(match: re.Match[str]) -> str:
    # Parse-only stand-in for a driver placeholder, padded to the same length so token offsets still
    # point into the original text; `%%` is the driver's escaped percent sign.
    found = match.group(0)
    return "% " if found == "%%" else "?".ljust(len(found))


def _segments(tokens: list[Token], length: int) -> list[tuple[int, int]]:
    """Character ranges of the statements between top-level semicolons (empty ones dropped)."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if start is not None:
                spans.append((start, token.start))
            start = None
        elif start is None:
            start = token.start
    if start is not None:
        spans.append((start, length))
    return spans


def _executable_comment(tokens: list[Token]) -> str | None:
    """MySQL runs the inside of `/*! ... */` and `/*M! ... */`: SQL hidden from any parser."""
    for token in tokens:
        for comment in token.comments:
            if comment.startswith(("!", "M!")):
                return (
                    "MySQL executable comments (/*! ... */) are refused: the server runs their contents, "
                    "which hides SQL from the guard and from policy"
                )
    return None


def _statement(text: str, parse_text: str, dialect: Dialect) -> Statement:
    try:
        tree = sqlglot.parse_one(parse_text, read=dialect, error_level=sqlglot.ErrorLevel.RAISE)
    except SqlglotError as error:
        first = _first_word(text)
        return Statement(
            text=text, kind=first, kinds=(first,), returns_rows=None,
            read_only_problem=f"the statement could not be parsed, so it cannot be verified as a read: "
            f"{_short(error)}",
        )
    if isinstance(tree, exp.Command):
        return _command(text, tree, dialect)
    kind = _kind(tree, text)
    kinds = (kind, *sorted({k for k in _nested_kinds(tree) if k != kind}))
    return Statement(
        text=text, kind=kind, kinds=kinds, returns_rows=_returns_rows(tree, kind),
        read_only_problem=_read_only_problem(tree, kind, kinds, dialect),
    )


def _kind(tree: exp.Expr, text: str) -> str:
    if isinstance(tree, exp.Query):
        return "select"
    for cls in type(tree).__mro__:
        kind = _KIND_OF.get(cls)
        if kind is not None:
            return kind
    # sqlglot reads unknown statements (`LISTEN x`, `REINDEX`) as bare expressions: name them by keyword.
    return _first_word(text)


def _nested_kinds(tree: exp.Expr) -> set[str]:
    found: set[str] = set()
    for node in tree.walk():
        kind = _NESTED_WRITES.get(type(node))
        if kind is not None:
            found.add(kind)
    return found


def _returns_rows(tree: exp.Expr, kind: str) -> bool | None:
    if kind in READ_KINDS:
        return not (isinstance(tree, exp.Query) and tree.args.get("into") is not None)
    if isinstance(tree, exp.Insert | exp.Update | exp.Delete | exp.Merge):
        return tree.args.get("returning") is not None
    if kind in {"set", "create", "drop", "alter", "truncate", "begin", "commit", "rollback", "use",
                "grant", "revoke", "attach", "detach"}:
        return False
    return None


def _read_only_problem(tree: exp.Expr, kind: str, kinds: tuple[str, ...], dialect: Dialect) -> str | None:
    if kind not in READ_KINDS or (kind == "pragma" and dialect != "sqlite"):
        return _kind_refused(kind)
    for nested in kinds[1:]:
        if nested in WRITE_KINDS:
            what = "SELECT ... INTO" if nested == "into" else nested.upper()
            return f"this {kind} statement contains {what}, which writes"
    return _denied_function(tree)


def _kind_refused(kind: str) -> str:
    allowed = ", ".join(sorted(READ_KINDS))
    return f"'{kind}' statements are not reads (read-only mode allows: {allowed})"


def _denied_function(tree: exp.Expr) -> str | None:
    for node in tree.find_all(exp.Func):
        name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
        if name in _DENIED_FUNCTIONS or name.startswith(_DENIED_PREFIXES):
            return (
                f"function {name}() reaches outside the transaction (server files, large objects, other "
                "connections, locks or server settings)"
            )
    return None


def _command(text: str, tree: exp.Command, dialect: Dialect) -> Statement:
    """Statements sqlglot keeps as raw commands: EXPLAIN and SHOW are reads, the rest are not."""
    kind = str(tree.this).lower()
    if kind == "show":
        return Statement(text=text, kind=kind, kinds=(kind,), returns_rows=True, read_only_problem=None)
    if kind != "explain":
        return Statement(
            text=text, kind=kind, kinds=(kind,), returns_rows=_command_rows(kind),
            read_only_problem=_kind_refused(kind),
        )
    inner = _explained(text, dialect)
    if inner is None:
        return Statement(
            text=text, kind=kind, kinds=(kind,), returns_rows=True,
            read_only_problem="the statement EXPLAIN describes could not be found, so it cannot be verified",
        )
    problem = inner.read_only_problem
    if problem is not None:
        problem = f"EXPLAIN of a statement that is not a read: {problem}"
    return Statement(
        text=text, kind=kind, kinds=(kind, *(k for k in inner.kinds if k != kind)), returns_rows=True,
        read_only_problem=problem,
    )


def _command_rows(kind: str) -> bool | None:
    # EXECUTE, FETCH and CALL may or may not produce rows; the rest of the raw commands do not.
    return None if kind in {"execute", "fetch", "call", "with"} else False


def _explained(text: str, dialect: Dialect) -> Statement | None:
    """The statement after `EXPLAIN [ANALYZE] [(options)] [QUERY PLAN] [FORMAT=...]`."""
    rest = re.sub(r"^\s*explain\b", "", _strip_comments(text), count=1, flags=re.IGNORECASE)
    try:
        # sqlglot tokenizes everything after EXPLAIN as one opaque string, so tokenize the rest alone.
        tokens = _SqlglotDialect.get_or_raise(dialect).tokenize(rest)
    except SqlglotError:
        return None
    depth = 0
    for index, token in enumerate(tokens):
        if index == 0 and token.token_type == TokenType.L_PAREN:
            depth = 1  # PostgreSQL's `EXPLAIN (ANALYZE, BUFFERS) SELECT ...` option list
            continue
        if depth:
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
            continue
        if token.token_type in _STATEMENT_STARTS:
            inner = rest[token.start :]
            return _statement(inner, inner, dialect)
    return None


def _first_word(text: str) -> str:
    match = re.search(r"[A-Za-z_]+", _strip_comments(text))
    return match.group(0).lower() if match else "unknown"


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|--[^\n]*|#[^\n]*", " ", text, flags=re.DOTALL)


def _short(error: SqlglotError) -> str:
    # sqlglot highlights with ANSI underline codes; the model reads plain text.
    return re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()
