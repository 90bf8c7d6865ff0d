"""The code graph's schema (a public contract) and the row shapes of its nodes and edges."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._graph_resolve import ModTable

__all__ = [
    "NODE_COLUMNS",
    "REL_PAIRS",
    "REL_PROPS",
    "SCHEMA_DOC",
    "SCHEMA_VERSION",
    "Edge",
    "NodeKey",
    "ddl",
    "external_node",
    "file_nodes",
    "module_placeholder",
]

SCHEMA_VERSION = 1
"""Bumped on any change to the tables below: an existing graph is then rebuilt, never migrated."""

NodeKey = tuple[str, str]
"""(label, id)."""
Edge = tuple[str, str, str, str, str, tuple[Any, ...]]
"""(rel, src label, src id, dst label, dst id, properties in REL_PROPS order)."""

_COMMON = [
    ("id", "STRING"),
    ("name", "STRING"),
    ("qname", "STRING"),
    ("file", "STRING"),
    ("line", "INT64"),
    ("end_line", "INT64"),
]
NODE_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "File": [*_COMMON, ("language", "STRING"), ("sha", "STRING"), ("size", "INT64"), ("loc", "INT64"),
             ("errors", "INT64")],
    "Module": [*_COMMON, ("path", "STRING"), ("is_package", "BOOLEAN"), ("external", "BOOLEAN")],
    "Class": list(_COMMON),
    "Function": [*_COMMON, ("kind", "STRING"), ("is_async", "BOOLEAN")],
    "External": list(_COMMON),
}
REL_PAIRS: dict[str, list[tuple[str, str]]] = {
    "CONTAINS": [("File", "Module"), ("File", "Class"), ("File", "Function")],
    "DEFINES": [(s, d) for s in ("Module", "Class", "Function") for d in ("Class", "Function")],
    "IMPORTS": [("Module", "Module")],
    "CALLS": [(s, d) for s in ("Function", "Module") for d in ("Function", "Class", "External")],
    "INHERITS": [("Class", "Class"), ("Class", "External")],
    "OVERRIDES": [("Function", "Function")],
}
REL_PROPS: dict[str, list[tuple[str, str]]] = {
    "CONTAINS": [],
    "DEFINES": [],
    "IMPORTS": [("line", "INT64"), ("names", "STRING[]")],
    "CALLS": [("line", "INT64"), ("how", "STRING")],
    "INHERITS": [],
    "OVERRIDES": [],
}

SCHEMA_DOC = """\
Schema (Kuzu/Ladybug Cypher). Every node has id, name, qname, file, line, end_line.
Nodes:
- File {id = path relative to the workspace, language, sha, size, loc, errors (syntax errors found)}
- Module {id = qname (dotted, e.g. 'pkg.mod'), path, is_package, external (true: imported, not indexed)}
- Class {id = qname; a redefinition in the same file gets id 'qname#2'}
- Function {kind: 'function' | 'method' | 'lambda', is_async}
- External {a symbol outside the workspace, id = its dotted name, e.g. 'requests.get', 'builtins.Exception'}
Relationships:
- (:File)-[:CONTAINS]->(:Module|Class|Function)
- (:Module|Class|Function)-[:DEFINES]->(:Class|Function)   (direct children only)
- (:Module)-[:IMPORTS {line, names: list of imported names, '*' for a star import}]->(:Module)
- (:Function|Module)-[:CALLS {line, how}]->(:Function|Class|External)   (Module = top-level code)
  how: 'local' (defined in the same module), 'import', 'import-alt' (one of several conditional
  bindings), 'self' (self./cls. through the class hierarchy), 'super', 'ctor' (Cls() -> Cls.__init__,
  or the Class itself when it has no indexed __init__), 'name-unique' (a GUESS: the only function of
  that name, called on an unknown object; filter with WHERE r.how <> 'name-unique').
- (:Class)-[:INHERITS]->(:Class|External)
- (:Function)-[:OVERRIDES]->(:Function)   (a method -> the base-class method it overrides)
Edges are static approximations: calls through unknown objects and dynamic dispatch are missing
(use OVERRIDES to follow virtual calls); builtins are dropped.
Dialect (not Neo4j): label(r) not type(r); no shortestPath(), use -[:CALLS* SHORTEST 1..6]->;
list comprehensions over paths fail, use properties(nodes(p), 'qname'); an alias must not reuse a
variable name (RETURN f.qname AS f fails); variable-length edges take filters as
-[:CALLS*1..3 (r, n | WHERE r.how <> 'name-unique')]->. Discover tables with CALL show_tables() RETURN *
and CALL table_info('Function') RETURN *.
Examples:
- callers: MATCH (c)-[r:CALLS]->(f:Function {name: $name}) RETURN c.qname, r.line, r.how, f.qname
- impact: MATCH (c)-[:CALLS*1..3]->(f:Function {qname: $q}) RETURN DISTINCT c.qname
- imports: MATCH (m:Module {qname: $m})-[:IMPORTS]->(d:Module) RETURN d.qname ORDER BY d.qname
"""


def ddl() -> list[str]:
    """The statements creating the schema (plus the Meta table recording versions)."""
    out = []
    for label, columns in NODE_COLUMNS.items():
        cols = ", ".join(f"{name} {kind}" for name, kind in columns)
        out.append(f"CREATE NODE TABLE {label}({cols}, PRIMARY KEY (id))")
    for rel, pairs in REL_PAIRS.items():
        parts = [f"FROM {s} TO {d}" for s, d in pairs] + [f"{n} {k}" for n, k in REL_PROPS[rel]]
        out.append(f"CREATE REL TABLE {rel}({', '.join(parts)})")
    out.append("CREATE NODE TABLE Meta(key STRING, value STRING, PRIMARY KEY (key))")
    return out


def file_nodes(table: ModTable, info: dict[str, Any]) -> dict[NodeKey, tuple[Any, ...]]:
    """The File, Module, Class and Function nodes of one file (properties without the id)."""
    facts, path = table.facts, table.path
    loc = facts["loc"]
    nodes: dict[NodeKey, tuple[Any, ...]] = {
        ("File", path): (path.rsplit("/", 1)[-1], path, path, 1, loc, "python", info["sha"], info["size"], loc,
                         facts["errors"]),
        ("Module", table.qname): (table.qname.rsplit(".", 1)[-1], table.qname, path, 1, loc, path,
                                  table.is_package, False),
    }
    defs = facts["defs"]
    for index, (kind, name, parent, line, end_line, is_async, *_rest) in enumerate(defs):
        common = (name, table.qnames[index], path, line, end_line)
        if kind == "class":
            nodes[("Class", table.ids[index])] = common
        else:
            if kind == "function" and parent >= 0 and defs[parent][0] == "class":
                kind = "method"
            nodes[("Function", table.ids[index])] = (*common, kind, is_async)
    return nodes


def module_placeholder(qname: str) -> tuple[Any, ...]:
    """A Module node for an imported module that is not in the workspace."""
    return (qname.rsplit(".", 1)[-1], qname, None, None, None, None, False, True)


def external_node(qname: str) -> tuple[Any, ...]:
    """An External node: a symbol outside the workspace."""
    return (qname.rsplit(".", 1)[-1], qname, None, None, None)
