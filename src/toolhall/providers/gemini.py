"""Google Gemini: FunctionDeclarations in the OpenAPI subset, `functionCall` parts in, `functionResponse` parts out.

Gemini's `parameters` take a select subset of OpenAPI 3.0 (google-genai `types.Schema`); what it lacks is
rewritten as `docs/schemas.md` documents: `$ref`s inlined, `const` → one-value `enum`, `oneOf` → `anyOf`,
`null` in a type → `nullable`, non-string enums and unsupported constraints moved into the description,
`additionalProperties`, `$schema`, `title`, `default` dropped. Gemini refuses an OBJECT without properties,
so a free-form object is declared as a STRING holding JSON, and `parse_tool_calls(..., toolbox=...)`
decodes it back.

Example:
    ```python
    from toolhall.providers import gemini

    config = {"tools": [{"functionDeclarations": toolbox.schemas("gemini")}]}
    response = client.models.generate_content(model=..., contents=contents, config=config)
    results = await toolbox.call_many(gemini.parse_tool_calls(response, toolbox=toolbox))
    contents += [response.candidates[0].content, {"role": "user", "parts": gemini.result_messages(results)}]
    ```
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import ParseError
from .._result import Image, ToolCall, ToolResult
from ._common import ToolLookup, as_data, as_results, result_text, tool_of
from ._names import exported_names
from ._transform import SchemaTransformer, add_note, flatten_root, inline_refs, json_text, types_of

if TYPE_CHECKING:
    from .._tool import Tool

__all__ = ["GEMINI_FORMATS", "GEMINI_KEYWORDS", "export_tool", "parameters", "parse_tool_calls",
           "result_messages"]

GEMINI_KEYWORDS = frozenset({
    "type", "format", "description", "nullable", "enum", "items", "minItems", "maxItems", "properties",
    "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "minimum", "maximum",
    "anyOf", "propertyOrdering", "example",
})
"""The Schema fields declarations use (google-genai `types.Schema`, less `title`/`default`/`$ref`/`$defs`)."""
GEMINI_FORMATS: Mapping[str, frozenset[str]] = {
    "STRING": frozenset({"enum", "date-time"}),
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
}
"""Formats Gemini accepts per type; any other moves into the description."""
_ANY_NOTE = "any JSON value"
_JSON_NOTE = "a JSON object, as text"


def parameters(tool: Tool) -> dict[str, Any] | None:
    """The tool's `parameters` in Gemini's OpenAPI subset; None for a tool without parameters."""

    def cycle(ref: str) -> dict[str, Any]:
        return {"description": f"recursive {ref.rsplit('/', 1)[-1]}"}  # becomes a free-form value below

    schema = flatten_root(inline_refs(tool.input_schema, cycle))
    if not schema.get("properties"):
        return None  # an empty OBJECT is a 400 ("should be non-empty for OBJECT type"): omit parameters
    out: dict[str, Any] = _Gemini().walk(schema)
    return out


def export_tool(tool: Tool, name: str, *, strict: bool = False) -> dict[str, Any]:
    """One tool as a FunctionDeclaration `{name, description, parameters}` (`strict` has no Gemini meaning)."""
    out: dict[str, Any] = {"name": name, "description": tool.description}
    params = parameters(tool)
    if params is not None:
        out["parameters"] = params
    return out


class _Gemini(SchemaTransformer):
    def transform(self, node: dict[str, Any], path: str) -> dict[str, Any]:
        node = _merge_all_of(node)
        if "oneOf" in node:
            node["anyOf"] = node.pop("anyOf", []) + node.pop("oneOf")
        out: dict[str, Any] = {}
        notes: list[str] = []
        for key, value in node.items():
            if key == "const":
                out["enum"] = [value]
            elif key in ("default", "examples", "multipleOf", "exclusiveMinimum", "exclusiveMaximum",
                         "uniqueItems"):
                notes.append(f"{key}: {json_text(value)}")
            elif key in GEMINI_KEYWORDS and key != "type":
                out[key] = value
        _type(out, types_of(node), notes)
        _enum(out, notes)
        _shape(out, notes)
        for note in notes:
            add_note(out, note)
        return out


def _merge_all_of(node: dict[str, Any]) -> dict[str, Any]:
    branches = node.pop("allOf", None)
    if not isinstance(branches, list):
        return node
    for branch in branches:
        if isinstance(branch, Mapping):
            for key, value in branch.items():
                if key == "properties":
                    node["properties"] = {**node.get("properties", {}), **value}
                elif key == "required":
                    node["required"] = [*node.get("required", []), *value]
                else:
                    node.setdefault(key, value)
    return node


def _type(out: dict[str, Any], types: list[str], notes: list[str]) -> None:
    """Set the upper-case `type`; `null` becomes `nullable`, several types an `anyOf`."""
    anyof = out.get("anyOf")
    if isinstance(anyof, list):  # anyOf[X, null] → X + nullable
        kept = [b for b in anyof if not (isinstance(b, Mapping) and b.get("type") == "NULL")]
        if len(kept) < len(anyof):
            out["nullable"] = True
        if len(kept) == 1 and isinstance(kept[0], Mapping):
            del out["anyOf"]
            for key, value in kept[0].items():
                out.setdefault(key, value)
        else:
            out["anyOf"] = kept
    if "null" in types:
        out["nullable"] = True
    real = [t.upper() for t in types if t != "null"]
    if len(real) == 1:
        out["type"] = real[0]
    elif len(real) > 1:
        out["anyOf"] = [{"type": t} for t in real]
    elif types == ["null"]:
        out["type"] = "NULL"


def _enum(out: dict[str, Any], notes: list[str]) -> None:
    """Gemini enums are strings only (and their type STRING); other values go to the description."""
    values = out.get("enum")
    if not isinstance(values, list):
        return
    if values and all(isinstance(v, str) for v in values):
        out.pop("anyOf", None)
        out["type"] = "STRING"
        return
    del out["enum"]
    strings = [v for v in values if isinstance(v, str)]
    if values and out.get("type") == "STRING" and strings:
        out["enum"] = strings
    notes.append(f"allowed values: {json_text(values)}")


def _shape(out: dict[str, Any], notes: list[str]) -> None:
    """What Gemini insists on per type: typed nodes, OBJECTs with properties, ARRAYs with items."""
    kind = out.get("type")
    if kind is None and "anyOf" not in out:
        kind = "OBJECT" if out.get("properties") else "ARRAY" if "items" in out else None
        if kind is None:  # an untyped value: declared as text (Gemini wants a type everywhere)
            out["type"] = "STRING"
            notes.append(_ANY_NOTE)
            return
        out["type"] = kind
    if kind == "OBJECT" and not out.get("properties"):
        out["type"] = "STRING"
        kind = "STRING"
        notes.append(_JSON_NOTE)
    if kind != "OBJECT":
        out.pop("properties", None)
        out.pop("required", None)
        out.pop("minProperties", None)
        out.pop("maxProperties", None)
    else:
        props = out["properties"]
        required = [r for r in out.get("required", []) if r in props]
        if required:
            out["required"] = list(dict.fromkeys(required))
        else:
            out.pop("required", None)
    if kind == "ARRAY" and not isinstance(out.get("items"), Mapping):
        out["items"] = {"type": "STRING", "description": _ANY_NOTE}
    if kind != "ARRAY":
        for key in ("items", "minItems", "maxItems"):
            out.pop(key, None)
    fmt = out.get("format")
    if fmt is not None and fmt not in GEMINI_FORMATS.get(str(kind), frozenset()):
        del out["format"]
        notes.append(f"format: {fmt}")


def parse_tool_calls(response: Any, toolbox: ToolLookup | None = None) -> list[ToolCall]:
    """The `functionCall` parts of a response (dict or SDK object), a `Content`, or a list of parts.

    Reads the first candidate. With `toolbox`, names come back as the tools' own and free-form objects
    sent as JSON text (see the module note) are decoded.

    Raises:
        ParseError: Not a Gemini response, or a function call without a name.
    """
    data = as_data(response)
    if isinstance(data, Mapping) and "candidates" in data:
        candidates = data["candidates"] or []
        data = (candidates[0].get("content") or {}) if candidates else {}
    if isinstance(data, Mapping) and "parts" in data:
        data = data["parts"] or []
    elif isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, list | tuple):
        raise ParseError("not a Gemini response: expected a response with candidates, a Content, or parts")
    calls = []
    for part in data:
        part = as_data(part)
        fc = part.get("functionCall", part.get("function_call")) if isinstance(part, Mapping) else None
        if not isinstance(fc, Mapping):
            continue
        name = fc.get("name")
        if not isinstance(name, str) or not name:
            raise ParseError(f"functionCall without a name: {dict(fc)!r}")
        args = fc.get("args")
        calls.append(_own(ToolCall(name, args if isinstance(args, dict) else None, id=fc.get("id")), toolbox))
    return calls


def _own(call: ToolCall, toolbox: ToolLookup | None) -> ToolCall:
    tool = tool_of(call.name, toolbox, "gemini") if toolbox is not None else None
    if tool is None:
        return call
    return ToolCall(tool.name, _revive(call.arguments, tool.input_schema), id=call.id)


def _revive(value: Any, schema: Any) -> Any:
    """Decode JSON text sent where the tool's schema wants an object or array (and no string)."""
    if not isinstance(schema, Mapping):
        return value
    types = types_of(schema)
    if isinstance(value, str) and "string" not in types and {"object", "array"} & set(types):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
        props = schema["properties"]
        return {k: _revive(v, props.get(k)) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_revive(v, schema["items"]) for v in value]
    return value


