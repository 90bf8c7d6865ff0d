"""MySQL/MariaDB catalog queries (information_schema of the current database) and the grant checks for doctor."""

from __future__ import annotations

import re
from typing import Any

import pymysql

from .._errors import ToolCallError

__all__ = ["describe", "diagnose_grants"]

_MAX_COLUMNS = 5000

_COLUMNS = """
SELECT c.TABLE_NAME, IF(t.TABLE_TYPE = 'VIEW', 'view', 'table'), c.COLUMN_NAME, c.COLUMN_TYPE,
       c.IS_NULLABLE = 'YES', c.COLUMN_DEFAULT, c.COLUMN_KEY = 'PRI'
FROM information_schema.COLUMNS c
JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
WHERE c.TABLE_SCHEMA = DATABASE() {where}
ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION
LIMIT {limit}
"""
_INDEXES = """
SELECT INDEX_NAME, NON_UNIQUE = 0, COLUMN_NAME FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s ORDER BY INDEX_NAME, SEQ_IN_INDEX
"""
_FOREIGN_KEYS = """
SELECT CONSTRAINT_NAME, REFERENCED_TABLE_NAME, COLUMN_NAME, REFERENCED_COLUMN_NAME
FROM information_schema.KEY_COLUMN_USAGE
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s AND REFERENCED_TABLE_NAME IS NOT NULL
ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION
"""


def _query(db: pymysql.connections.Connection[Any], sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    with db.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def describe(db: pymysql.connections.Connection[Any], table: str | None) -> dict[str, Any]:
    """Every table of the current database with its columns, or one table in detail."""
    if table is None:
        rows = _query(db, _COLUMNS.format(where="", limit=_MAX_COLUMNS + 1))
        return {"tables": _group(rows[:_MAX_COLUMNS]), "truncated": len(rows) > _MAX_COLUMNS}
    rows = _query(db, _COLUMNS.format(where="AND c.TABLE_NAME = %s", limit=_MAX_COLUMNS), (table,))
    if not rows:
        names = sorted({r[0] for r in _query(db, _COLUMNS.format(where="", limit=_MAX_COLUMNS))})
        raise ToolCallError(f"no table or view named {table!r}", code="not_found",
                            details={"reason": "no_such_table", "tables": names[:50]})
    entry = _group(rows)[0]
    indexes: dict[str, dict[str, Any]] = {}
    for name, unique, column in _query(db, _INDEXES, (table,)):
        index = indexes.setdefault(name, {"name": name, "columns": [], "unique": bool(unique),
                                          "primary": name == "PRIMARY"})
        index["columns"].append(column)
    keys: dict[str, dict[str, Any]] = {}
    for name, target, column, ref in _query(db, _FOREIGN_KEYS, (table,)):
        key = keys.setdefault(name, {"name": name, "columns": [], "references": {"table": target, "columns": []}})
        key["columns"].append(column)
        key["references"]["columns"].append(ref)
    primary = indexes.get("PRIMARY", {}).get("columns", [])
    return {**entry, "primary_key": primary, "foreign_keys": list(keys.values()), "indexes": list(indexes.values())}


def _group(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    tables: dict[str, dict[str, Any]] = {}
    for name, kind, column, type_, nullable, default, primary in rows:
        entry = tables.setdefault(name, {"name": name, "type": kind, "columns": []})
        entry["columns"].append({"name": column, "type": type_, "nullable": bool(nullable), "default": default,
                                 "primary_key": bool(primary)})
    return list(tables.values())


_BROAD = re.compile(r"GRANT (ALL PRIVILEGES|.*\b(SUPER|FILE)\b).* ON \*\.\*", re.IGNORECASE)
_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE|DROP|ALTER|CREATE|ALL PRIVILEGES)\b", re.IGNORECASE)


def diagnose_grants(db: pymysql.connections.Connection[Any]) -> list[str]:
    """Warnings about the connected account (empty for a SELECT-only account)."""
    user = _query(db, "SELECT CURRENT_USER()")[0][0]
    grants = [str(r[0]) for r in _query(db, "SHOW GRANTS")]
    if any(_BROAD.search(g) for g in grants):
        return [
            f"sql: the MySQL account {user!r} has global privileges (ALL, SUPER or FILE): FILE lets it read "
            "server files with LOAD_FILE and write them with INTO OUTFILE (the tool's guard refuses them, but "
            "it is a parser, not a wall). Connect as a dedicated account with only SELECT privileges."
        ]
    if any(_WRITES.search(g.split(" ON ")[0]) for g in grants):
        return [
            f"sql: the MySQL account {user!r} may write; read-only mode still holds (read-only session and "
            "transactions), but an account with only SELECT is the safer setup"
        ]
    return []
