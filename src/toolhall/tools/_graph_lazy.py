"""The index's global lookup tables, filled on first use from the cache when a process resumes an index.

After a full build every table is complete in memory. A process that resumes from the cache instead
loads only the file list up front; module tables, the functions of a name and the dependents of a key are
read from the cache (`IndexSource`) the first time an update needs them, so a one-file change costs a
few lookups rather than loading the whole repository. Once loaded (or changed), the in-memory entry is
the truth: an emptied entry stays as an empty container and is never re-read. Every change is noted in
the `Journal`, which the cache writes after the graph itself was written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from ._graph_parse import FileFacts
from ._graph_resolve import FileResult, ModTable

__all__ = ["IndexSource", "Journal", "LazyMap", "Modules"]

_K = TypeVar("_K")
_V = TypeVar("_V")


class IndexSource(Protocol):
    """Where a resumed index reads what it has not loaded yet (the facts cache)."""

    def entries(self, paths: list[str]) -> dict[str, tuple[FileFacts, FileResult]]:
        """Facts and resolution result of each path."""
        ...

    def names_of(self, name: str) -> dict[str, tuple[str, ...]]:
        """Function ids named `name`, by file."""
        ...

    def dependents_of(self, key: str) -> set[str]:
        """Files whose resolution consulted the dependency key."""
        ...


class LazyMap(Generic[_K, _V]):
    """A dict whose missing keys are read through `load` (or created empty when there is no loader)."""

    def __init__(self, load: Callable[[_K], _V] | None, empty: Callable[[], _V]) -> None:
        self.data: dict[_K, _V] = {}
        self._load = load
        self._empty = empty

    def get(self, key: _K, /) -> _V | None:
        """The value (loaded on first use), or None when the key is unknown and there is no loader."""
        value = self.data.get(key)
        if value is None and self._load is not None:
            value = self.data[key] = self._load(key)
        return value

    def at(self, key: _K) -> _V:
        """The value to change in place (loaded, or created empty)."""
        value = self.get(key)
        if value is None:
            value = self.data[key] = self._empty()
        return value


class Modules:
    """Module qname → its `ModTable`, built from the file's facts on first use."""

    def __init__(self, build: Callable[[str, str], ModTable]) -> None:
        self.paths: dict[str, str] = {}
        self.tables: dict[str, ModTable] = {}
        self._build = build

    def __contains__(self, qname: object) -> bool:
        return qname in self.paths

    def get(self, qname: str, /) -> ModTable | None:
        """The table of an indexed module, None for any other name."""
        table = self.tables.get(qname)
        if table is None:
            path = self.paths.get(qname)
            if path is None:
                return None
            table = self.tables[qname] = self._build(path, qname)
        return table

    def __getitem__(self, qname: str) -> ModTable:
        table = self.get(qname)
        if table is None:
            raise KeyError(qname)
        return table

    def put(self, qname: str, path: str, table: ModTable | None) -> None:
        """Make `path` the module `qname` (its table is built later when not given)."""
        self.paths[qname] = path
        self.tables.pop(qname, None)
        if table is not None:
            self.tables[qname] = table

    def drop(self, qname: str, path: str) -> None:
        """Forget module `qname` if `path` still provides it."""
        if self.paths.get(qname) == path:
            del self.paths[qname]
            self.tables.pop(qname, None)


@dataclass(slots=True)
class Journal:
    """What changed in memory since the cache was last written."""

    entries: set[str] = field(default_factory=set)
    """Files whose facts or resolution result changed."""
    deps: dict[tuple[str, str], bool] = field(default_factory=dict)
    """(dependency key, file) → whether the file now depends on the key."""
    names: dict[tuple[str, str], tuple[str, ...] | None] = field(default_factory=dict)
    """(function name, file) → the file's function ids of that name (None: none any more)."""
    refs: set[tuple[str, str]] = field(default_factory=set)
    """Placeholder nodes whose reference count changed."""

    def clear(self) -> None:
        """Forget everything (after the cache was written)."""
        self.entries.clear()
        self.deps.clear()
        self.names.clear()
        self.refs.clear()
