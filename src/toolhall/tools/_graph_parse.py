"""Per-file facts for the code graph, extracted from Python source with tree-sitter.

Facts are plain JSON-able lists so they can be cached beside the database and reused without
re-parsing. They are a pure function of the file's bytes: module names, relative imports and
every cross-file link are worked out later by the resolver (`_graph_resolve`).

Facts layout (`FileFacts` is a dict):

* ``defs``: ``[kind, name, parent, line, end_line, is_async, cond, first_param, decorators, bases]``,
  kind in ``class | function | lambda``; ``parent`` is the index of the enclosing def or -1 (module).
* ``binds``: ``[scope, name, kind, target, cond]`` in source order. kind is ``def`` (target = def
  index), ``module`` (``import a.b`` binds ``a``; target ``"a"``), ``import`` (``import a.b as c``;
  target ``"a.b"``), ``from`` (target ``[level, module, name]``), ``alias`` (``x = a.b``; target
  ``"a.b"``), ``var`` (any other local binding) or ``outer`` (``global``/``nonlocal``).
* ``imports``: ``[line, level, module, names]`` for IMPORTS edges (``names`` empty for ``import m``).
* ``stars``: ``[scope, level, module]`` for ``from m import *``.
* ``calls``: ``[scope, line, chain]`` where chain is the dotted callee (``["os", "path", "join"]``),
  ``["super()", "m"]`` or ``["?", "m"]`` (a method called on an expression that is not a name).
* ``loc``, ``errors``: line count and the number of ERROR/MISSING nodes (the rest is still indexed).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import tree_sitter
import tree_sitter_python
from tree_sitter import QueryCursor as _QueryCursor

__all__ = ["FACTS_VERSION", "FileFacts", "extract_python"]

FACTS_VERSION = 1
"""Bumped whenever the facts layout or extraction rules change (forces a full rebuild)."""

FileFacts = dict[str, Any]

# Statements whose bodies may or may not run: a binding inside one is an alternative, not a replacement.
_CONDITIONAL = frozenset(
    {"if_statement", "try_statement", "while_statement", "for_statement", "match_statement"}
)
_PLAIN_PARAMS = frozenset({"identifier", "typed_parameter", "default_parameter", "typed_default_parameter"})
_PATTERN_CONTAINERS = frozenset(
    {
        "pattern_list",
        "tuple_pattern",
        "list_pattern",
        "tuple",
        "list",
        "parenthesized_expression",
        "list_splat_pattern",
        "as_pattern_target",
    }
)


@lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _dotted(node: tree_sitter.Node | None) -> list[str] | None:
    """The dotted name of an identifier/attribute chain (parentheses unwrapped), else None."""
    parts: list[str] = []
    while node is not None:
        if node.type == "identifier":
            parts.append(_text(node))
            return parts[::-1]
        if node.type == "attribute":
            attr = node.child_by_field_name("attribute")
            if attr is None:
                return None
            parts.append(_text(attr))
            node = node.child_by_field_name("object")
        elif node.type == "parenthesized_expression" and node.named_child_count == 1:
            node = node.named_children[0]
        else:
            return None
    return None


def _target_names(node: tree_sitter.Node | None) -> list[str]:
    """Names bound by an assignment/for/with target (attributes and subscripts bind nothing)."""
    if node is None:
        return []
    if node.type == "identifier":
        return [_text(node)]
    if node.type in _PATTERN_CONTAINERS:
        return [name for child in node.named_children for name in _target_names(child)]
    return []


_QUERY_TYPES = (
    "call", "function_definition", "class_definition", "assignment", "augmented_assignment",
    "for_statement", "for_in_clause", "as_pattern", "named_expression", "global_statement",
    "nonlocal_statement", "import_statement", "import_from_statement",
    *sorted(_CONDITIONAL),
)


@lru_cache(maxsize=1)
def _query() -> tree_sitter.Query:
    language = tree_sitter.Language(tree_sitter_python.language())
    return tree_sitter.Query(language, "[" + " ".join(f"({t})" for t in _QUERY_TYPES) + "] @n")


class _Extractor:
    """Visits the interesting nodes (found by a tree-sitter query, in C) in source order.

    Scopes and conditional blocks are byte intervals on a stack: a def's scope covers only its body,
    so parameter defaults, decorators and class bases belong to the enclosing scope, as in Python.
    """

    def __init__(self) -> None:
        self.defs: list[list[Any]] = []
        self.binds: list[list[Any]] = []
        self.imports: list[list[Any]] = []
        self.stars: list[list[Any]] = []
        self.calls: list[list[Any]] = []
        # (end_byte, scope index or None for a conditional block)
        self.open: list[tuple[int, int | None]] = [(1 << 62, -1)]

    def run(self, root: tree_sitter.Node) -> None:
        nodes = _QueryCursor(_query()).captures(root).get("n", [])
        nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
        for node in nodes:
            start = node.start_byte
            while self.open[-1][0] <= start:
                self.open.pop()
            scope, cond = self.context()
            kind = node.type
            if kind in _CONDITIONAL:
                self.open.append((node.end_byte, None))
            handler = _HANDLERS.get(kind)
            if handler is not None:
                handler(self, node, scope, cond)

    def context(self) -> tuple[int, bool]:
        cond = False
        for _, scope in reversed(self.open):
            if scope is None:
                cond = True
            else:
                return scope, cond
        return -1, cond

    def open_scope(self, body: tree_sitter.Node | None, index: int) -> None:
        if body is not None:
            self.open.append((body.end_byte, index))
            self.open.sort(key=lambda item: -item[0])

    def bind(self, scope: int, name: str, kind: str, target: Any, cond: bool) -> None:
        self.binds.append([scope, name, kind, target, cond])

    def new_def(self, kind: str, name: str, node: tree_sitter.Node, parent: int, cond: bool) -> int:
        index = len(self.defs)
        is_async = node.children[0].type == "async" if node.children else False
        self.defs.append(
            [kind, name, parent, node.start_point.row + 1, node.end_point.row + 1, is_async, cond, None, [], []]
        )
        self.bind(parent, name, "def", index, cond)
        return index

    def parameters(self, params: tree_sitter.Node | None, index: int) -> str | None:
        """Bind the parameters in the new scope; return the first positional one's name."""
        first: str | None = None
        seen = False
        for param in params.named_children if params is not None else []:
            if param.type == "identifier":
                name = _text(param)
            else:
                name_node = param.child_by_field_name("name")
                if name_node is None:
                    named = [c for c in param.named_children if c.type == "identifier"]
                    name_node = named[0] if named else None
                name = _text(name_node) if name_node is not None else ""
            if name:
                self.bind(index, name, "var", None, False)
            if not seen:
                seen = True
                if param.type in _PLAIN_PARAMS:
                    first = name or None
        return first


