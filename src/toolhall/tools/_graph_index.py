"""Incremental indexing: scan, hash, re-parse what changed, re-resolve what depends on it, diff.

The index keeps, per file, its facts and what its resolution produced (nodes, edges, the dependency
keys it consulted). An update re-parses only files whose content changed, works out which provided
keys changed value, re-resolves the changed files plus the files whose recorded dependencies include
a changed key, and returns the difference between the old and new graph. Applying that difference to
the old graph gives exactly what a fresh full build of the new tree gives.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._graph_parse import FileFacts
from ._graph_read import default_workers, read_files
from ._graph_resolve import FileResult, ModTable, Resolver, placeholder_props
from ._graph_scan import module_names
from ._graph_tables import Edge, NodeKey

__all__ = ["Delta", "FileRecord", "GraphIndex", "IndexStats", "Progress", "phase"]

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): stages are "scan", "parse", "resolve", "write"."""


@dataclass(slots=True)
class FileRecord:
    """One indexed file: content identity, facts and what resolving it produced."""

    sha: str
    mtime_ns: int
    size: int
    facts: FileFacts
    module: tuple[str, bool] = ("", False)
    provided: dict[str, Any] = field(default_factory=dict)
    result: FileResult | None = None


@dataclass(slots=True)
class Delta:
    """Changes turning the old graph into the new one."""

    nodes_added: dict[NodeKey, tuple[Any, ...]] = field(default_factory=dict)
    nodes_changed: dict[NodeKey, tuple[Any, ...]] = field(default_factory=dict)
    nodes_removed: list[NodeKey] = field(default_factory=list)
    edges_added: list[Edge] = field(default_factory=list)
    edges_removed: list[Edge] = field(default_factory=list)

    def __len__(self) -> int:
        return (len(self.nodes_added) + len(self.nodes_changed) + len(self.nodes_removed)
                + len(self.edges_added) + len(self.edges_removed))


@dataclass(slots=True, kw_only=True)
class IndexStats:
    """What one indexing run did (returned by `graph_index` and printed by `toolhall index`)."""

    mode: str = "incremental"
    """"full" (built from scratch), "incremental" (a delta was applied) or "unchanged" (nothing written)."""
    files: int = 0
    """Source files in the index after the run."""
    hashed: int = 0
    """Files whose content was read and hashed because their size or mtime changed."""
    parsed: int = 0
    """Files parsed (new or changed content)."""
    removed: int = 0
    """Files that disappeared since the last run."""
    resolved: int = 0
    """Files whose calls and imports were resolved again."""
    nodes_added: int = 0
    nodes_changed: int = 0
    nodes_removed: int = 0
    edges_added: int = 0
    edges_removed: int = 0
    nodes: int = 0
    edges: int = 0
    syntax_errors: list[str] = field(default_factory=list)
    """Files with syntax errors (indexed up to and around the errors)."""
    skipped: list[str] = field(default_factory=list)
    """Files not indexed (too large, unreadable, refused by the workspace)."""
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds per stage: scan, parse (read, hash, extract), tables, resolve, diff, write (the database),
    cache (the facts cache beside it)."""


@contextmanager
def phase(stats: IndexStats | None, name: str) -> Iterator[None]:
    """Add the time the block takes to `stats.phases[name]` (nothing when `stats` is None)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        if stats is not None:
            stats.phases[name] = round(stats.phases.get(name, 0.0) + time.perf_counter() - start, 3)


