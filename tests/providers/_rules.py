"""A manifest of each provider's documented rules for tool definitions, each with a checker.

Written from the providers' documents (cited per rule), not from the exporters: a checker returns the
violations it finds in one exported entry. `tests/providers/test_rules.py` proves each checker can fail (on a
`bad` entry) and that the exporter satisfies it; `test_corpus.py` runs every rule over every corpus tool.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Check = Callable[[dict[str, Any]], list[str]]


@dataclass(frozen=True)
class Rule:
    """One documented requirement on exported tool definitions."""

    id: str
    formats: tuple[str, ...]
    text: str
    source: str
    check: Check
    bad: dict[str, Any]
    """An entry breaking the rule (the checker must flag it)."""
    strict_only: bool = False


def nodes(schema: Any, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node below (and including) `schema`, with its path."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"):
        if isinstance(schema.get(key), dict):
            yield from nodes(schema[key], f"{path}/{key}")
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for i, sub in enumerate(schema.get(key) or []):
            yield from nodes(sub, f"{path}/{key}/{i}")
    for key in ("properties", "$defs", "definitions", "patternProperties"):
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                yield from nodes(sub, f"{path}/{key}/{name}")


def _types(node: dict[str, Any]) -> list[str]:
    t = node.get("type")
    return [t] if isinstance(t, str) else list(t) if isinstance(t, list) else []


def params(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The parameters schema of an exported entry, whatever the format."""
    if "function" in entry:
        return entry["function"].get("parameters")
    for key in ("parameters", "input_schema", "inputSchema"):
        if key in entry:
            return entry[key]  # type: ignore[no-any-return]
    return None


def name_of(entry: dict[str, Any]) -> str:
    """The exported name of an entry."""
    return entry["function"]["name"] if "function" in entry else entry["name"]  # type: ignore[no-any-return]


def is_strict(entry: dict[str, Any]) -> bool:
    """Whether an entry asks for strict mode."""
    return bool(entry["function"].get("strict") if "function" in entry else entry.get("strict"))


def _name(pattern: str) -> Check:
    regex = re.compile(pattern)
    return lambda e: [] if regex.fullmatch(name_of(e)) else [f"name {name_of(e)!r} does not match {pattern}"]


def _root_object(entry: dict[str, Any]) -> list[str]:
    p = params(entry)
    if p is None:
        return []
    out = [] if p.get("type") == "object" else [f"root type is {p.get('type')!r}, not object"]
    return out + [f"root has {k}" for k in ("anyOf", "oneOf", "allOf") if k in p]


def _array_items(entry: dict[str, Any]) -> list[str]:
    return [f"{path}: array without items" for path, n in nodes(params(entry))
            if ("array" in _types(n) or "ARRAY" in _types(n)) and not isinstance(n.get("items"), dict)]


def _strict_objects(entry: dict[str, Any]) -> list[str]:
    out = []
    for path, n in nodes(params(entry)):
        if "object" in _types(n):
            props = n.get("properties")
            if not isinstance(props, dict):
                out.append(f"{path}: object without properties")
                continue
            if n.get("additionalProperties") is not False:
                out.append(f"{path}: additionalProperties is not false")
            if sorted(n.get("required", [])) != sorted(props):
                out.append(f"{path}: not every property is required")
    return out


STRICT_KEYWORDS = {"type", "description", "properties", "required", "additionalProperties", "items", "enum",
                   "const", "anyOf", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
                   "exclusiveMinimum", "minItems", "maxItems", "$defs", "$ref"}
STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}


def _strict_keywords(entry: dict[str, Any]) -> list[str]:
    out = []
    for path, n in nodes(params(entry)):
        out += [f"{path}: keyword {k!r} not supported in strict mode" for k in n if k not in STRICT_KEYWORDS]
        if "format" in n and n["format"] not in STRICT_FORMATS:
            out.append(f"{path}: format {n['format']!r} not supported")
        if not _types(n) and not any(k in n for k in ("anyOf", "enum", "const", "$ref")):
            out.append(f"{path}: untyped value")
    return out


def _strict_limits(entry: dict[str, Any]) -> list[str]:
    out = []
    all_nodes = list(nodes(params(entry)))
    props = sum(len(n.get("properties") or {}) for _, n in all_nodes)
    if props > 5000:
        out.append(f"{props} properties > 5000")
    for path, n in all_nodes:
        if path.count("/properties/") > 10:
            out.append(f"{path}: nested deeper than 10")
        if len(n.get("enum") or []) > 1000:
            out.append(f"{path}: more than 1000 enum values")
    return out


def _responses_strict_explicit(entry: dict[str, Any]) -> list[str]:
    return [] if isinstance(entry.get("strict"), bool) else ["Responses tool without an explicit bool strict"]


