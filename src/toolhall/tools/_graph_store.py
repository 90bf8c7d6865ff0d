"""The ladybug database holding the graph: bulk builds, delta writes, and read-only query handles.

Writes never touch the live database file. A full build writes a new file with `COPY FROM` staged CSV
(never per-row `UNWIND … MATCH … CREATE`, which ladybug plans at 20-30 ms per edge); a delta copies the
live file, applies the changes in one transaction with per-row parameterised statements, and the new
file then replaces the old one atomically. A reader therefore never shares a file with a writer (an
open ladybug crash class), and a reader in another process keeps a consistent snapshot until it
notices the new file and reopens. `ladybug` is imported here only, and lazily; `kuzu` never is (the two
crash when loaded in one process).
"""

from __future__ import annotations

import csv
import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ._graph_index import Delta
from ._graph_tables import NODE_COLUMNS, REL_PAIRS, REL_PROPS, Edge, NodeKey, ddl

__all__ = ["GraphDB", "engine_version", "file_lock"]

DB_NAME = "graph.db"


def _ladybug() -> Any:
    import ladybug

    return ladybug


def engine_version() -> str:
    """The ladybug version (part of the graph's identity: another version triggers a rebuild)."""
    return str(_ladybug().__version__)


@contextmanager
def file_lock(path: Path, *, shared: bool) -> Iterator[None]:
    """An advisory fcntl lock across processes: exclusive for writers, shared for readers."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


class GraphDB:
    """The database file of one workspace graph, with limits applied to every handle."""

    def __init__(
        self, folder: Path, *, buffer_pool_mb: int, max_db_mb: int, query_timeout_ms: int, query_threads: int = 1
    ) -> None:
        self.folder = folder
        self.path = folder / DB_NAME
        self.buffer_pool = buffer_pool_mb << 20
        self.max_db = max_db_mb << 20
        self.timeout_ms = query_timeout_ms
        self.query_threads = query_threads
        self._reader: Any = None
        self._reader_conn: Any = None
        self._reader_identity: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def _open(self, path: Path, *, read_only: bool) -> Any:
        lb = _ladybug()
        return lb.Database(str(path), read_only=read_only, buffer_pool_size=self.buffer_pool, max_db_size=self.max_db)

    def exists(self) -> bool:
        """Whether a graph has been built."""
        return self.path.is_file()

    # --- writing ---------------------------------------------------------------------------

    def build(self, nodes: dict[NodeKey, tuple[Any, ...]], edges: list[Edge], meta: dict[str, str]) -> None:
        """Write a complete new graph with bulk COPY and swap it in."""
        tmp = self.folder / (DB_NAME + ".new")
        _remove(tmp)
        stage = Path(tempfile.mkdtemp(prefix="toolhall-graph-"))
        try:
            db = self._open(tmp, read_only=False)
            try:
                conn = _ladybug().Connection(db)
                for statement in ddl():
                    conn.execute(statement)
                # One checkpoint at the end, not one per COPY (measured 5.2 s -> 3.3 s of COPY here).
                conn.execute("CALL auto_checkpoint=false")
                self._copy_nodes(conn, stage, nodes)
                self._copy_edges(conn, stage, edges)
                self._write_meta(conn, meta, fresh=True)
                conn.execute("CHECKPOINT")
            finally:
                db.close()
            self._swap_in(tmp)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
            _remove(tmp)

    def _copy_nodes(self, conn: Any, stage: Path, nodes: dict[NodeKey, tuple[Any, ...]]) -> None:
        groups: dict[str, list[tuple[Any, ...]]] = {label: [] for label in NODE_COLUMNS}
        for (label, node_id), props in nodes.items():
            groups[label].append((node_id, *props))
        for label, rows in groups.items():
            if rows:
                path = _stage(stage, label, rows)
                conn.execute(f"COPY {label} FROM '{path}' (header=false)")

    def _copy_edges(self, conn: Any, stage: Path, edges: list[Edge]) -> None:
        groups: dict[tuple[str, str, str], list[tuple[Any, ...]]] = {}
        for rel, src_label, src, dst_label, dst, props in edges:
            groups.setdefault((rel, src_label, dst_label), []).append((src, dst, *props))
        for (rel, src_label, dst_label), rows in sorted(groups.items()):
            lists = [2 + i for i, (_, kind) in enumerate(REL_PROPS[rel]) if kind.endswith("[]")]
            path = _stage(stage, f"{rel}_{src_label}_{dst_label}", rows, lists)
            conn.execute(f"COPY {rel} FROM '{path}' (from='{src_label}', to='{dst_label}', header=false)")

    def _write_meta(self, conn: Any, meta: dict[str, str], *, fresh: bool) -> None:
        for key, value in meta.items():
            if fresh:
                conn.execute("CREATE (:Meta {key: $k, value: $v})", {"k": key, "v": value})
            else:
                conn.execute("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})

    def apply(self, delta: Delta, meta: dict[str, str]) -> None:
        """Apply a delta in one transaction on a copy of the database, then swap the copy in."""
        tmp = self.folder / (DB_NAME + ".new")
        _remove(tmp)
        try:
            shutil.copyfile(self.path, tmp)
            db = self._open(tmp, read_only=False)
            conn = _ladybug().Connection(db)
            try:
                conn.execute("BEGIN TRANSACTION")
                try:
                    _DeltaWriter(conn).write(delta)
                    self._write_meta(conn, meta, fresh=False)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            finally:
                conn.close()  # the close below checkpoints only once no connection is left
                db.close()
            self._fold_wal(tmp)
            self._swap_in(tmp)
        finally:
            _remove(tmp)

    def _fold_wal(self, path: Path) -> None:
        """Make sure the write-ahead log is folded into the file: only the file is swapped in.

        Closing a read-write database checkpoints it (measured at about half the time of an explicit
        CHECKPOINT statement before the close); should a log be left anyway, checkpoint explicitly.
        """
        if path.with_name(path.name + ".wal").exists():
            db = self._open(path, read_only=False)
            try:
                _ladybug().Connection(db).execute("CHECKPOINT")
            finally:
                db.close()

    def _swap_in(self, tmp: Path) -> None:
        with self._lock:
            self._close_reader()
            os.replace(tmp, self.path)

    # --- reading ---------------------------------------------------------------------------

    def _close_reader(self) -> None:
        if self._reader is not None:
            self._reader_conn.close()
            self._reader.close()
        self._reader = self._reader_conn = self._reader_identity = None

    @contextmanager
    def reader(self) -> Iterator[Any]:
        """A connection to a read-only handle, reopened when another writer replaced the file."""
        with self._lock:
            stat = self.path.stat()
            identity = (stat.st_ino, stat.st_mtime_ns)
            if self._reader is not None and self._reader_identity != identity:
                self._close_reader()
            if self._reader is None:
                self._reader = self._open(self.path, read_only=True)
                self._reader_conn = _ladybug().Connection(self._reader)
                self._reader_conn.set_query_timeout(self.timeout_ms)
                # One thread by default: agent queries are small, and on a busy machine every extra
                # worker thread waits for a core (stdlib callers-by-name under load: 24 -> 16 ms median).
                self._reader_conn.set_max_threads_for_exec(self.query_threads)
                self._reader_identity = identity
            yield self._reader_conn

    def read_meta(self) -> dict[str, str]:
        """The Meta table (empty when it cannot be read)."""
        try:
            with self.reader() as conn:
                result = conn.execute("MATCH (m:Meta) RETURN m.key, m.value")
                return {str(k): str(v) for k, v in result.get_all()}
        except (RuntimeError, OSError):
            return {}

    def close(self) -> None:
        """Close the read-only handle."""
        with self._lock:
            self._close_reader()


class _DeltaWriter:
    """Per-row parameterised statements, in the order that keeps edges valid."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def run(self, query: str, params: dict[str, Any]) -> None:
        self.conn.execute(query, params)

    def write(self, delta: Delta) -> None:
        for edge in delta.edges_removed:
            query, params = _edge_match(edge)
            self.run(query + " DELETE r", params)
        for label, node_id in delta.nodes_removed:
            self.run(f"MATCH (n:{label} {{id: $id}}) DETACH DELETE n", {"id": node_id})
        for (label, node_id), props in delta.nodes_changed.items():
            columns = [c for c, _ in NODE_COLUMNS[label][1:]]
            sets = ", ".join(f"n.{c} = ${c}" for c in columns)
            self.run(f"MATCH (n:{label} {{id: $id}}) SET {sets}", {"id": node_id, **_params(label, props)})
        for (label, node_id), props in delta.nodes_added.items():
            columns = [c for c, _ in NODE_COLUMNS[label]]
            values = ", ".join(f"{c}: ${c}" for c in columns)
            self.run(f"CREATE (n:{label} {{{values}}})", {"id": node_id, **_params(label, props)})
        for rel, src_label, src, dst_label, dst, props in delta.edges_added:
            names = [n for n, _ in REL_PROPS[rel]]
            values = ", ".join(f"{n}: ${n}" for n in names)
            query = (f"MATCH (a:{src_label} {{id: $s}}), (b:{dst_label} {{id: $d}}) "
                     f"CREATE (a)-[:{rel} {{{values}}}]->(b)" if names else
                     f"MATCH (a:{src_label} {{id: $s}}), (b:{dst_label} {{id: $d}}) CREATE (a)-[:{rel}]->(b)")
            self.run(query, {"s": src, "d": dst, **_rel_params(rel, props)})


