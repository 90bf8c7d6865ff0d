"""A JSON-Schema walker shared by the provider formats: inline `$ref`s, flatten combinators, rewrite nodes.

Each format subclasses `SchemaTransformer` and overrides `transform(node)`, which sees a node whose
subschemas were already transformed (bottom-up), so a parent can still read its children's final shape.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

from .._errors import ExportError

__all__ = [
    "MAX_NODES",
    "SchemaTransformer",
    "add_note",
    "flatten_root",
    "inline_refs",
    "types_of",
]

MAX_NODES = 100_000
"""Inlining stops past this many schema nodes: a guard against hostile (exponential) `$ref` graphs."""

_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
        "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "patternProperties", "dependentSchemas")
_DEFS = ("$defs", "definitions")


def types_of(node: Mapping[str, Any]) -> list[str]:
    """The node's `type` as a list (empty when the node has none)."""
    raw = node.get("type")
    if isinstance(raw, str):
        return [raw]
    return [t for t in raw if isinstance(t, str)] if isinstance(raw, list) else []


def add_note(node: dict[str, Any], note: str) -> None:
    """Append a sentence to the node's description (where constraints a format cannot express go)."""
    text = node.get("description")
    node["description"] = f"{text.rstrip()} ({note})" if isinstance(text, str) and text.strip() else note


def _pointer(root: Mapping[str, Any], ref: str) -> Any:
    """Resolve a local JSON pointer (`#/$defs/x`); raise KeyError when it does not exist."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        raise KeyError(ref)
    node: Any = root
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


class _Budget:
    """Counts nodes produced while inlining, so a `$ref` bomb fails fast instead of exhausting memory."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise ExportError(f"schema grows past {MAX_NODES} nodes when its $refs are inlined")


def inline_refs(
    schema: Mapping[str, Any],
    on_cycle: Callable[[str], dict[str, Any]],
    *,
    keep_defs: bool = False,
) -> dict[str, Any]:
    """A copy of `schema` with every local `$ref` replaced by its target, and `$defs` dropped.

    Args:
        schema: The root schema (refs resolve against it).
        on_cycle: Called with the ref of a recursive reference; returns the node to put in its place.
        keep_defs: Keep `$defs`/`definitions` in the output (off: they are dropped once inlined).

    Raises:
        ExportError: A `$ref` points nowhere inside the schema, or inlining explodes past `MAX_NODES`.
    """
    budget = _Budget(MAX_NODES)

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(v, stack) for v in node]
        if not isinstance(node, Mapping):
            return node
        budget.spend()
        ref = node.get("$ref")
        fields = keys(node, stack)
        if not isinstance(ref, str):
            return fields
        fields.pop("$ref")
        if ref in stack:
            target: dict[str, Any] = on_cycle(ref)
        else:
            try:
                found = _pointer(schema, ref)
            except (KeyError, IndexError, ValueError, TypeError):
                raise ExportError(f"$ref {ref!r} does not point inside the schema") from None
            target = walk(found, (*stack, ref)) if isinstance(found, Mapping) else {}
        # Siblings of a $ref (a description, a default) describe the use site: they win.
        return {**target, **fields}

    def keys(node: Mapping[str, Any], stack: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DEFS and not keep_defs:
                continue
            if (key in _MAP or key in _DEFS) and isinstance(value, Mapping):
                out[key] = {k: walk(v, stack) for k, v in value.items()}
            elif key in _ONE or key in _MANY:
                out[key] = walk(value, stack)
            else:
                out[key] = copy.deepcopy(value)
        return out

    out = walk(schema, ())
    assert isinstance(out, dict)  # noqa: S101 - walk maps a mapping to a dict
    return out


def flatten_root(schema: dict[str, Any]) -> dict[str, Any]:
    """Merge root-level `anyOf`/`oneOf`/`allOf` object branches into one object schema.

    Providers want the arguments as one object: a union of objects becomes the object with every branch's
    properties, requiring only what every branch (or `allOf` any branch) requires.
    """
    combos = [k for k in ("allOf", "anyOf", "oneOf") if isinstance(schema.get(k), list)]
    if not combos:
        return schema
    out = {k: v for k, v in schema.items() if k not in combos}
    props: dict[str, Any] = dict(out.get("properties") or {})
    required: list[str] = list(out.get("required") or [])
    for key in combos:
        branches = [b for b in schema[key] if isinstance(b, Mapping)]
        sets = []
        for branch in branches:
            for name, sub in (branch.get("properties") or {}).items():
                props.setdefault(name, sub)
            sets.append(set(branch.get("required") or []))
        if sets:
            common = set.union(*sets) if key == "allOf" else set.intersection(*sets)
            required += [n for n in sorted(common) if n not in required]
    out["type"] = "object"
    out["properties"] = props
    if required:
        out["required"] = required
    if len(combos) and any(key != "allOf" for key in combos):
        add_note(out, "the arguments must match one of several shapes; unused properties may be omitted")
    return out


class SchemaTransformer:
    """Walks a schema bottom-up; subclasses override `transform(node, path)`.

    `path` is a JSON-pointer-like location, useful in messages.
    """

    def walk(self, node: Any, path: str = "#") -> Any:
        """Transform `node` and everything below it; non-mapping values are returned unchanged."""
        if not isinstance(node, Mapping):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _ONE and isinstance(value, Mapping):
                out[key] = self.walk(value, f"{path}/{key}")
            elif key in (*_MANY, "items") and isinstance(value, list):
                out[key] = [self.walk(v, f"{path}/{key}/{i}") for i, v in enumerate(value)]
            elif key in (*_MAP, *_DEFS) and isinstance(value, Mapping):
                out[key] = {k: self.walk(v, f"{path}/{key}/{k}") for k, v in value.items()}
            else:
                out[key] = value
        return self.transform(out, path)

    def transform(self, node: dict[str, Any], path: str) -> dict[str, Any]:
        """Rewrite one node (its subschemas are already done). The default keeps it as is."""
        return node


def json_text(value: Any) -> str:
    """A compact JSON rendering of a keyword value, for descriptions."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)
