"""The edges leaving one file's nodes: CONTAINS, DEFINES, IMPORTS, CALLS, INHERITS, OVERRIDES."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._graph_tables import Edge

if TYPE_CHECKING:
    from ._graph_resolve import ModTable, Resolver, Target

__all__ = ["call_targets", "file_edges"]

# Method names of builtin types: `text.strip()` on an unknown local must not link to a lone `strip`.
_BUILTIN_METHODS = frozenset(
    name
    for kind in (str, bytes, bytearray, list, dict, set, frozenset, tuple, int, float, complex, object)
    for name in dir(kind)
)


def file_edges(resolver: Resolver, table: ModTable) -> set[Edge]:
    """Every edge whose source node belongs to `table`'s file."""
    defs = table.facts["defs"]
    labels = ["Class" if d[0] == "class" else "Function" for d in defs]
    edges: set[Edge] = {("CONTAINS", "File", table.path, "Module", table.qname, ())}
    for index, d in enumerate(defs):
        edges.add(("CONTAINS", "File", table.path, labels[index], table.ids[index], ()))
        parent = d[2]
        src = ("Module", table.qname) if parent < 0 else (labels[parent], table.ids[parent])
        edges.add(("DEFINES", *src, labels[index], table.ids[index], ()))
    _import_edges(resolver, table, edges)
    _call_edges(resolver, table, edges)
    _class_edges(resolver, table, edges)
    return edges


def _import_edges(resolver: Resolver, table: ModTable, edges: set[Edge]) -> None:
    for line, level, module, names in table.facts["imports"]:
        base = table.absolute(level, module)
        if base is None:
            continue
        resolver.is_module(base)  # records the dependency: placeholder or real module
        edges.add(("IMPORTS", "Module", table.qname, "Module", base, (line, tuple(names))))
        for name in names:
            if name != "*" and resolver.is_module(f"{base}.{name}"):
                edges.add(("IMPORTS", "Module", table.qname, "Module", f"{base}.{name}", (line, ())))


def _caller(table: ModTable, scope: int) -> tuple[str, str]:
    """The node a call in `scope` belongs to: the enclosing function, else the module."""
    defs = table.facts["defs"]
    while scope >= 0 and defs[scope][0] == "class":
        scope = defs[scope][2]
    return ("Module", table.qname) if scope < 0 else ("Function", table.ids[scope])


def _call_edges(resolver: Resolver, table: ModTable, edges: set[Edge]) -> None:
    # 40% of the stdlib's call sites repeat a (scope, callee) pair of the same file (`self.assertEqual`
    # twenty times in one test): resolve each pair once. The file's dependencies were recorded the first time.
    seen: dict[tuple[int, tuple[str, ...]], list[tuple[Target, str]]] = {}
    callers: dict[int, tuple[str, str]] = {}
    for scope, line, chain in table.facts["calls"]:
        key = (scope, tuple(chain))
        targets = seen.get(key)
        if targets is None:
            targets = seen[key] = call_targets(resolver, table, scope, chain)
        caller = callers.get(scope)
        if caller is None:
            caller = callers[scope] = _caller(table, scope)
        src_label, src_id = caller
        for target, how in targets:
            if target[0] == "F":
                edges.add(("CALLS", src_label, src_id, "Function", target[1], (line, how)))
            elif target[0] == "E":
                edges.add(("CALLS", src_label, src_id, "External", target[1], (line, how)))
            elif target[0] == "C":
                inits = [t for t in resolver.mro_lookup(target[1], "__init__", skip_first=False) if t[0] == "F"]
                for init in inits:
                    edges.add(("CALLS", src_label, src_id, "Function", init[1], (line, "ctor")))
                if not inits:
                    edges.add(("CALLS", src_label, src_id, "Class", target[1], (line, "ctor")))


def _method_binding(table: ModTable, scope: int, name: str) -> int | None:
    """The class whose method binds `name` as its first parameter (self/cls) seen from `scope`."""
    defs = table.facts["defs"]
    current = scope
    while current >= 0:
        kind, _, parent, *_rest = defs[current]
        if kind != "class" and name in table.scopes.get(current, {}):
            is_method = kind == "function" and parent >= 0 and defs[parent][0] == "class"
            if is_method and defs[current][7] == name and "staticmethod" not in defs[current][8]:
                return int(parent)
            return None
        current = parent
    return None


def _enclosing_class(table: ModTable, scope: int) -> int | None:
    defs = table.facts["defs"]
    current = scope
    while current >= 0:
        parent = defs[current][2]
        if defs[current][0] != "class" and parent >= 0 and defs[parent][0] == "class":
            return int(parent)
        current = parent
    return None


def call_targets(resolver: Resolver, table: ModTable, scope: int, chain: list[str]) -> list[tuple[Target, str]]:
    """What a call of the dotted `chain` made in `scope` may run, each with how it was resolved."""
    head = chain[0]
    if head == "?":
        return []
    if head == "super()":
        cls = _enclosing_class(table, scope)
        if cls is None:
            return []
        found = resolver.mro_lookup(table.ids[cls], chain[1], skip_first=True)
        return [(t, "super") for t in found]
    cls = _method_binding(table, scope, head) if len(chain) > 1 else None
    if cls is not None:
        if len(chain) != 2:
            return []
        return [(t, "self") for t in resolver.mro_lookup(table.ids[cls], chain[1], skip_first=False)]
    out: list[tuple[Target, str]] = []
    for target, how in resolver.chain(table, scope, chain):
        if target[0] == "V":
            if len(chain) == 2 and chain[1] not in _BUILTIN_METHODS:
                out.extend((t, "name-unique") for t in resolver.unique_function(chain[1]))
        else:
            out.append((target, how))
    return list(dict.fromkeys(out))


def _class_edges(resolver: Resolver, table: ModTable, edges: set[Edge]) -> None:
    defs: list[list[Any]] = table.facts["defs"]
    for index, d in enumerate(defs):
        if d[0] == "class":
            for base in resolver.class_bases(table.ids[index]):
                label = "Class" if base[0] == "C" else "External"
                edges.add(("INHERITS", "Class", table.ids[index], label, base[1], ()))
        elif d[2] >= 0 and defs[d[2]][0] == "class":
            for found in resolver.mro_lookup(table.ids[d[2]], d[1], skip_first=True):
                if found[0] == "F":
                    edges.add(("OVERRIDES", "Function", table.ids[index], "Function", found[1], ()))
