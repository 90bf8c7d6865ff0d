"""Import-aware, scope-aware resolution of per-file facts into graph nodes and edges.

Every lookup a file's resolution makes into global tables is recorded as a *dependency key*:

* ``m:<qname>``: is ``qname`` an indexed module?
* ``b:<module>:<name>``: the module-level binding(s) of ``name`` in ``module``;
* ``s:<module>``: the star imports of ``module``;
* ``c:<class id>``: a class's bases and members;
* ``n:<name>``: which functions are named ``name`` (the ``name-unique`` fallback).

Each file also *provides* keys (with a value). When files change, the keys whose values changed are
exactly the lookups whose answers may differ, so only files depending on them are re-resolved. This is
what keeps an incremental update proportional to the change rather than to the repository.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from ._graph_parse import FileFacts
from ._graph_tables import Edge, NodeKey, external_node, file_nodes, module_placeholder

__all__ = ["FileResult", "ModTable", "ModuleLookup", "NameLookup", "Resolver"]

_BUILTINS = frozenset(dir(builtins))
_T = TypeVar("_T")
_IMPORT_KINDS = frozenset({"module", "import", "from"})
_MAX_DEPTH = 24

Target = tuple[str, ...]
"""('F', id) function · ('C', id) class · ('M', qname) module · ('E', qname) external · ('V',) local."""


@dataclass(slots=True)
class ModTable:
    """One module's facts arranged for lookups."""

    path: str
    qname: str
    is_package: bool
    facts: FileFacts
    ids: list[str] = field(default_factory=list)
    qnames: list[str] = field(default_factory=list)
    scopes: dict[int, dict[str, list[list[Any]]]] = field(default_factory=dict)
    members: dict[int, dict[str, list[int]]] = field(default_factory=dict)
    index_of: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, path: str, qname: str, is_package: bool, facts: FileFacts) -> ModTable:
        """Arrange one file's facts by scope and give every definition its node id."""
        table = cls(path, qname, is_package, facts)
        seen: dict[str, int] = {}
        for kind, name, parent, *_ in facts["defs"]:
            base = table.qnames[parent] if parent >= 0 else qname
            dotted = f"{base}.{name}"
            table.qnames.append(dotted)
            count = seen[dotted] = seen.get(dotted, 0) + 1
            node_id = dotted if count == 1 else f"{dotted}#{count}"
            table.index_of[node_id] = len(table.ids)
            table.ids.append(node_id)
            if parent >= 0:
                table.members.setdefault(parent, {}).setdefault(name, []).append(len(table.ids) - 1)
            del kind
        for bind in facts["binds"]:
            table.scopes.setdefault(bind[0], {}).setdefault(bind[1], []).append(bind)
        return table

    def target_of(self, index: int) -> Target:
        """The target tuple of definition `index`."""
        return ("C" if self.facts["defs"][index][0] == "class" else "F", self.ids[index])

    def package(self, level: int) -> str | None:
        """The absolute package a relative import of `level` dots starts from, None above the root."""
        parts = self.qname.split(".")
        if not self.is_package:
            parts = parts[:-1]
        drop = level - 1
        if drop > len(parts):
            return None
        return ".".join(parts[: len(parts) - drop])

    def absolute(self, level: int, module: str) -> str | None:
        """Make the module of a (possibly relative) import absolute; None when it cannot be."""
        if level == 0:
            return module or None
        base = self.package(level)
        if base is None:
            return None
        if not base:
            return module or None
        return f"{base}.{module}" if module else base

    def provided(self, sha: str) -> dict[str, Any]:
        """The keys this file answers for, with values that change whenever the answer may change."""
        keys: dict[str, Any] = {f"m:{self.qname}": self.is_package}
        for name, binds in self.scopes.get(-1, {}).items():
            keys[f"b:{self.qname}:{name}"] = (self.is_package, _bind_value(self, binds))
        module_stars = [s for s in self.facts["stars"] if s[0] == -1]
        if module_stars:
            keys[f"s:{self.qname}"] = (self.is_package, repr(module_stars))
        for index, d in enumerate(self.facts["defs"]):
            if d[0] == "class":
                members = {n: [self.target_of(i) for i in idx] for n, idx in self.members.get(index, {}).items()}
                # Bases of a class nested in a function resolve through that function's locals,
                # which no key describes: tie such classes to the whole file's content.
                context = sha if d[2] >= 0 else ""
                keys[f"c:{self.ids[index]}"] = repr((d[9], sorted(members.items()), context))
            else:
                key = f"n:{d[1]}"
                keys[key] = (*keys.get(key, ()), self.ids[index])
        return keys


