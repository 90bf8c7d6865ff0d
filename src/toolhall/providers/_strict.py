"""OpenAI strict mode: rewrite a JSON Schema into the subset Structured Outputs accepts, or say it cannot.

Rules (OpenAI "Structured Outputs → Supported schemas"): the root is an object, not `anyOf`; every object has
`additionalProperties: false` and lists every property in `required` (optional ones become nullable);
supported keywords only. Constraints strict mode lacks but that only narrow values (`minLength`, `default`,
an unlisted `format`, ...) move into the description; shapes it cannot express (a free-form object, an
untyped value, `allOf`, `not`, recursion through `$ref`) make the tool non-strict instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._transform import SchemaTransformer, add_note, flatten_root, inline_refs, json_text, types_of

__all__ = ["NotStrictError", "STRICT_FORMATS", "STRICT_KEYWORDS", "strict_schema", "strip_strict_nulls"]

STRICT_KEYWORDS = frozenset({
    "type", "description", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "minItems", "maxItems",
})
"""Keywords a strict schema may use."""
STRICT_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
"""String formats strict mode supports."""
_TO_NOTE = ("minLength", "maxLength", "minProperties", "maxProperties", "uniqueItems", "default", "examples")
_NOT_EXPRESSIBLE = ("allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
                    "patternProperties", "unevaluatedProperties", "unevaluatedItems", "prefixItems",
                    "contains", "additionalItems")
_LOOKAROUND = re.compile(r"\(\?<?[=!]")
MAX_DEPTH = 10
MAX_PROPERTIES = 5000


class NotStrictError(Exception):
    """The schema cannot be expressed in strict mode; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The strict-mode form of `schema` (a tool's input schema), or `NotStrictError`."""

    def cycle(ref: str) -> dict[str, Any]:
        raise NotStrictError(f"recursive $ref {ref}")

    flat = inline_refs(schema, cycle)
    if any(isinstance(flat.get(k), list) for k in ("anyOf", "oneOf", "allOf")):
        raise NotStrictError("the root combines schemas (anyOf/oneOf/allOf)")
    flat = flatten_root(flat)
    transformer = _Strict()
    out: dict[str, Any] = transformer.walk(flat)
    if transformer.properties > MAX_PROPERTIES:
        raise NotStrictError(f"more than {MAX_PROPERTIES} properties")
    return out


class _Strict(SchemaTransformer):
    def __init__(self) -> None:
        self.properties = 0

    def transform(self, node: dict[str, Any], path: str) -> dict[str, Any]:
        if path.count("/properties/") > MAX_DEPTH:
            raise NotStrictError(f"nested deeper than {MAX_DEPTH} objects at {path}")
        for key in _NOT_EXPRESSIBLE:
            if key in node:
                raise NotStrictError(f"{key!r} at {path}")
        out: dict[str, Any] = {}
        notes: list[str] = []
        for key, value in node.items():
            if key == "oneOf":
                out["anyOf"] = value
            elif key in _TO_NOTE:
                notes.append(f"{key}: {json_text(value)}")
            elif key == "format" and value not in STRICT_FORMATS:
                notes.append(f"format: {value}")
            elif key == "pattern" and isinstance(value, str) and _LOOKAROUND.search(value):
                notes.append(f"pattern: {value}")
            elif key in STRICT_KEYWORDS:
                out[key] = value
        for note in notes:
            add_note(out, note)
        return self._shape(out, path)

    def _shape(self, node: dict[str, Any], path: str) -> dict[str, Any]:
        types = types_of(node)
        if not types and not any(k in node for k in ("anyOf", "enum", "const")):
            raise NotStrictError(f"untyped value (any JSON) at {path}")
        if "object" in types:
            self._object(node, path)
        if "array" in types and not isinstance(node.get("items"), Mapping):
            raise NotStrictError(f"array without an items schema at {path}")
        if "array" in types and node.get("items") == {}:
            raise NotStrictError(f"array of untyped items at {path}")
        real = [t for t in types if t != "null"]
        if len(real) > 1:  # one branch per type; keywords go to the branch they constrain
            return _split_types(node, types)
        return node

    def _object(self, node: dict[str, Any], path: str) -> None:
        props = node.get("properties")
        extra = node.get("additionalProperties", None)
        # At the root, `properties: {}` means "takes no arguments"; deeper it is BFCL's free-form `dict`.
        no_args = path == "#" and isinstance(props, Mapping) and extra is None
        if not isinstance(props, Mapping) or (not props and extra is not False and not no_args):
            raise NotStrictError(f"free-form object (no properties) at {path}")
        if extra not in (None, False):
            raise NotStrictError(f"object with additionalProperties at {path}")
        self.properties += len(props)
        required = set(node.get("required") or [])
        node["properties"] = {k: (v if k in required else _nullable(v)) for k, v in props.items()}
        node["required"] = list(props)
        node["additionalProperties"] = False


def _nullable(node: Any) -> Any:
    """The node, also accepting null (an optional property becomes a required, nullable one)."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if "anyOf" in out:
        branches = list(out["anyOf"])
        if not any(types_of(b) == ["null"] for b in branches if isinstance(b, Mapping)):
            branches.append({"type": "null"})
        out["anyOf"] = branches
        return out
    if "const" in out or ("enum" in out and "type" not in out):
        desc = out.pop("description", None)
        wrapped: dict[str, Any] = {"anyOf": [out, {"type": "null"}]}
        if desc is not None:
            wrapped["description"] = desc
        return wrapped
    types = types_of(out)
    if "null" not in types:
        out["type"] = [*types, "null"]
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


_PER_TYPE = {
    "object": ("properties", "required", "additionalProperties"),
    "array": ("items", "minItems", "maxItems"),
    "string": ("pattern", "format"),
    "number": ("multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"),
    "integer": ("multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"),
}
_PY = {"string": (str,), "boolean": (bool,), "null": (type(None),), "object": (dict,), "array": (list,)}


def _fits(value: Any, kind: str) -> bool:
    if kind in ("number", "integer"):
        return isinstance(value, int | float) and not isinstance(value, bool) and (
            kind == "number" or float(value).is_integer())
    return isinstance(value, _PY.get(kind, ()))


def _split_types(node: dict[str, Any], types: list[str]) -> dict[str, Any]:
    """`{"type": ["boolean", "string"], ...}` → `{"anyOf": [{"type": "boolean"}, {"type": "string", ...}]}`."""
    branches = []
    for kind in types:
        branch: dict[str, Any] = {"type": kind}
        for key in _PER_TYPE.get(kind, ()):
            if key in node:
                branch[key] = node[key]
        if isinstance(node.get("enum"), list):
            values = [v for v in node["enum"] if _fits(v, kind)]
            if not values:
                continue
            branch["enum"] = values
        branches.append(branch)
    out: dict[str, Any] = {"anyOf": branches}
    if "description" in node:
        out["description"] = node["description"]
    return out


def strip_strict_nulls(arguments: Any, schema: Mapping[str, Any]) -> Any:
    """Drop `null`s a strict-mode model sent for optional properties whose own schema does not allow null.

    Strict mode makes every property required, so "not given" arrives as `null`; the tool's own schema
    (which the arguments are validated against) wants the property left out instead.
    """
    props = schema.get("properties")
    if not isinstance(arguments, dict) or not isinstance(props, Mapping):
        return arguments
    required = set(schema.get("required") or [])
    out = {}
    for key, value in arguments.items():
        sub = props.get(key)
        if value is None and key not in required and isinstance(sub, Mapping) and not _allows_null(sub):
            continue
        out[key] = strip_strict_nulls(value, sub) if isinstance(sub, Mapping) else value
    return out


def _allows_null(node: Mapping[str, Any]) -> bool:
    if not node or "null" in types_of(node):
        return True
    if isinstance(node.get("enum"), list) and None in node["enum"]:
        return True
    branches = [b for k in ("anyOf", "oneOf") for b in (node.get(k) or []) if isinstance(b, Mapping)]
    return any(_allows_null(b) for b in branches) or ("type" not in node and not branches and "$ref" in node)
