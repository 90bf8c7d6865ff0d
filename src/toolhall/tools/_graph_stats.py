"""What an indexing run reports (`IndexStats`, per-stage timings) and the graph delta it produces."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ._graph_tables import Edge, NodeKey

__all__ = ["Delta", "IndexStats", "Progress", "phase"]

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): stages are "scan", "parse", "resolve", "write"."""


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