def _bind_value(table: ModTable, binds: list[list[Any]]) -> str:
    return repr([(b[2], table.target_of(b[3]) if b[2] == "def" else b[3], b[4]) for b in binds])


def _effective(binds: list[list[Any]]) -> list[list[Any]]:
    """The bindings that may be live at a use: back to and including the last unconditional one."""
    out: list[list[Any]] = []
    for bind in reversed(binds):
        out.append(bind)
        if not bind[4]:
            break
    return out[::-1]


class ModuleLookup(Protocol):
    """Indexed modules by qname (a dict, or the index's lazily built tables)."""

    def __contains__(self, qname: object, /) -> bool: ...

    def __getitem__(self, qname: str, /) -> ModTable: ...

    def get(self, qname: str, /) -> ModTable | None: ...


class NameLookup(Protocol):
    """Function ids by name and file (a dict, or the index's lazily read table)."""

    def get(self, name: str, /) -> dict[str, tuple[str, ...]] | None: ...


@dataclass(slots=True)
class FileResult:
    """What one file contributes to the graph."""

    nodes: dict[NodeKey, tuple[Any, ...]]
    edges: set[Edge]
    deps: set[str]
    placeholders: set[NodeKey]


class Resolver:
    """Resolves files against global tables; a fresh instance (cache) per indexing pass."""

    def __init__(self, modules: ModuleLookup, names: NameLookup) -> None:
        self.modules = modules
        self.names = names
        self._cache: dict[tuple[Any, ...], tuple[Any, set[str]]] = {}
        self._frames: list[set[str]] = []
        self._active: list[tuple[Any, ...]] = []
        self._tainted: set[tuple[Any, ...]] = set()

    # --- dependency-recording memo ---------------------------------------------------------

    def _dep(self, key: str) -> None:
        if self._frames:
            self._frames[-1].add(key)

    def _memo(self, key: tuple[Any, ...], compute: Callable[[], _T]) -> _T:
        hit = self._cache.get(key)
        if hit is not None:
            if self._frames:
                self._frames[-1].update(hit[1])
            return cast(_T, hit[0])
        if key in self._active or len(self._active) > _MAX_DEPTH:
            # A cycle (or runaway chain): cut it, and do not cache anything computed through it,
            # so the answer never depends on the order lookups happened in.
            self._tainted.update(self._active)
            return cast(_T, [])
        self._active.append(key)
        self._frames.append(set())
        try:
            result = compute()
        finally:
            deps = self._frames.pop()
            self._active.pop()
        if key in self._tainted:
            self._tainted.discard(key)
        else:
            self._cache[key] = (result, deps)
        if self._frames:
            self._frames[-1].update(deps)
        return result

    # --- modules and members ---------------------------------------------------------------

    def is_module(self, qname: str) -> bool:
        """Whether `qname` is an indexed module (recorded as a dependency)."""
        self._dep(f"m:{qname}")
        return qname in self.modules

    def absolute(self, dotted: str) -> list[Target]:
        """Resolve an absolute dotted name: the longest indexed module prefix, then members."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            head = ".".join(parts[:cut])
            if self.is_module(head):
                targets: list[Target] = [("M", head)]
                for attr in parts[cut:]:
                    targets = [t for target in targets for t in self.member(target, attr)]
                return targets
        return [("E", dotted)]

    def member(self, target: Target, attr: str) -> list[Target]:
        """The targets of `target.attr`."""
        kind = target[0]
        if kind == "M":
            return [t for t, _ in self._memo(("mem", target[1], attr), lambda: self._module_member(target[1], attr))]
        if kind == "C":
            return self.mro_lookup(target[1], attr, skip_first=False)
        if kind == "E":
            return [("E", f"{target[1]}.{attr}")]
        return []

    def _module_member(self, qname: str, attr: str) -> list[tuple[Target, str]]:
        self._dep(f"b:{qname}:{attr}")
        table = self.modules[qname]
        binds = table.scopes.get(-1, {}).get(attr)
        if binds:
            return self.bindings(table, -1, _effective(binds))
        if self.is_module(f"{qname}.{attr}"):
            return [(("M", f"{qname}.{attr}"), "import")]
        self._dep(f"s:{qname}")
        for scope, level, module in table.facts["stars"]:
            base = table.absolute(level, module) if scope == -1 else None
            if base is not None:
                found = [(t, "import") for t in self.absolute(base) for t in self.member(t, attr)]
                if found:
                    return found
        return []

    def bindings(self, table: ModTable, scope: int, binds: list[list[Any]]) -> list[tuple[Target, str]]:
        """Resolve live bindings to targets, each with how the name was bound."""
        alternatives = len(binds) > 1
        out: list[tuple[Target, str]] = []
        for _, _, kind, target, _ in binds:
            how = "import-alt" if alternatives and kind in _IMPORT_KINDS else "import"
            if kind == "def":
                out.append((table.target_of(target), "local"))
            elif kind in ("module", "import"):
                out.extend((t, how) for t in self.absolute(target))
            elif kind == "from":
                out.extend((t, how) for t in self._from_target(table, target))
            elif kind == "alias":
                out.extend(self._alias(table, scope, target))
            elif kind == "var":
                out.append((("V",), "local"))
        return out

    def _alias(self, table: ModTable, scope: int, target: str) -> list[tuple[Target, str]]:
        return self._memo(("alias", table.qname, scope, target), lambda: self.chain(table, scope, target.split(".")))

    def _from_target(self, table: ModTable, target: list[Any]) -> list[Target]:
        level, module, name = target
        base = table.absolute(level, module)
        if base is None:
            return []
        # A submodule wins over an attribute of the same name: `from . import sub` in a package's
        # `__init__` would otherwise look itself up forever.
        if self.is_module(f"{base}.{name}"):
            return [("M", f"{base}.{name}")]
        return [t for b in self.absolute(base) for t in self.member(b, name)]

    # --- classes ---------------------------------------------------------------------------

    def class_bases(self, class_id: str) -> list[Target]:
        """The resolved bases of a class, external ones included."""
        return [t for t, _ in self._memo(("bases", class_id), lambda: self._bases(class_id))]

    def _bases(self, class_id: str) -> list[tuple[Target, str]]:
        self._dep(f"c:{class_id}")
        located = self.locate(class_id)
        if located is None:
            return []
        table, index = located
        out: list[tuple[Target, str]] = []
        for base in table.facts["defs"][index][9]:
            parts = base.split(".")
            scope = table.facts["defs"][index][2]
            if len(parts) == 1 and parts[0] in _BUILTINS and self.lookup(table, scope, parts[0]) is None:
                if parts[0] != "object":
                    out.append((("E", f"builtins.{parts[0]}"), "builtin"))
                continue
            out.extend((t, how) for t, how in self.chain(table, scope, parts) if t[0] in "CE")
        return out

    def locate(self, class_id: str) -> tuple[ModTable, int] | None:
        """The module table and def index of a class id."""
        qname = class_id.split("#")[0]
        module, _, _ = qname.rpartition(".")
        while module:
            table = self.modules.get(module)
            index = table.index_of.get(class_id) if table is not None else None
            if table is not None and index is not None:
                return table, index
            module = module.rpartition(".")[0]
        return None

    def mro(self, class_id: str) -> list[str]:
        """Class ids in method resolution order (depth-first, left to right, first occurrence)."""
        return self._memo(("mro", class_id), lambda: self._mro(class_id))

    def _mro(self, class_id: str) -> list[str]:
        order: list[str] = []
        stack = [class_id]
        while stack and len(order) < 64:
            current = stack.pop()
            if current in order:
                continue
            order.append(current)
            stack.extend(t[1] for t in reversed(self.class_bases(current)) if t[0] == "C")
        return order

    def mro_lookup(self, class_id: str, attr: str, *, skip_first: bool) -> list[Target]:
        """The definitions `attr` resolves to on a class (or, with skip_first, on its bases)."""
        return self._memo(("attr", class_id, attr, skip_first), lambda: self._mro_lookup(class_id, attr, skip_first))

    def _mro_lookup(self, class_id: str, attr: str, skip_first: bool) -> list[Target]:
        for current in self.mro(class_id)[1 if skip_first else 0 :]:
            self._dep(f"c:{current}")
            located = self.locate(current)
            if located is None:
                continue
            table, index = located
            found = table.members.get(index, {}).get(attr)
            if found:
                return [table.target_of(i) for i in found]
        return []

    # --- names and chains --------------------------------------------------------------------

    def lookup(self, table: ModTable, scope: int, name: str) -> list[list[Any]] | None:
        """The live bindings of `name` seen from `scope` (Python's LEGB, class bodies skipped)."""
        defs = table.facts["defs"]
        current, first = scope, True
        while True:
            if current == -1:
                self._dep(f"b:{table.qname}:{name}")
                binds = table.scopes.get(-1, {}).get(name)
                return _effective(binds) if binds else None
            is_class = defs[current][0] == "class"
            if first or not is_class:
                binds = table.scopes.get(current, {}).get(name)
                if binds and not any(b[2] == "outer" for b in binds):
                    return _effective(binds)
            first = False
            current = defs[current][2]

    def chain(self, table: ModTable, scope: int, chain: list[str]) -> list[tuple[Target, str]]:
        """Resolve a dotted expression used in `scope` to targets with how they were reached."""
        head, rest = chain[0], chain[1:]
        binds = self.lookup(table, scope, head)
        if binds is None:
            current = self._star_name(table, head)
            if not current:
                return []
        else:
            current = self.bindings(table, scope, binds)
        for attr in rest:
            nxt: list[tuple[Target, str]] = []
            for target, how in current:
                if target[0] == "V":
                    nxt.append((target, how))
                else:
                    nxt.extend((t, how) for t in self.member(target, attr))
            current = nxt
        return current

    def _star_name(self, table: ModTable, name: str) -> list[tuple[Target, str]]:
        for scope, level, module in table.facts["stars"]:
            base = table.absolute(level, module) if scope == -1 else None
            if base is None:
                continue
            found = [(t, "import") for b in self.absolute(base) for t in self.member(b, name)]
            if found:
                return found
        return []

    def unique_function(self, name: str) -> list[Target]:
        """The one function named `name` in the whole index, if there is exactly one."""
        self._dep(f"n:{name}")
        owners = self.names.get(name) or {}
        ids = [i for found in owners.values() for i in found]
        return [("F", ids[0])] if len(ids) == 1 else []

    # --- files ---------------------------------------------------------------------------------

    def resolve_file(self, table: ModTable, file_info: dict[str, Any]) -> FileResult:
        """All nodes and outgoing edges of one file, with the keys its answers depended on."""
        from ._graph_edges import file_edges  # local: the edge builder needs this class

        self._frames.append(set())
        try:
            edges = file_edges(self, table)
        finally:
            deps = self._frames.pop()
        nodes = file_nodes(table, file_info)
        placeholders: set[NodeKey] = set()
        for edge in edges:
            dst: NodeKey = (edge[3], edge[4])
            if dst[0] == "External" or (dst[0] == "Module" and dst[1] not in self.modules):
                placeholders.add(dst)
        return FileResult(nodes, edges, deps, placeholders)


def placeholder_props(key: NodeKey) -> tuple[Any, ...]:
    """Properties of a placeholder node (external module or symbol)."""
    return module_placeholder(key[1]) if key[0] == "Module" else external_node(key[1])


def unique(items: Iterable[Target]) -> list[Target]:
    """Targets in first-seen order without repeats."""
    return list(dict.fromkeys(items))
