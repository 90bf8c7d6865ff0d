"""PostgreSQL catalog queries: tables, columns, keys and indexes; the role checks `toolhall doctor` runs."""

from __future__ import annotations

from typing import Any

import psycopg

from .._errors import ToolCallError

__all__ = ["describe", "diagnose_role"]

_MAX_COLUMNS = 5000  # rows of the all-tables listing; a bigger catalog is cut and says so

_COLUMNS = """
SELECT CASE WHEN n.nspname = 'public' THEN c.relname ELSE n.nspname || '.' || c.relname END,
       CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table'
                      ELSE 'table' END,
       a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
       EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary AND a.attnum = ANY(i.indkey))
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND {where}
ORDER BY n.nspname, c.relname, a.attnum
LIMIT {limit}
"""
_USER_TABLES = (
    "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%' "
    "AND NOT c.relispartition"
)
_INDEXES = """
SELECT i.relname, x.indisunique, x.indisprimary,
       ARRAY(SELECT coalesce(a.attname, '(expression)') FROM unnest(x.indkey) WITH ORDINALITY k(num, ord)
             LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.num ORDER BY k.ord),
       pg_get_indexdef(x.indexrelid)
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
WHERE x.indrelid = %s ORDER BY i.relname
"""
_FOREIGN_KEYS = """
SELECT con.conname, con.confrelid::regclass::text,
       ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(num, ord)
             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num ORDER BY k.ord),
       ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(num, ord)
             JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.num ORDER BY k.ord)
FROM pg_constraint con WHERE con.conrelid = %s AND con.contype = 'f' ORDER BY con.conname
"""


async def describe(pg: psycopg.AsyncConnection[Any], table: str | None) -> dict[str, Any]:
    """Every user table with its columns, or one table's columns, primary key, foreign keys and indexes."""
    cur = pg.cursor()
    if table is None:
        await cur.execute(_COLUMNS.format(where=_USER_TABLES, limit=_MAX_COLUMNS + 1))
        rows = await cur.fetchall()
        listing = _group(rows[:_MAX_COLUMNS])
        return {"tables": listing, "truncated": len(rows) > _MAX_COLUMNS}
    await cur.execute("SELECT to_regclass(%s)::oid", (table,))
    found = await cur.fetchone()
    oid = found[0] if found else None
    if oid is None:
        await cur.execute(_COLUMNS.format(where=_USER_TABLES, limit=_MAX_COLUMNS))
        names = sorted({r[0] for r in await cur.fetchall()})
        raise ToolCallError(f"no table or view named {table!r}", code="not_found",
                            details={"reason": "no_such_table", "tables": names[:50]})
    await cur.execute(_COLUMNS.format(where="c.oid = %s", limit=_MAX_COLUMNS), (oid,))
    entry = _group(await cur.fetchall())[0]
    await cur.execute(_INDEXES, (oid,))
    indexes = [{"name": n, "columns": cols, "unique": u, "primary": p, "definition": d}
               for n, u, p, cols, d in await cur.fetchall()]
    await cur.execute(_FOREIGN_KEYS, (oid,))
    keys = [{"name": n, "columns": cols, "references": {"table": target, "columns": refs}}
            for n, target, cols, refs in await cur.fetchall()]
    primary: list[str] = next((i["columns"] for i in indexes if i["primary"]), [])
    return {**entry, "primary_key": primary, "foreign_keys": keys, "indexes": indexes}


def _group(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    tables: dict[str, dict[str, Any]] = {}
    for name, kind, column, type_, nullable, default, primary in rows:
        entry = tables.setdefault(name, {"name": name, "type": kind, "columns": []})
        entry["columns"].append(
            {"name": column, "type": type_, "nullable": nullable, "default": default, "primary_key": primary}
        )
    return list(tables.values())


_ROLE = """
SELECT current_user, r.rolsuper, r.rolbypassrls,
       pg_has_role(current_user, 'pg_read_server_files', 'MEMBER'),
       pg_has_role(current_user, 'pg_write_server_files', 'MEMBER'),
       pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER')
FROM pg_roles r WHERE r.rolname = current_user
"""
_WRITABLE = """
SELECT count(DISTINCT (table_schema, table_name)) FROM information_schema.table_privileges
WHERE grantee = current_user AND privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
"""


async def diagnose_role(pg: psycopg.AsyncConnection[Any]) -> list[str]:
    """Warnings about the connected role (empty when it is a plain, read-only role)."""
    cur = pg.cursor()
    await cur.execute(_ROLE)
    row = await cur.fetchone()
    if row is None:
        return []
    user, superuser, bypass_rls, read_files, write_files, run_programs = row
    notes: list[str] = []
    if superuser:
        notes.append(
            f"sql: the PostgreSQL role {user!r} is a superuser: a read-only transaction does not stop a "
            "superuser's COPY ... TO PROGRAM, pg_read_file or lo_import (the tool's guard refuses them, but "
            "it is a parser, not a wall). Connect as a dedicated role with only SELECT privileges."
        )
    else:
        extra = [name for name, has in (("pg_read_server_files", read_files), ("pg_write_server_files", write_files),
                                        ("pg_execute_server_program", run_programs), ("BYPASSRLS", bypass_rls)) if has]
        if extra:
            notes.append(f"sql: the PostgreSQL role {user!r} holds {', '.join(extra)}; a read-only role needs none")
        await cur.execute(_WRITABLE)
        counted = await cur.fetchone()
        writable = counted[0] if counted else 0
        if writable:
            notes.append(
                f"sql: the PostgreSQL role {user!r} may write {writable} table(s); read-only mode still holds "
                "(every transaction is read-only), but a role with only SELECT is the safer setup"
            )
    return notes