class GraphIndex:
    """The in-memory index of one workspace (its graph is the union of the file results)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, FileRecord] = {}
        self.modules: dict[str, ModTable] = {}
        self.names: dict[str, dict[str, tuple[str, ...]]] = {}
        self.nodes: dict[NodeKey, tuple[Any, ...]] = {}
        self.refs: dict[NodeKey, int] = {}
        self.owners: dict[NodeKey, str] = {}
        self.dependents: dict[str, set[str]] = {}
        self.last_resolved = 0
        self.workers = default_workers()
        """Processes parsing in parallel when many files changed (1: parse in this process)."""

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

    def load(self, records: dict[str, FileRecord]) -> None:
        """Rebuild the in-memory state from cached facts (the graph they give is already stored)."""
        self._apply(records, [], module_names(records), None, None)

    def _apply(
        self,
        fresh: dict[str, FileRecord],
        removed: list[str],
        names: dict[str, tuple[str, bool]],
        progress: Progress | None,
        stats: IndexStats | None,
    ) -> Delta:
        renamed = [p for p, rec in self.files.items() if p in names and p not in fresh and rec.module != names[p]]
        changed = sorted(set(fresh) | set(removed) | set(renamed))
        old_records = {p: self.files.get(p) for p in changed}
        old_results = {p: (rec.result if rec is not None else None) for p, rec in old_records.items()}
        with phase(stats, "tables"):
            changed_keys = self._swap_tables(changed, fresh, removed, names)
        affected = {p for p in changed if p in self.files}
        for key in changed_keys:
            affected.update(p for p in self.dependents.get(key, ()) if p in self.files)
        self.last_resolved = len(affected)
        return self._resolve(sorted(affected), old_results, progress, stats)

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
            fresh[path] = FileRecord(sha, mtime, size, facts)
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
    ) -> set[str]:
        """Replace the changed files' table entries; return the provided keys whose value changed."""
        changed_keys: set[str] = set()
        for path in changed:
            old = self.files.get(path)
            old_provided = old.provided if old is not None else {}
            if old is not None:
                self._drop_tables(path, old)
            if path in removed:
                self.files.pop(path, None)
                new_provided: dict[str, Any] = {}
            else:
                record = fresh.get(path) or old
                assert record is not None
                record.module = names[path]
                self.files[path] = record
                self._add_tables(path, record)
                new_provided = record.provided
            for key in old_provided.keys() | new_provided.keys():
                if old_provided.get(key) != new_provided.get(key):
                    changed_keys.add(key)
        return changed_keys

    def _drop_tables(self, path: str, record: FileRecord) -> None:
        qname = record.module[0]
        if self.modules.get(qname) is not None and self.modules[qname].path == path:
            del self.modules[qname]
        for key in record.provided:
            if key.startswith("n:"):
                owners = self.names.get(key[2:], {})
                owners.pop(path, None)
                if not owners:
                    self.names.pop(key[2:], None)

    def _add_tables(self, path: str, record: FileRecord) -> None:
        qname, is_package = record.module
        table = ModTable.build(path, qname, is_package, record.facts)
        self.modules[qname] = table
        record.provided = table.provided(record.sha)
        for key, value in record.provided.items():
            if key.startswith("n:"):
                self.names.setdefault(key[2:], {})[path] = value

    def _resolve(
        self,
        affected: list[str],
        old_results: dict[str, FileResult | None],
        progress: Progress | None,
        stats: IndexStats | None,
    ) -> Delta:
        with phase(stats, "resolve"):
            new_results = self._resolve_files(affected, old_results, progress)
        with phase(stats, "diff"):
            return self._diff(old_results, new_results)

    def _resolve_files(
        self, affected: list[str], old_results: dict[str, FileResult | None], progress: Progress | None
    ) -> dict[str, FileResult | None]:
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
        if progress is not None:
            progress("resolve", len(affected), len(affected))
        return new_results

    # --- diff ------------------------------------------------------------------------------

    def _diff(self, old: dict[str, FileResult | None], new: dict[str, FileResult | None]) -> Delta:
        delta = Delta()
        touched: set[NodeKey] = set()
        for path in old:
            before, after = old[path], new.get(path)
            old_edges = before.edges if before is not None else set()
            new_edges = after.edges if after is not None else set()
            delta.edges_removed.extend(sorted(old_edges - new_edges))
            delta.edges_added.extend(sorted(new_edges - old_edges))
            self._move_deps(path, before, after)
            for result, sign in ((before, -1), (after, 1)):
                if result is None:
                    continue
                for key in result.placeholders:
                    self.refs[key] = self.refs.get(key, 0) + sign
                    touched.add(key)
                touched.update(result.nodes)
            if before is not None:
                for key in before.nodes:
                    if self.owners.get(key) == path:
                        del self.owners[key]
            if after is not None:
                for key in after.nodes:
                    self.owners[key] = path
        for key in sorted(touched):
            self._diff_node(key, delta)
        return delta

    def _diff_node(self, key: NodeKey, delta: Delta) -> None:
        owner = self.owners.get(key)
        props: tuple[Any, ...] | None = None
        if owner is not None:
            result = self.files[owner].result
            props = result.nodes.get(key) if result is not None else None
        if props is None and self.refs.get(key, 0) > 0:
            props = placeholder_props(key)
        if self.refs.get(key, 1) <= 0:
            self.refs.pop(key, None)
        before = self.nodes.get(key)
        if props is None:
            if before is not None:
                delta.nodes_removed.append(key)
                del self.nodes[key]
        elif before is None:
            delta.nodes_added[key] = self.nodes[key] = props
        elif before != props:
            delta.nodes_changed[key] = self.nodes[key] = props

    def _move_deps(self, path: str, before: FileResult | None, after: FileResult | None) -> None:
        for key in before.deps if before is not None else ():
            users = self.dependents.get(key)
            if users is not None:
                users.discard(path)
                if not users:
                    del self.dependents[key]
        for key in after.deps if after is not None else ():
            self.dependents.setdefault(key, set()).add(path)

    # --- whole graph ------------------------------------------------------------------------

    def all_edges(self) -> Iterable[Edge]:
        """Every edge of the graph."""
        for record in self.files.values():
            if record.result is not None:
                yield from record.result.edges

    def edge_count(self) -> int:
        """How many edges the graph has."""
        return sum(len(r.result.edges) for r in self.files.values() if r.result is not None)
