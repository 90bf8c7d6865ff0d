"""The facts cache beside the graph: per-file identity and facts in SQLite (JSON, never pickle).

Facts are stored by content hash, so an update writes rows only for the files that changed. The
`token` ties the cache to one database build: when they disagree (a crash between the two writes),
the graph is rebuilt from scratch rather than trusted.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from ._graph_index import FileRecord

__all__ = ["StateStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, sha TEXT NOT NULL, mtime_ns INTEGER NOT NULL,
                                  size INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS facts (sha TEXT PRIMARY KEY, data TEXT NOT NULL);
"""


class StateStore:
    """`state.sqlite` in the graph folder."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.executescript(_SCHEMA)
        return conn

    def load(self) -> tuple[dict[str, str], dict[str, FileRecord]]:
        """The stored meta and file records (empty when there is no usable cache)."""
        if not self.path.is_file():
            return {}, {}
        try:
            conn = self._connect()
        except sqlite3.DatabaseError:
            return {}, {}
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            rows = conn.execute(
                "SELECT files.path, files.sha, files.mtime_ns, files.size, facts.data "
                "FROM files JOIN facts ON facts.sha = files.sha"
            ).fetchall()
        except sqlite3.DatabaseError:
            return {}, {}
        finally:
            conn.close()
        records = {path: FileRecord(sha, mtime, size, json.loads(data)) for path, sha, mtime, size, data in rows}
        return meta, records

    def save(
        self,
        records: dict[str, FileRecord],
        changed: Iterable[str],
        removed: Iterable[str],
        meta: dict[str, str],
        *,
        full: bool,
    ) -> None:
        """Write the changed records (or all of them, when `full`) and the meta in one transaction."""
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            if full:
                conn.execute("DELETE FROM files")
                conn.execute("DELETE FROM facts")
                changed = records
            for path in removed:
                conn.execute("DELETE FROM files WHERE path = ?", (path,))
            for path in changed:
                rec = records[path]
                conn.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)",
                             (path, rec.sha, rec.mtime_ns, rec.size))
                conn.execute("INSERT OR IGNORE INTO facts VALUES (?, ?)",
                             (rec.sha, json.dumps(rec.facts, separators=(",", ":"))))
            conn.execute("DELETE FROM facts WHERE sha NOT IN (SELECT sha FROM files)")
            conn.execute("DELETE FROM meta")
            conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        finally:
            conn.close()
