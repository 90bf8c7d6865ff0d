"""The SQL guard: splitting, statement kinds, read-only verdicts (no database needed)."""

from __future__ import annotations

import pytest

from toolhall.tools._sql_guard import analyse


def kinds(sql: str, dialect: str = "postgres", pyformat: bool = False) -> list[tuple[str, ...]]:
    return [s.kinds for s in analyse(sql, dialect, pyformat).statements]  # type: ignore[arg-type]


def problem(sql: str, dialect: str = "postgres") -> str | None:
    statements = analyse(sql, dialect).statements  # type: ignore[arg-type]
    assert len(statements) == 1
    return statements[0].read_only_problem


def test_semicolons_in_strings_comments_and_dollar_quotes_do_not_split() -> None:
    """Only top-level semicolons separate statements."""
    assert kinds("select 'a;b', $x$;$x$ /* ; drop table t */ -- ;\n") == [("select",)]
    assert kinds("select 1; -- trailing\n") == [("select",)]


def test_comment_hiding_a_second_statement_is_found() -> None:
    """A statement after a line comment still counts as a statement."""
    assert kinds("SELECT 1; -- harmless\n DROP TABLE x") == [("select",), ("drop",)]


def test_statement_text_is_the_original_without_semicolon() -> None:
    """Each statement's text is sliced from the original text, placeholders untouched."""
    analysis = analyse("select %(a)s, '%%' ;  select %s", "postgres", True)
    assert [s.text for s in analysis.statements] == ["select %(a)s, '%%'", "select %s"]


def test_nested_write_in_cte_adds_its_kind() -> None:
    """WITH ... DELETE inside a SELECT is reported as both kinds and refused."""
    assert kinds("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d") == [("select", "delete")]
    assert "DELETE" in (problem("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d") or "")


@pytest.mark.parametrize(
    ("sql", "dialect", "expected"),
    [
        ("SELECT * INTO newt FROM t", "postgres", "INTO"),
        ("COPY (SELECT 1) TO PROGRAM 'id'", "postgres", "'copy'"),
        ("SELECT lo_import('/etc/passwd')", "postgres", "lo_import"),
        ("select pg_catalog.lo_export(1, '/tmp/x')", "postgres", "lo_export"),
        ("SELECT * FROM pg_read_file('/etc/passwd')", "postgres", "pg_read_file"),
        ("SELECT dblink_exec('host=x', 'drop table t')", "postgres", "dblink_exec"),
        ("SELECT query_to_xml('delete from t', true, true, '')", "postgres", "query_to_xml"),
        ("SELECT set_config('default_transaction_read_only', 'off', false)", "postgres", "set_config"),
        ("SET TRANSACTION READ WRITE", "postgres", "'set'"),
        ("DO $$ BEGIN EXECUTE 'drop table t'; END $$", "postgres", "'do'"),
        ("EXPLAIN ANALYZE DELETE FROM t", "postgres", "'delete'"),
        ("LISTEN channel", "postgres", "'listen'"),
        ("CALL proc()", "postgres", "'call'"),
        ("SELECT load_file('/etc/passwd')", "mysql", "load_file"),
        ("LOAD DATA INFILE '/etc/passwd' INTO TABLE t", "mysql", "could not be parsed"),
        ("SELECT * FROM t INTO OUTFILE '/tmp/x'", "mysql", "could not be parsed"),
        ("SELECT 1 INTO @x", "mysql", "INTO"),
        ("ATTACH DATABASE 'x.db' AS o", "sqlite", "'attach'"),
        ("VACUUM INTO 'y.db'", "sqlite", "'vacuum'"),
        ("SELECT load_extension('evil')", "sqlite", "load_extension"),
        ("SELEC 1", "postgres", "could not be parsed"),
    ],
)
def test_writes_and_escapes_are_not_reads(sql: str, dialect: str, expected: str) -> None:
    """Every trick has a read-only problem naming what was found."""
    found = problem(sql, dialect)
    assert found is not None and expected in found


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("SELECT pg_sleep(0.01)", "postgres"),
        ("WITH x AS (SELECT 1) SELECT * FROM x", "postgres"),
        ("VALUES (1), (2)", "postgres"),
        ("EXPLAIN (ANALYZE, BUFFERS) SELECT 1", "postgres"),
        ("SHOW search_path", "postgres"),
        ("SHOW TABLES", "mysql"),
        ("DESCRIBE t", "mysql"),
        ("EXPLAIN QUERY PLAN SELECT 1", "sqlite"),
        ("PRAGMA table_info(t)", "sqlite"),
        ("SELECT 1 UNION SELECT 2 ORDER BY 1", "sqlite"),
    ],
)
def test_plain_reads_pass(sql: str, dialect: str) -> None:
    """Queries, EXPLAIN of a query, SHOW and read pragmas are reads."""
    assert problem(sql, dialect) is None


def test_mysql_executable_comment_is_refused_whatever_the_mode() -> None:
    """`/*! ... */` runs on MySQL, so the whole text is refused."""
    assert analyse("SELECT 1 /*! , (SELECT 2) */", "mysql").problem is not None
    assert analyse("SELECT 1 /* plain */", "mysql").problem is None


def test_pyformat_placeholders_parse_in_every_dialect() -> None:
    """`%s` and `%(name)s` are driver placeholders, not modulo operators."""
    assert problem_with_params("select * from t where a = %s and b = %(b)s", "mysql") is None


def problem_with_params(sql: str, dialect: str) -> str | None:
    return analyse(sql, dialect, True).statements[0].read_only_problem  # type: ignore[arg-type]


def test_empty_text_has_no_statements() -> None:
    """Whitespace, semicolons and comments only: nothing to run."""
    assert analyse("  ;; -- nothing\n", "sqlite").statements == ()


def test_unbalanced_comment_is_unparseable_not_a_crash() -> None:
    """A tokenizer error becomes one statement that is not verified as a read."""
    found = problem("select 1 /* /* */ ; drop table x", "postgres")
    assert found is not None and "could not be parsed" in found


def test_results_are_cached_by_text() -> None:
    """The same text analysed twice is parsed once."""
    first = analyse("select 42 as cached_probe", "postgres")
    assert analyse("select 42 as cached_probe", "postgres") is first


def test_returns_rows_knows_returning() -> None:
    """DML returns rows only with RETURNING; DDL never does."""
    def rows(sql: str) -> bool | None:
        return analyse(sql, "postgres").statements[0].returns_rows

    assert rows("insert into t values (1) returning id") is True
    assert rows("insert into t values (1)") is False
    assert rows("create table t (a int)") is False
    assert rows("select 1") is True