def result_messages(
    results: Sequence[ToolResult] | ToolResult,
    *,
    toolbox: ToolLookup | None = None,
    calls: Sequence[ToolCall] | None = None,
) -> list[dict[str, Any]]:
    """`functionResponse` parts, one per result, to send back as `{"role": "user", "parts": [...]}`.

    Args:
        results: The results, in call order.
        toolbox: Used to name each response as the tool was exported (else the name is mapped alone).
        calls: The parsed calls, whose ids (Gemini often sends none) are echoed instead of the results'.
    """
    items = as_results(results)
    names = [r.tool_name for r in items]
    if toolbox is not None:
        mapping = exported_names([t.name for t in toolbox], "gemini")
    else:
        mapping = exported_names(dict.fromkeys(names), "gemini")
    parts = []
    for i, result in enumerate(items):
        ident = calls[i].id if calls is not None and i < len(calls) else result.call_id
        parts.append({"functionResponse": _response(result, mapping.get(result.tool_name, result.tool_name),
                                                    ident)})
    return parts


def _response(result: ToolResult, name: str, ident: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if ident:
        out["id"] = ident
    if result.ok:
        data = result.data if result.data is not None else result.output
        out["response"] = {"output": data}
    else:
        out["response"] = {"error": result_text(result)}
    images = [p for p in result.content if isinstance(p, Image)]
    if images:  # multimodal function responses (Gemini 3)
        out["parts"] = [{"inlineData": {"mimeType": p.mime_type, "data": p.base64}} for p in images]
    return out
