"""Incremental indexing: scan, hash, re-parse what changed, re-resolve what depends on it, diff.

The index keeps, per file, its facts and what its resolution produced (nodes, edges, the dependency
keys it consulted). An update re-parses only files whose content changed, works out which provided
keys changed value, re-resolves the changed files plus the files whose recorded dependencies include
a changed key, and returns the difference between the old and new graph. Applying that difference to
the old graph gives exactly what a fresh full build of the new tree gives.

A process that resumes an index from the cache (`resume`) loads only the file list; facts, results and
the global lookup tables are read when an update first needs them (`_graph_lazy`), so the first update
of a new process costs what the change costs, not what the repository costs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._graph_lazy import IndexSource, Journal, LazyMap, Modules
from ._graph_parse import FileFacts
from ._graph_read import default_workers, read_files
from ._graph_resolve import FileResult, ModTable, Resolver, placeholder_props
from ._graph_scan import module_names
from ._graph_stats import Delta, IndexStats, Progress, phase
from ._graph_tables import Edge, NodeKey

__all__ = ["CacheMissError", "Delta", "FileRecord", "GraphIndex", "IndexStats", "Progress", "phase"]


class CacheMissError(LookupError):
    """The cache lacks an entry the file list promised (it is then rebuilt, never trusted)."""


@dataclass(slots=True)
class FileRecord:
    """One indexed file: content identity, facts and what resolving it produced."""

    sha: str
    mtime_ns: int
    size: int
    facts: FileFacts | None
    """None until read from the cache (a resumed index reads a file's facts when it needs them)."""
    errors: int = 0
    module: tuple[str, bool] = ("", False)
    result: FileResult | None = None


def _function_names(table: ModTable) -> dict[str, tuple[str, ...]]:
    """The file's function ids by name (what the `name-unique` fallback looks up)."""
    out: dict[str, tuple[str, ...]] = {}
    for index, d in enumerate(table.facts["defs"]):
        if d[0] != "class":
            out[d[1]] = (*out.get(d[1], ()), table.ids[index])
    return out


class GraphIndex:
    """The index of one workspace (its graph is the union of the file results)."""

    def __init__(self, root: Path, source: IndexSource | None = None) -> None:
        self.root = root
        self.source = source
        self.files: dict[str, FileRecord] = {}
        self.modules = Modules(self._build_table)
        self.names: LazyMap[str, dict[str, tuple[str, ...]]] = LazyMap(source.names_of if source else None, dict)
        self.dependents: LazyMap[str, set[str]] = LazyMap(source.dependents_of if source else None, set)
        self.refs: dict[NodeKey, int] = {}
        self.node_count = 0
        self.edge_count = 0
        self.journal = Journal()
        self.last_resolved = 0
        self.workers = default_workers()
        """Processes parsing in parallel when many files changed (1: parse in this process)."""

    def resume(
        self, rows: dict[str, tuple[str, int, int, int]], refs: dict[NodeKey, int], counts: tuple[int, int]
    ) -> None:
        """Take over a cached index: (sha, mtime_ns, size, errors) per file, placeholder refs, graph size."""
        names = module_names(rows)
        for path, (sha, mtime, size, errors) in rows.items():
            self.files[path] = FileRecord(sha, mtime, size, None, errors, names[path])
            self.modules.put(names[path][0], path, None)
        self.refs = dict(refs)
        self.node_count, self.edge_count = counts

    def _load(self, paths: Iterable[str]) -> None:
        missing = [p for p in paths if p in self.files and self.files[p].facts is None]
        if not missing:
            return
        found = self.source.entries(missing) if self.source is not None else {}
        for path in missing:
            if path not in found:
                raise CacheMissError(path)
            record = self.files[path]
            record.facts, record.result = found[path]

    def _build_table(self, path: str, qname: str) -> ModTable:
        self._load([path])
        record = self.files[path]
        assert record.facts is not None
        return ModTable.build(path, qname, record.module[1], record.facts)

    # --- update ---------------------------------------------------------------------------

    def update(
        self,
        stats_now: dict[str, tuple[int, int]],
        stats: IndexStats,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Delta:
        """Bring the index up to date with the scanned tree and return the graph delta."""
        with phase(stats, "parse"):
            fresh = self._read_changed(stats_now, stats, progress, cancelled)
        removed = [p for p in self.files if p not in stats_now]
        stats.removed = len(removed)
        return self._apply(fresh, removed, module_names(stats_now), progress, stats)

    def _apply(
        self,
        fresh: dict[str, FileRecord],
        removed: list[str],
        names: dict[str, tuple[str, bool]],
        progress: Progress | None,
        stats: IndexStats,
    ) -> Delta:
        first = not self.files  # a first build re-resolves everything: no need to work out changed keys
        renamed = [p for p, rec in self.files.items() if p in names and p not in fresh and rec.module != names[p]]
        changed = sorted(set(fresh) | set(removed) | set(renamed))
        with phase(stats, "tables"):
            self._load(changed)
            old_results = {p: (self.files[p].result if p in self.files else None) for p in changed}
            changed_keys = self._swap_tables(changed, fresh, removed, names, track=not first)
            affected = {p for p in changed if p in self.files}
            for key in changed_keys:
                users = self.dependents.get(key)
                if users:
                    affected.update(p for p in users if p in self.files)
        self.last_resolved = len(affected)
        with phase(stats, "resolve"):
            new_results = self._resolve_files(sorted(affected), old_results, progress)
        with phase(stats, "diff"):
            return self._diff(old_results, new_results)

    def _read_changed(
        self,
        stats_now: dict[str, tuple[int, int]],
        stats: IndexStats,
        progress: Progress | None,
        cancelled: Callable[[], bool] | None,
    ) -> dict[str, FileRecord]:
        candidates = [
            p for p, (mtime, size) in stats_now.items()
            if p not in self.files or (self.files[p].mtime_ns, self.files[p].size) != (mtime, size)
        ]
        jobs = [(p, self.files[p].sha if p in self.files else None) for p in sorted(candidates)]
        fresh: dict[str, FileRecord] = {}
        outcomes = read_files(self.root, jobs, workers=self.workers, cancelled=cancelled)
        for done, (path, sha, facts) in enumerate(outcomes):
            if progress is not None:
                progress("parse", done, len(candidates))
            if sha is None:
                stats.skipped.append(path)
                continue
            stats.hashed += 1
            mtime, size = stats_now[path]
            old = self.files.get(path)
            if facts is None and old is not None:  # same content: only the stat data moved
                old.mtime_ns, old.size = mtime, size
                continue
            assert facts is not None  # a path never indexed has no known sha to match
            stats.parsed += 1
            fresh[path] = FileRecord(sha, mtime, size, facts, facts["errors"])
        if cancelled is not None and cancelled():
            from .._errors import ToolCallError

            raise ToolCallError("indexing was cancelled", code="cancelled")
        stats.skipped.sort()
        for path in stats.skipped:
            stats_now.pop(path, None)
        if progress is not None:
            progress("parse", len(candidates), len(candidates))
        return fresh

    def _swap_tables(
        self,
        changed: list[str],
        fresh: dict[str, FileRecord],
        removed: list[str],
        names: dict[str, tuple[str, bool]],
        *,
        track: bool,
    ) -> set[str]:
        """Replace the changed files' table entries; return the provided keys whose value changed."""
        changed_keys: set[str] = set()
        gone = set(removed)
        for path in changed:
            old = self.files.get(path)
            old_table = self._table_of(path, old) if old is not None else None
            if old is not None and old_table is not None:
                self._drop_tables(path, old, old_table)
            new_table: ModTable | None = None
            record = fresh.get(path) or old
            if path in gone or record is None:
                self.files.pop(path, None)
            else:
                assert record.facts is not None
                record.module = names[path]
                self.files[path] = record
                new_table = ModTable.build(path, *record.module, record.facts)
                self._add_tables(path, new_table)
            if track:
                before = old_table.provided(old.sha) if old is not None and old_table is not None else {}
                after = new_table.provided(record.sha) if new_table is not None and record is not None else {}
                changed_keys.update(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        return changed_keys

    def _table_of(self, path: str, record: FileRecord) -> ModTable:
        table = self.modules.tables.get(record.module[0])
        if table is not None and table.path == path:
            return table
        assert record.facts is not None
        return ModTable.build(path, *record.module, record.facts)

    def _drop_tables(self, path: str, record: FileRecord, table: ModTable) -> None:
        self.modules.drop(record.module[0], path)
        for name in _function_names(table):
            self.names.at(name).pop(path, None)
            self.journal.names[(name, path)] = None

    def _add_tables(self, path: str, table: ModTable) -> None:
        self.modules.put(table.qname, path, table)
        for name, ids in _function_names(table).items():
            self.names.at(name)[path] = ids
            self.journal.names[(name, path)] = ids

    def _resolve_files(
        self, affected: list[str], old_results: dict[str, FileResult | None], progress: Progress | None
    ) -> dict[str, FileResult | None]:
        self._load(affected)
        resolver = Resolver(self.modules, self.names)
        new_results: dict[str, FileResult | None] = dict.fromkeys(old_results)
        for done, path in enumerate(affected):
            if progress is not None and done % 50 == 0:
                progress("resolve", done, len(affected))
            record = self.files[path]
            if path not in old_results:
                old_results[path] = record.result
            info = {"sha": record.sha, "size": record.size}
            new_results[path] = record.result = resolver.resolve_file(self.modules[record.module[0]], info)
            self.journal.entries.add(path)
        if progress is not None:
            progress("resolve", len(affected), len(affected))
        return new_results

    # --- diff ------------------------------------------------------------------------------

    def _diff(self, old: dict[str, FileResult | None], new: dict[str, FileResult | None]) -> Delta:
        delta = Delta()
        old_owned: dict[NodeKey, tuple[Any, ...]] = {}
        new_owned: dict[NodeKey, tuple[Any, ...]] = {}
        refs_before: dict[NodeKey, int] = {}
        for path in old:
            before, after = old[path], new.get(path)
            old_edges = before.edges if before is not None else set()
            new_edges = after.edges if after is not None else set()
            if old_edges != new_edges:
                delta.edges_removed.extend(old_edges - new_edges)
                delta.edges_added.extend(new_edges - old_edges)
            self._move_deps(path, before, after)
            for result, sign, owned in ((before, -1, old_owned), (after, 1, new_owned)):
                if result is None:
                    continue
                owned.update(result.nodes)
                for key in result.placeholders:
                    count = self.refs.get(key, 0)
                    refs_before.setdefault(key, count)
                    self.refs[key] = count + sign
        for key in old_owned.keys() | new_owned.keys() | refs_before.keys():
            self._diff_node(key, old_owned, new_owned, refs_before, delta)
        self.node_count += len(delta.nodes_added) - len(delta.nodes_removed)
        self.edge_count += len(delta.edges_added) - len(delta.edges_removed)
        return delta

    def _diff_node(
        self,
        key: NodeKey,
        old_owned: dict[NodeKey, tuple[Any, ...]],
        new_owned: dict[NodeKey, tuple[Any, ...]],
        refs_before: dict[NodeKey, int],
        delta: Delta,
    ) -> None:
        # A node belongs to the file defining it, else it is a placeholder while any file refers to it.
        was = old_owned.get(key)
        if was is None and refs_before.get(key, self.refs.get(key, 0)) > 0:
            was = placeholder_props(key)
        now = new_owned.get(key)
        if now is None and self.refs.get(key, 0) > 0:
            now = placeholder_props(key)
        if key in refs_before:
            self.journal.refs.add(key)
            if self.refs.get(key, 0) <= 0:
                self.refs.pop(key, None)
        if now is None:
            if was is not None:
                delta.nodes_removed.append(key)
        elif was is None:
            delta.nodes_added[key] = now
        elif was != now:
            delta.nodes_changed[key] = now

    def _move_deps(self, path: str, before: FileResult | None, after: FileResult | None) -> None:
        old = before.deps if before is not None else set()
        new = after.deps if after is not None else set()
        for key in old - new:
            self.dependents.at(key).discard(path)
            self.journal.deps[(key, path)] = False
        for key in new - old:
            self.dependents.at(key).add(path)
            self.journal.deps[(key, path)] = True

    # --- whole graph ------------------------------------------------------------------------

    def materialize(self) -> None:
        """Read everything still in the cache into memory (before writing the whole index anew)."""
        if self.source is None:
            return
        self._load(list(self.files))
        names: LazyMap[str, dict[str, tuple[str, ...]]] = LazyMap(None, dict)
        dependents: LazyMap[str, set[str]] = LazyMap(None, set)
        for path, record in self.files.items():
            for key in record.result.deps if record.result is not None else ():
                dependents.at(key).add(path)
            for name, ids in _function_names(self._table_of(path, record)).items():
                names.at(name)[path] = ids
        self.names, self.dependents, self.source = names, dependents, None

    def all_nodes(self) -> dict[NodeKey, tuple[Any, ...]]:
        """Every node of the graph with its properties (reads the whole cache on a resumed index)."""
        self._load(list(self.files))
        nodes: dict[NodeKey, tuple[Any, ...]] = {}
        for record in self.files.values():
            if record.result is not None:
                nodes.update(record.result.nodes)
        for key, count in self.refs.items():
            if count > 0 and key not in nodes:
                nodes[key] = placeholder_props(key)
        return nodes

    def all_edges(self) -> Iterable[Edge]:
        """Every edge of the graph (reads the whole cache on a resumed index)."""
        self._load(list(self.files))
        for record in self.files.values():
            if record.result is not None:
                yield from record.result.edges
