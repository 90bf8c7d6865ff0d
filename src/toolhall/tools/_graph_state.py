"""The index cache beside the graph (`state.sqlite`): what a new process needs to continue incrementally.

Per file: identity (sha, mtime, size), syntax error count, and one `entry` blob with its facts and its
resolution result (nodes, edges, dependency keys, placeholders), so a new process never re-parses or
re-resolves a file that did not change. The global lookup tables are rows keyed for point reads: which
files consulted a dependency key (`deps`), which files define a function of a name (`names`), and how
many files refer to each placeholder node (`refs`). A resumed index reads the file list up front and
everything else on demand (`IndexSource`), and an update writes only the rows its journal names.

Entries are `marshal`led plain values (dicts, lists, tuples, sets, strings, numbers): about ten times
faster than JSON to read back, and unlike pickle it cannot run code; a blob of the wrong shape counts as
missing, and a missing entry makes the graph rebuild. The `token` ties the cache to one database build:
when they disagree (a crash between the two writes) the graph is rebuilt from scratch rather than trusted.
"""

from __future__ import annotations

import marshal
import os
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ._graph_index import GraphIndex
from ._graph_parse import FileFacts
from ._graph_resolve import FileResult
from ._graph_tables import NodeKey

__all__ = ["CachedIndex", "StateStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, sha TEXT NOT NULL, mtime_ns INTEGER NOT NULL,
                                  size INTEGER NOT NULL, errors INTEGER NOT NULL, entry BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS deps (key TEXT NOT NULL, path TEXT NOT NULL, PRIMARY KEY (key, path)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS names (name TEXT NOT NULL, path TEXT NOT NULL, ids BLOB NOT NULL,
                                  PRIMARY KEY (name, path)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS refs (label TEXT NOT NULL, id TEXT NOT NULL, count INTEGER NOT NULL,
                                 PRIMARY KEY (label, id)) WITHOUT ROWID;
"""
_BATCH = 500

CachedIndex = tuple[dict[str, tuple[str, int, int, int]], dict[NodeKey, int]]
"""(path → (sha, mtime_ns, size, errors), placeholder node → how many files refer to it)."""


def _entry(record_facts: FileFacts, result: FileResult) -> bytes:
    return marshal.dumps((record_facts, result.nodes, result.edges, result.deps, result.placeholders))


def _unpack(blob: bytes) -> tuple[FileFacts, FileResult] | None:
    try:
        facts, nodes, edges, deps, placeholders = marshal.loads(blob)  # noqa: S302 - plain values, see docstring
    except (EOFError, ValueError, TypeError):
        return None
    shapes = ((facts, dict), (nodes, dict), (edges, set), (deps, set), (placeholders, set))
    if not all(isinstance(value, kind) for value, kind in shapes):
        return None
    return facts, FileResult(nodes, edges, deps, placeholders)


class StateStore:
    """`state.sqlite` in the graph folder; also the `IndexSource` a resumed index reads from."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            # Updates run in worker threads; the service serialises them, this lock the reads.
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._conn.executescript(_SCHEMA)
        return self._conn

    def close(self) -> None:
        """Close the connection (the next use reopens it)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _rows(self, query: str, params: Iterable[Any] = ()) -> list[Any]:
        with self._lock:
            return self._connection().execute(query, tuple(params)).fetchall()

    # --- reading ---------------------------------------------------------------------------

    def read_meta(self) -> dict[str, str]:
        """The stored meta (empty when there is no usable cache)."""
        if not self.path.is_file():
            return {}
        try:
            return dict(self._rows("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError:
            self.close()
            return {}

    def load(self) -> CachedIndex | None:
        """The file list and placeholder counts, or None when the cache cannot be read."""
        try:
            files = self._rows("SELECT path, sha, mtime_ns, size, errors FROM files")
            refs = self._rows("SELECT label, id, count FROM refs")
        except sqlite3.DatabaseError:
            self.close()
            return None
        return {p: (sha, mtime, size, errors) for p, sha, mtime, size, errors in files}, {
            (label, node_id): count for label, node_id, count in refs
        }

    def entries(self, paths: list[str]) -> dict[str, tuple[FileFacts, FileResult]]:
        """Facts and resolution result of each path (paths without a usable entry are left out)."""
        out: dict[str, tuple[FileFacts, FileResult]] = {}
        for start in range(0, len(paths), _BATCH):
            batch = paths[start : start + _BATCH]
            marks = ",".join("?" * len(batch))
            for path, blob in self._rows(f"SELECT path, entry FROM files WHERE path IN ({marks})", batch):
                unpacked = _unpack(blob)
                if unpacked is not None:
                    out[path] = unpacked
        return out

    def names_of(self, name: str) -> dict[str, tuple[str, ...]]:
        """Function ids named `name`, by file."""
        out: dict[str, tuple[str, ...]] = {}
        for path, blob in self._rows("SELECT path, ids FROM names WHERE name = ?", (name,)):
            ids = marshal.loads(blob)  # noqa: S302 - plain values, see docstring
            out[path] = tuple(str(i) for i in ids)
        return out

    def dependents_of(self, key: str) -> set[str]:
        """Files whose resolution consulted `key`."""
        return {path for (path,) in self._rows("SELECT path FROM deps WHERE key = ?", (key,))}

    # --- writing ---------------------------------------------------------------------------

    def prepare_full(self, index: GraphIndex, meta: dict[str, str]) -> Path:
        """Write the whole (complete, in-memory) index to a new file beside the cache; `swap_in` it after.

        Runs beside the database build (whose COPY releases the GIL), so it is kept free of shared state.
        """
        assert index.source is None, "materialize() a resumed index before a full save"
        tmp = self.path.with_name(self.path.name + ".new")
        tmp.unlink(missing_ok=True)
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;" + _SCHEMA)
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
            conn.executemany("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)", (
                (p, r.sha, r.mtime_ns, r.size, r.errors, _entry(r.facts, r.result))
                for p, r in index.files.items() if r.facts is not None and r.result is not None))
            # Sorted rows append to the primary-key B-trees instead of splitting pages all over them.
            conn.executemany("INSERT INTO deps VALUES (?, ?)",
                             sorted((k, p) for k, users in index.dependents.data.items() for p in users))
            conn.executemany("INSERT INTO names VALUES (?, ?, ?)", sorted(
                (n, p, marshal.dumps(ids)) for n, owners in index.names.data.items() for p, ids in owners.items()))
            conn.executemany("INSERT INTO refs VALUES (?, ?, ?)",
                             ((label, i, c) for (label, i), c in index.refs.items() if c > 0))
            conn.execute("COMMIT")
        except BaseException:
            conn.close()
            tmp.unlink(missing_ok=True)
            raise
        conn.close()
        return tmp

    def swap_in(self, tmp: Path, index: GraphIndex) -> None:
        """Make a prepared file the cache (after the database it describes was swapped in)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            os.replace(tmp, self.path)
        index.journal.clear()

    def save_full(self, index: GraphIndex, meta: dict[str, str]) -> None:
        """Write the whole index anew (`prepare_full` then `swap_in`)."""
        self.swap_in(self.prepare_full(index, meta), index)

    def save_changes(
        self, index: GraphIndex, changed: Iterable[str], removed: Iterable[str], meta: dict[str, str] | None
    ) -> None:
        """Write what the index's journal names, the changed file rows and the meta, in one transaction."""
        journal = index.journal
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                _write_files(conn, index, set(changed), removed)
                for (key, path), present in journal.deps.items():
                    conn.execute("INSERT OR IGNORE INTO deps VALUES (?, ?)" if present else
                                 "DELETE FROM deps WHERE key = ? AND path = ?", (key, path))
                for (name, path), ids in journal.names.items():
                    if ids:
                        conn.execute("INSERT OR REPLACE INTO names VALUES (?, ?, ?)", (name, path, marshal.dumps(ids)))
                    else:
                        conn.execute("DELETE FROM names WHERE name = ? AND path = ?", (name, path))
                for label, node_id in journal.refs:
                    count = index.refs.get((label, node_id), 0)
                    conn.execute("INSERT OR REPLACE INTO refs VALUES (?, ?, ?)" if count > 0 else
                                 "DELETE FROM refs WHERE label = ? AND id = ?",
                                 (label, node_id, count) if count > 0 else (label, node_id))
                if meta is not None:
                    conn.execute("DELETE FROM meta")
                    conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        journal.clear()


def _write_files(conn: sqlite3.Connection, index: GraphIndex, changed: set[str], removed: Iterable[str]) -> None:
    for path in removed:
        conn.execute("DELETE FROM files WHERE path = ?", (path,))
    for path in index.journal.entries | changed:
        record = index.files.get(path)
        if record is None:
            continue
        if path in index.journal.entries and record.facts is not None and record.result is not None:
            conn.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)", (
                path, record.sha, record.mtime_ns, record.size, record.errors, _entry(record.facts, record.result)))
        else:  # same content, new stat data
            conn.execute("UPDATE files SET sha = ?, mtime_ns = ?, size = ?, errors = ? WHERE path = ?",
                         (record.sha, record.mtime_ns, record.size, record.errors, path))