GEMINI_KEYWORDS = {"type", "format", "description", "nullable", "enum", "items", "minItems", "maxItems",
                   "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern",
                   "minimum", "maximum", "anyOf", "propertyOrdering", "example"}
GEMINI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL",
                "string", "number", "integer", "boolean", "array", "object", "null"}
GEMINI_FORMATS = {"STRING": {"enum", "date-time"}, "NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}}


def _gemini_keywords(entry: dict[str, Any]) -> list[str]:
    return [f"{path}: keyword {k!r} outside Gemini's OpenAPI subset"
            for path, n in nodes(params(entry)) for k in n if k not in GEMINI_KEYWORDS]


def _gemini_types(entry: dict[str, Any]) -> list[str]:
    out = []
    for path, n in nodes(params(entry)):
        t = n.get("type")
        if t is None and "anyOf" not in n:
            out.append(f"{path}: no type")
        elif t is not None and (not isinstance(t, str) or t not in GEMINI_TYPES):
            out.append(f"{path}: type {t!r} is not one Gemini type")
    return out


def _gemini_enums(entry: dict[str, Any]) -> list[str]:
    out = []
    for path, n in nodes(params(entry)):
        if "enum" in n:
            if not all(isinstance(v, str) for v in n["enum"]):
                out.append(f"{path}: non-string enum value")
            if str(n.get("type")).upper() != "STRING":
                out.append(f"{path}: enum on type {n.get('type')!r}")
    return out


def _gemini_objects(entry: dict[str, Any]) -> list[str]:
    out = []
    for path, n in nodes(params(entry)):
        is_obj = str(n.get("type")).upper() == "OBJECT"
        if is_obj and not n.get("properties"):
            out.append(f"{path}: OBJECT with empty properties")
        if not is_obj and ("properties" in n or "required" in n):
            out.append(f"{path}: properties/required only allowed for OBJECT type")
        missing = [r for r in n.get("required", []) if r not in (n.get("properties") or {})]
        if missing:
            out.append(f"{path}: required names missing from properties: {missing}")
    return out


def _gemini_formats(entry: dict[str, Any]) -> list[str]:
    return [f"{path}: format {n['format']!r} not allowed for {n.get('type')!r}" for path, n in nodes(params(entry))
            if "format" in n and n["format"] not in GEMINI_FORMATS.get(str(n.get("type")).upper(), set())]


def _mcp_output_object(entry: dict[str, Any]) -> list[str]:
    out = entry.get("outputSchema")
    return [] if out is None or out.get("type") == "object" else ["outputSchema root is not type object"]


def _mcp_hints(entry: dict[str, Any]) -> list[str]:
    ann = entry.get("annotations") or {}
    hints = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
    return [f"annotation {h} missing or not a bool" for h in hints if not isinstance(ann.get(h), bool)]


_OAI = ("openai", "openai-responses")
_OAI_DOC = "OpenAI API reference, FunctionDefinition / FunctionTool"
_STRICT_DOC = "OpenAI guide, Structured Outputs: Supported schemas"
_GEM_DOC = "Gemini API, FunctionDeclaration / Schema (OpenAPI 3.0 subset); google-genai types.Schema"

RULES: tuple[Rule, ...] = (
    Rule("openai.name", _OAI, "function names match ^[a-zA-Z0-9_-]{1,64}$", _OAI_DOC,
         _name(r"[a-zA-Z0-9_-]{1,64}"), {"type": "function", "function": {"name": "math.sum", "parameters": {}}}),
    Rule("openai.root-object", _OAI, "parameters are an object schema, not a union", _OAI_DOC, _root_object,
         {"type": "function", "name": "f", "parameters": {"anyOf": [{"type": "object"}]}, "strict": False}),
    Rule("openai.array-items", _OAI, "every array schema has items (a 400 otherwise)", _OAI_DOC, _array_items,
         {"type": "function", "name": "f", "strict": False,
          "parameters": {"type": "object", "properties": {"a": {"type": "array"}}}}),
    Rule("openai-responses.strict-explicit", ("openai-responses",),
         "strict is given on every Responses tool (the API defaults it to true)",
         "OpenAI API reference, Responses FunctionTool.strict", _responses_strict_explicit,
         {"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}),
    Rule("openai.strict.objects", _OAI, "strict: every object lists every property in required and has "
         "additionalProperties: false (optional fields are nullable)", _STRICT_DOC, _strict_objects,
         {"type": "function", "name": "f", "strict": True,
          "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}, strict_only=True),
    Rule("openai.strict.keywords", _OAI, "strict: only supported keywords and string formats; no untyped values",
         _STRICT_DOC, _strict_keywords,
         {"type": "function", "name": "f", "strict": True, "parameters": {
             "type": "object", "properties": {"a": {"type": "string", "minLength": 1, "default": "x"}},
             "required": ["a"], "additionalProperties": False}}, strict_only=True),
    Rule("openai.strict.limits", _OAI, "strict: at most 5,000 properties, 10 levels of nesting, 1,000 enum values",
         _STRICT_DOC, _strict_limits,
         {"type": "function", "name": "f", "strict": True, "parameters": {
             "type": "object", "properties": {"a": {"type": "integer", "enum": list(range(1001))}},
             "required": ["a"], "additionalProperties": False}}, strict_only=True),
    Rule("anthropic.name", ("anthropic",), "tool names match ^[a-zA-Z0-9_-]{1,64}$",
         "Anthropic API reference, Messages tools[].name", _name(r"[a-zA-Z0-9_-]{1,64}"),
         {"name": "chain:status", "input_schema": {"type": "object"}}),
    Rule("anthropic.root-object", ("anthropic",), "input_schema is type object with no top-level oneOf/allOf/anyOf",
         "Anthropic docs, tool use: input_schema", _root_object,
         {"name": "f", "input_schema": {"type": "object", "oneOf": [{"type": "object"}]}}),
    Rule("gemini.name", ("gemini",), "names start with a letter or underscore; a-z A-Z 0-9 _ -, at most 64",
         _GEM_DOC, _name(r"[A-Za-z_][A-Za-z0-9_-]{0,63}"), {"name": "3d_render"}),
    Rule("gemini.keywords", ("gemini",), "only the OpenAPI subset: no $ref, $defs, additionalProperties, $schema, "
         "const, oneOf, title, default", _GEM_DOC, _gemini_keywords,
         {"name": "f", "parameters": {"type": "OBJECT", "additionalProperties": False,
                                      "properties": {"a": {"const": "x"}}}}),
    Rule("gemini.types", ("gemini",), "every schema has one Gemini type (or anyOf); no type lists",
         _GEM_DOC, _gemini_types,
         {"name": "f", "parameters": {"type": "OBJECT", "properties": {"a": {"type": ["string", "null"]}}}}),
    Rule("gemini.string-enums", ("gemini",), "enum values are strings, on STRING schemas", _GEM_DOC, _gemini_enums,
         {"name": "f", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "INTEGER", "enum": [1, 2]}}}}),
    Rule("gemini.objects", ("gemini",), "OBJECT schemas have non-empty properties; properties/required only on "
         "OBJECT; required names exist", "Gemini API 400s: 'should be non-empty for OBJECT type', "
         "'only allowed for OBJECT type'", _gemini_objects,
         {"name": "f", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "OBJECT"}}}}),
    Rule("gemini.array-items", ("gemini",), "ARRAY schemas have items", _GEM_DOC, _array_items,
         {"name": "f", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "ARRAY"}}}}),
    Rule("gemini.formats", ("gemini",), "format only as Gemini supports it per type", _GEM_DOC, _gemini_formats,
         {"name": "f", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "STRING", "format": "uuid"}}}}),
    Rule("gemini.root-object", ("gemini",), "parameters, when given, are an OBJECT", _GEM_DOC,
         lambda e: [] if e.get("parameters") is None or e["parameters"].get("type") in ("OBJECT", "object")
         else ["parameters are not an OBJECT"], {"name": "f", "parameters": {"type": "STRING"}}),
    Rule("mcp.name", ("mcp",), "names match ^[A-Za-z0-9._-]{1,128}$ (SEP-986)", "MCP spec 2025-11-25, Tool.name",
         _name(r"[A-Za-z0-9._-]{1,128}"), {"name": "chain:status", "inputSchema": {"type": "object"}}),
    Rule("mcp.output-object", ("mcp",), "outputSchema, when given, has root type object",
         "MCP spec 2025-11-25, Tool.outputSchema", _mcp_output_object,
         {"name": "f", "inputSchema": {"type": "object"}, "outputSchema": {"type": "integer"}}),
    Rule("mcp.hints", ("mcp",), "annotations carry the four hints as booleans",
         "MCP spec 2025-11-25, ToolAnnotations", _mcp_hints,
         {"name": "f", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": "yes"}}),
)


def rules_for(format: str, *, strict: bool) -> list[Rule]:  # noqa: A002
    """The rules an entry of `format` must satisfy."""
    return [r for r in RULES if format in r.formats and (strict or not r.strict_only)]


def violations(entry: dict[str, Any], format: str) -> list[str]:  # noqa: A002
    """Every rule violation of one exported entry (strict rules apply when the entry is strict)."""
    out = []
    for rule in rules_for(format, strict=format.startswith("openai") and is_strict(entry)):
        out += [f"[{rule.id}] {v}" for v in rule.check(entry)]
    return out
