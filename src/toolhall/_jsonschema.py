"""Wild tool schemas made into JSON Schema, and a compiled validator for `from_schema` tools.

Tool definitions found in the wild (BFCL, Java/JS exports, ToolBench, hand-written MCP servers) are often
*almost* JSON Schema: `"type": "dict"`, `"float"`, `"tuple"`, `"any"`, Java names such as `"HashMap"`, an
`"optional": true` key on a property. `normalize_schema` maps that dialect to JSON Schema with the table in
`DIALECT_TYPES` (documented in `docs/schemas.md`); a schema that is already valid JSON Schema with a root
`"type": "object"` comes back unchanged.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import jsonschema_rs

from ._errors import ArgumentsError, SchemaError

__all__ = [
    "DIALECT_TYPES",
    "ArgumentsError",
    "ArgumentsInvalid",
    "compile_validator",
    "is_standard_schema",
    "normalize_schema",
]

ArgumentsInvalid = ArgumentsError
"""Alias kept for callers written against the first name of the exception."""

# Lower-cased dialect type name → JSON Schema type (None: no type at all, i.e. any value).
DIALECT_TYPES: dict[str, str | None] = {
    # JSON Schema itself (also matched case-insensitively: ToolBench uses "STRING", "NUMBER").
    "string": "string",
    "number": "number",
    "integer": "integer",
    "boolean": "boolean",
    "object": "object",
    "array": "array",
    "null": "null",
    # Python (BFCL, API-Bank).
    "str": "string",
    "float": "number",
    "int": "integer",
    "bool": "boolean",
    "dict": "object",
    "list": "array",
    "tuple": "array",
    "set": "array",
    "none": "null",
    "nonetype": "null",
    "any": None,
    "": None,
    "datetime": "string",  # API-Bank; the value is ISO text on the wire
    "date": "string",
    # Java / JavaScript (BFCL simple_java, simple_javascript).
    "double": "number",
    "long": "integer",
    "short": "integer",
    "byte": "integer",
    "char": "string",
    "character": "string",
    "hashmap": "object",
    "map": "object",
    "arraylist": "array",
    "bigint": "integer",
    "json": "object",
}

# Keywords whose value is one subschema, a list of subschemas, or a map of name → subschema.
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
        "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_GENERIC = re.compile(r"^(?:typing\.)?(list|List|set|Set|tuple|Tuple|Sequence)\[(.+)\]$")
_PY_TYPE_OF: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string",
                                 list: "array", dict: "object", type(None): "null"}


def is_standard_schema(schema: Mapping[str, Any]) -> bool:
    """Whether `schema` is valid JSON Schema (for its `$schema` draft) with a root `"type": "object"`."""
    return schema.get("type") == "object" and bool(jsonschema_rs.meta.is_valid(_as_dict(schema)))


def _as_dict(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The Rust validator takes plain dicts only."""
    return schema if isinstance(schema, dict) else dict(schema)


def normalize_schema(schema: Mapping[str, Any], *, name: str | None = None) -> dict[str, Any]:
    """Turn a tool's input schema, possibly in a wild dialect, into JSON Schema with a root object.

    A schema that already is valid JSON Schema with `"type": "object"` at the root is returned as given
    (an equal deep copy). Otherwise only what is needed changes: dialect type names are mapped by
    `DIALECT_TYPES` (`dict`→`object`, `float`→`number`, `any`→no type, ...), `"optional": true` on a
    property is folded into the parent's `required`, `items` given as a list becomes `prefixItems`, and a
    missing root `"type": "object"` is added.

    Args:
        schema: The schema as found (a mapping; not modified).
        name: The tool's name, used in error messages.

    Returns:
        A new JSON Schema dict.

    Raises:
        SchemaError: The schema is not a mapping, uses an unknown type name, or its root cannot be an object.

    Example:
        ```python
        normalize_schema({"type": "dict", "properties": {"x": {"type": "float"}}})
        # {"type": "object", "properties": {"x": {"type": "number"}}}
        ```
    """
    where = f"tool {name!r}" if name else "schema"
    if not isinstance(schema, Mapping):
        got = type(schema).__name__
        raise SchemaError(f"{where}: input schema must be a JSON object (a mapping), got {got}")
    if is_standard_schema(schema):
        return copy.deepcopy(dict(schema))
    out = _node(schema, where, "#")
    if isinstance(out.get("required"), bool):  # a draft-3 flag on the root means nothing
        del out["required"]
    if "type" not in out:
        out = {"type": "object", **out}
    elif out["type"] != "object":
        raise SchemaError(
            f"{where}: the root of an input schema must be an object (the arguments), "
            f"got type {out['type']!r}"
        )
    try:
        jsonschema_rs.meta.validate(out)
    except jsonschema_rs.ValidationError as exc:
        raise SchemaError(f"{where}: not valid JSON Schema after normalisation: {exc.message}") from None
    return out