def _decorators(node: tree_sitter.Node) -> list[str]:
    parent = node.parent
    out: list[str] = []
    if parent is None or parent.type != "decorated_definition":
        return out
    for child in parent.children:
        if child.type == "decorator" and child.named_child_count:
            expr = child.named_children[0]
            dotted = _dotted(expr.child_by_field_name("function") if expr.type == "call" else expr)
            if dotted:
                out.append(dotted[-1])
    return out


def _on_function(ex: _Extractor, node: tree_sitter.Node, scope: int, cond: bool) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    index = ex.new_def("function", _text(name_node), node, scope, cond)
    ex.defs[index][8] = _decorators(node)
    ex.defs[index][7] = ex.parameters(node.child_by_field_name("parameters"), index)
    ex.open_scope(node.child_by_field_name("body"), index)


def _on_class(ex: _Extractor, node: tree_sitter.Node, scope: int, cond: bool) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    index = ex.new_def("class", _text(name_node), node, scope, cond)
    ex.defs[index][8] = _decorators(node)
    bases: list[str] = []
    superclasses = node.child_by_field_name("superclasses")
    for arg in superclasses.named_children if superclasses is not None else []:
        base = arg.child_by_field_name("value") if arg.type == "subscript" else arg
        dotted = _dotted(base)
        if dotted is not None:
            bases.append(".".join(dotted))
    ex.defs[index][9] = bases
    ex.open_scope(node.child_by_field_name("body"), index)


def _on_assignment(ex: _Extractor, node: tree_sitter.Node, scope: int, cond: bool) -> None:
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if left is not None and left.type == "identifier" and right is not None:
        name = _text(left)
        dotted = _dotted(right) if right.type in ("identifier", "attribute") else None
        if dotted is not None:
            ex.bind(scope, name, "alias", ".".join(dotted), cond)
            return
        if right.type == "lambda":
            index = ex.new_def("lambda", name, right, scope, cond)
            ex.parameters(right.child_by_field_name("parameters"), index)
            ex.open_scope(right.child_by_field_name("body"), index)
            return
    for name in _target_names(left):
        ex.bind(scope, name, "var", None, cond)


def _on_augmented(ex: _Extractor, node: tree_sitter.Node, scope: int, cond: bool) -> None:
    for name in _target_names(node.child_by_field_name("left")):
        ex.bind(scope, name, "var", None, cond)