def _params(label: str, props: tuple[Any, ...]) -> dict[str, Any]:
    return {c: _typed(kind, v) for (c, kind), v in zip(NODE_COLUMNS[label][1:], props, strict=True)}


def _rel_params(rel: str, props: tuple[Any, ...]) -> dict[str, Any]:
    return {n: _typed(kind, v) for (n, kind), v in zip(REL_PROPS[rel], props, strict=True)}


def _typed(kind: str, value: Any) -> Any:
    return list(value) if kind.endswith("[]") else value


def _edge_match(edge: Edge) -> tuple[str, dict[str, Any]]:
    rel, src_label, src, dst_label, dst, props = edge
    conditions = " AND ".join(f"r.{n} = ${n}" for n, _ in REL_PROPS[rel])
    where = f" WHERE {conditions}" if conditions else ""
    query = f"MATCH (a:{src_label} {{id: $s}})-[r:{rel}]->(b:{dst_label} {{id: $d}}){where}"
    return query, {"s": src, "d": dst, **_rel_params(rel, props)}


def _stage(stage: Path, name: str, rows: list[tuple[Any, ...]], lists: list[int] | None = None) -> str:
    """Write rows as CSV for COPY FROM; returns the path quoted for a Cypher string literal.

    The csv module already writes what the engine reads (None as an empty field, which loads as NULL;
    booleans as True/False), so only list columns need converting, to the engine's `[a,b]` literal.
    """
    if lists:
        rows = [tuple(f"[{','.join(v)}]" if i in lists else v for i, v in enumerate(row)) for row in rows]
    path = stage / f"{name}.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return str(path).replace("\\", "\\\\").replace("'", "\\'")


def _remove(path: Path) -> None:
    for candidate in (path, path.with_name(path.name + ".wal"), path.with_name(path.name + ".shadow")):
        try:
            candidate.unlink()
        except FileNotFoundError:
            pass


REL_TABLES = tuple(REL_PAIRS)