def _node(node: Any, where: str, path: str) -> dict[str, Any]:
    """Normalise one schema node (a new dict; the input is never modified)."""
    if isinstance(node, str):  # shorthand `"x": "string"` seen in hand-written tool lists
        node = {"type": node}
    if isinstance(node, bool):
        return {} if node else {"not": {}}
    if not isinstance(node, Mapping):
        raise SchemaError(f"{where}: schema at {path} must be an object, got {type(node).__name__}")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _ONE and isinstance(value, Mapping | str):
            out[key] = _node(value, where, f"{path}/{key}")
        elif key == "items" and isinstance(value, list):
            out["prefixItems"] = [_node(v, where, f"{path}/items/{i}") for i, v in enumerate(value)]
        elif key in _MANY and isinstance(value, list):
            out[key] = [_node(v, where, f"{path}/{key}/{i}") for i, v in enumerate(value)]
        elif key in _MAP and isinstance(value, Mapping):
            out[key] = {k: _node(v, where, f"{path}/{key}/{k}") for k, v in value.items()}
        else:  # `type` keeps its place here and is mapped below
            out[key] = copy.deepcopy(value)
    if "type" in node:
        _set_type(out, node["type"], where, path)
    if isinstance(out.get("properties"), dict):
        _fold_optional(out)
    if "enum" in out and isinstance(out["enum"], list):
        _widen_for_enum(out)
    return out


def _set_type(out: dict[str, Any], raw: Any, where: str, path: str) -> None:
    """Map `raw` (a name or a list of names) into `out["type"]`, adding `items` for generics."""
    names = raw if isinstance(raw, list) else [raw]
    mapped: list[str] = []
    for item in names:
        if item is None:
            item = "null"
        if not isinstance(item, str):
            raise SchemaError(f"{where}: type at {path} must be a string or a list of strings, got {item!r}")
        generic = _GENERIC.match(item.strip())
        if generic:
            out.setdefault("items", _node({"type": generic.group(2).strip()}, where, f"{path}/items"))
            mapped.append("array")
            continue
        key = item.strip().lower()
        if key not in DIALECT_TYPES:
            known = ", ".join(sorted(k for k in DIALECT_TYPES if k))
            raise SchemaError(f"{where}: unknown type {item!r} at {path}; known type names: {known}")
        target = DIALECT_TYPES[key]
        if target is None:  # "any" anywhere in a union means any value
            del out["type"]
            return
        if target not in mapped:
            mapped.append(target)
    if mapped:
        out["type"] = mapped[0] if len(mapped) == 1 else mapped


def _fold_optional(out: dict[str, Any]) -> None:
    """Fold `"optional"` / `"required"` flags on properties into the parent's `required` list."""
    props: dict[str, Any] = out["properties"]
    required = list(out["required"]) if isinstance(out.get("required"), list) else []
    changed = False
    for prop, sub in props.items():
        flags = [("optional", True), ("required", False)]
        for key, means_optional in flags:
            if isinstance(sub, dict) and isinstance(sub.get(key), bool):
                optional = sub.pop(key) == means_optional
                changed = True
                if optional and prop in required:
                    required.remove(prop)
                elif not optional and prop not in required:
                    required.append(prop)
    if isinstance(out.get("optional"), list):  # ToolBench: `optional: [names]` next to `required`
        optional_names = set(out.pop("optional"))
        required = [r for r in required if r not in optional_names]
        changed = True
    if changed:
        if required:
            out["required"] = required
        else:
            out.pop("required", None)


def _widen_for_enum(out: dict[str, Any]) -> None:
    """Widen `type` so every `enum` value is allowed (BFCL: `boolean` with `["True", "dontcare"]`)."""
    declared = out.get("type")
    if declared is None:
        return
    types = list(declared) if isinstance(declared, list) else [declared]
    for value in out["enum"]:
        kind = _PY_TYPE_OF.get(type(value))
        if kind is None or kind in types or (kind == "integer" and "number" in types):
            continue
        types.append(kind)
    out["type"] = types[0] if len(types) == 1 else types


def _error_path(parts: Iterable[str | int]) -> str:
    """A JSON path such as `$.items[0].name` for an error's instance location."""
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def compile_validator(schema: Mapping[str, Any], *, name: str | None = None) -> Callable[[Any], None]:
    """Compile a JSON Schema into `check(arguments)`, raising `ArgumentsError` that lists each error.

    Remote `$ref`s are never fetched (offline): a tool's schema must be self-contained.

    Args:
        schema: A JSON Schema (normalise wild schemas with `normalize_schema` first).
        name: The tool's name, used in error messages.

    Returns:
        `check(arguments)`, returning None when the arguments are valid.

    Raises:
        SchemaError: The schema itself is invalid (bad keyword value, unresolvable `$ref`, bad regex).

    Example:
        ```python
        check = compile_validator({"type": "object", "properties": {"a": {"type": "integer"}}})
        check({"a": "x"})  # ArgumentsError: $.a: "x" is not of type "integer"
        ```
    """
    where = f"tool {name!r}" if name else "schema"
    try:
        jsonschema_rs.meta.validate(_as_dict(schema))
        validator = jsonschema_rs.validator_for(_as_dict(schema), offline=True)
    except jsonschema_rs.ValidationError as exc:
        raise SchemaError(f"{where}: invalid input schema: {exc.message}") from None
    except jsonschema_rs.ReferencingError as exc:
        msg = f"{where}: input schema has a $ref that cannot be resolved offline: {exc}"
        raise SchemaError(msg) from None

    def check(arguments: Any) -> None:
        if validator.is_valid(arguments):
            return
        errors = [f"{_error_path(e.instance_path)}: {e.message}" for e in validator.iter_errors(arguments)]
        raise ArgumentsError(errors, tool=name)

    return check