def _on_for(ex: _Extractor, node: tree_sitter.Node, scope: int, cond: bool) -> None:
    del cond
    for name in _target_names(node.child_by_field_name("left")):
        ex.bind(scope, name, "var", None, True)


def _on_as_pattern(ex: _Extractor, node: tree_sitter.Node, scope: int, cond: bool) -> None:
    for name in _target_names(node.child_by_field_name("alias")):
        ex.bind(scope, name, "var", None, cond)


def _on_named_expression(ex: _Extractor, node: tree_sitter.Node, scope: int, cond: bool) -> None:
    name = node.child_by_field_name("name")
    if name is not None:
        ex.bind(scope, _text(name), "var", None, cond)


def _on_outer(ex: _Extractor, node: tree_sitter.Node, scope: int, cond: bool) -> None:
    for child in node.named_children:
        if child.type == "identifier":
            ex.bind(scope, _text(child), "outer", None, cond)


def _on_import(ex: _Extractor, node: tree_sitter.Node, scope: int, cond: bool) -> None:
    line = node.start_point.row + 1
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name = child.child_by_field_name("name")
            alias = child.child_by_field_name("alias")
            if name is None or alias is None:
                continue
            module = _text(name)
            ex.bind(scope, _text(alias), "import", module, cond)
        else:
            module = _text(child)
            head = module.split(".")[0]
            ex.bind(scope, head, "module", head, cond)
        ex.imports.append([line, 0, module, []])


def _on_import_from(ex: _Extractor, node: tree_sitter.Node, scope: int, cond: bool) -> None:
    module_node = node.child_by_field_name("module_name")
    if module_node is None:
        return
    level, module = 0, _text(module_node)
    if module_node.type == "relative_import":
        prefix = module_node.named_children[0] if module_node.named_child_count else None
        level = len(_text(prefix)) if prefix is not None and prefix.type == "import_prefix" else 0
        rest = [c for c in module_node.named_children if c.type == "dotted_name"]
        module = _text(rest[0]) if rest else ""
    names: list[str] = []
    if any(child.type == "wildcard_import" for child in node.children):
        ex.stars.append([scope, level, module])
        names.append("*")
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name_node = child.child_by_field_name("name")
            alias = child.child_by_field_name("alias")
            if name_node is None or alias is None:
                continue
            name, bound = _text(name_node), _text(alias)
        else:
            name = bound = _text(child)
        names.append(name)
        ex.bind(scope, bound, "from", [level, module, name], cond)
    ex.imports.append([node.start_point.row + 1, level, module, names])


def _on_call(ex: _Extractor, node: tree_sitter.Node, scope: int, cond: bool) -> None:
    del cond
    function = node.child_by_field_name("function")
    if function is None:
        return
    line = node.start_point.row + 1
    chain = _dotted(function)
    if chain is not None:
        ex.calls.append([scope, line, chain])
    elif function.type == "attribute":
        attr = function.child_by_field_name("attribute")
        obj = function.child_by_field_name("object")
        if attr is not None:
            is_super = (
                obj is not None
                and obj.type == "call"
                and _dotted(obj.child_by_field_name("function")) == ["super"]
            )
            ex.calls.append([scope, line, ["super()" if is_super else "?", _text(attr)]])


_HANDLERS = {
    "function_definition": _on_function,
    "class_definition": _on_class,
    "assignment": _on_assignment,
    "augmented_assignment": _on_augmented,
    "for_statement": _on_for,
    "for_in_clause": _on_for,
    "as_pattern": _on_as_pattern,
    "named_expression": _on_named_expression,
    "global_statement": _on_outer,
    "nonlocal_statement": _on_outer,
    "import_statement": _on_import,
    "import_from_statement": _on_import_from,
    "call": _on_call,
}


def _count_errors(root: tree_sitter.Node) -> int:
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            count += 1
        if node.has_error:
            stack.extend(node.children)
    return count


def extract_python(source: bytes) -> FileFacts:
    """Extract the facts of one Python file; syntax errors are counted, the rest is still indexed.

    Args:
        source: The file's bytes (decoded as UTF-8 with replacement by tree-sitter's node text).

    Returns:
        The facts dict described in the module docstring.
    """
    tree = _parser().parse(source)
    extractor = _Extractor()
    extractor.run(tree.root_node)
    errors = _count_errors(tree.root_node) if tree.root_node.has_error else 0
    return {
        "defs": extractor.defs,
        "binds": extractor.binds,
        "imports": extractor.imports,
        "stars": extractor.stars,
        "calls": extractor.calls,
        "loc": source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1),
        "errors": errors,
    }
