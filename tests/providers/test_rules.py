"""One test per documented provider rule: the checker catches a breaking entry, and the exporter obeys the rule."""

from __future__ import annotations

from typing import Any

import pytest

from toolhall import Tool
from toolhall.providers import export

from ._rules import RULES, Rule, params

# A tool built to tempt every rule: an illegal name, a free-form map, optional and defaulted fields, a
# non-string enum, const/oneOf/$ref/$defs, a type union with null, an unsupported format, an untyped array.
AWKWARD_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "title": "Awkward",
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
    "properties": {
        "id": {"type": "string", "format": "uuid", "minLength": 3},
        "mode": {"oneOf": [{"const": "fast"}, {"const": "slow"}]},
        "level": {"type": "integer", "enum": [1, 2, 3], "default": 1},
        "where": {"$ref": "#/$defs/point"},
        "link": {"type": ["object", "null"]},
        "meta": {"type": "object", "additionalProperties": {"type": "string"}},
        "tags": {"type": "array"},
        "site": {"type": "string", "format": "uri"},
        "nested": {"type": "object", "properties": {"deep": {"type": "boolean"}}},
    },
    "required": ["id"],
    "additionalProperties": False,
}
STRICT_ABLE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Where.", "minLength": 1},
        "limit": {"type": "integer", "default": 10},
        "kind": {"type": "string", "enum": ["a", "b"]},
        "point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                  "required": ["x"]},
        "when": {"type": "string", "format": "date-time"},
    },
    "required": ["path"],
}


def _tools() -> list[Tool]:
    return [
        Tool.from_schema("chain:status", "Awkward.", AWKWARD_SCHEMA, lambda **kw: kw),
        Tool.from_schema("3d.render", "Starts with a digit.", STRICT_ABLE, lambda **kw: kw),
        Tool.from_schema("math.factorial", "No parameters.", {"type": "object", "properties": {}},
                         lambda **kw: kw),
    ]


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_checker_flags_an_entry_that_breaks_it(rule: Rule) -> None:
    """The rule's checker reports its `bad` example, so the corpus run could fail on that rule."""
    assert rule.check(rule.bad)


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_exporter_obeys_rule_on_awkward_tools(rule: Rule) -> None:
    """Every format the rule covers exports the awkward tools without breaking it (strict and not)."""
    for fmt in rule.formats:
        for strict in (False, True):
            for entry in export(_tools(), fmt, strict=strict):  # type: ignore[arg-type]
                if rule.strict_only and not (entry.get("strict") or entry.get("function", {}).get("strict")):
                    continue
                assert rule.check(entry) == [], (fmt, strict, entry)


def test_strict_rules_are_exercised_by_a_strict_able_tool() -> None:
    """A tool strict mode can express is exported strict, so the strict rules really run on it."""
    chat = export(_tools(), "openai", strict=True)
    responses = export(_tools(), "openai-responses", strict=True)
    assert [e["function"]["strict"] for e in chat] == [False, True, True]
    assert [e["strict"] for e in responses] == [False, True, True]


def test_strict_makes_optional_properties_required_and_nullable() -> None:
    """Strict mode lists every property in required; optional ones accept null, required ones do not."""
    [entry] = export([_tools()[1]], "openai", strict=True)
    p = params(entry)
    assert p is not None
    assert p["required"] == list(STRICT_ABLE["properties"])
    assert p["additionalProperties"] is False
    assert p["properties"]["path"]["type"] == "string"
    assert p["properties"]["limit"]["type"] == ["integer", "null"]
    assert p["properties"]["kind"]["enum"] == ["a", "b", None]
    point = p["properties"]["point"]
    assert point["type"] == ["object", "null"]
    assert point["required"] == ["x", "y"] and point["properties"]["y"]["type"] == ["number", "null"]
    assert point["additionalProperties"] is False


def test_strict_moves_unsupported_constraints_into_descriptions() -> None:
    """`minLength` and `default` are not strict keywords: they survive as text in the description."""
    [entry] = export([_tools()[1]], "openai-responses", strict=True)
    props = entry["parameters"]["properties"]
    assert "minLength" not in props["path"] and "minLength: 1" in props["path"]["description"]
    assert props["path"]["description"].startswith("Where.")
    assert "default" not in props["limit"] and "default: 10" in props["limit"]["description"]
    assert props["when"]["format"] == "date-time"


def test_strict_leaves_a_free_form_tool_unchanged_but_not_strict() -> None:
    """A tool with a free-form object is exported `strict: false` with exactly its non-strict parameters."""
    awkward = _tools()[0]
    [strict_entry] = export([awkward], "openai", strict=True)
    [plain_entry] = export([awkward], "openai")
    assert strict_entry["function"]["strict"] is False
    assert strict_entry["function"]["parameters"] == plain_entry["function"]["parameters"]
    assert "strict" not in plain_entry["function"]


def test_gemini_rewrites_the_awkward_schema_into_the_openapi_subset() -> None:
    """Gemini gets inlined refs, const as enum, null as nullable, free-form objects as JSON text, notes for the rest."""
    [entry] = export(_tools(), "gemini")[:1]
    p = entry["parameters"]
    props = p["properties"]
    assert p["type"] == "OBJECT" and p["required"] == ["id"]
    assert props["where"] == {"type": "OBJECT", "properties": {"x": {"type": "NUMBER"}}, "required": ["x"]}
    assert props["mode"]["anyOf"] == [{"type": "STRING", "enum": ["fast"]}, {"type": "STRING", "enum": ["slow"]}]
    assert props["level"]["type"] == "INTEGER" and "enum" not in props["level"]
    assert "allowed values: [1, 2, 3]" in props["level"]["description"]
    assert props["link"]["type"] == "STRING" and props["link"]["nullable"] is True
    assert props["meta"]["type"] == "STRING" and "JSON object" in props["meta"]["description"]
    assert props["tags"]["items"]["type"] == "STRING"
    assert "format" not in props["site"] and "format: uri" in props["site"]["description"]
    assert "format" not in props["id"] and "format: uuid" in props["id"]["description"]


def test_gemini_omits_parameters_for_a_tool_without_arguments() -> None:
    """An empty OBJECT is refused by Gemini, so a tool without parameters has none declared."""
    entry = export(_tools(), "gemini")[2]
    assert entry == {"name": "math_factorial", "description": "No parameters."}


def test_gemini_name_gets_a_leading_underscore_when_it_starts_with_a_digit() -> None:
    """Gemini names must start with a letter or underscore."""
    assert export(_tools(), "gemini")[1]["name"] == "_3d_render"
    assert export(_tools(), "openai")[1]["function"]["name"] == "3d_render"


def test_mcp_keeps_input_schema_verbatim_and_maps_annotations_to_hints() -> None:
    """The MCP export carries the schema exactly as given, and every hint explicitly."""
    tool = Tool.from_schema("chain:status", "Awkward.", AWKWARD_SCHEMA, lambda **kw: kw, read_only=True,
                            title="Chain status")
    [entry] = export([tool], "mcp")
    assert entry["inputSchema"] == AWKWARD_SCHEMA
    assert entry["name"] == "chain_status" and entry["title"] == "Chain status"
    ann = tool.annotations
    assert entry["annotations"] == {"title": "Chain status", "readOnlyHint": True,
                                    "destructiveHint": ann.destructive, "idempotentHint": ann.idempotent,
                                    "openWorldHint": True}


def test_json_format_keeps_own_names_and_full_definition() -> None:
    """The json format is toolhall's own: own name, input and output schema, annotations."""
    [entry] = export(_tools()[:1], "json")
    assert entry["name"] == "chain:status"
    assert entry["input_schema"] == AWKWARD_SCHEMA and entry["output_schema"] is None
    assert entry["annotations"]["destructive"] is True


def test_anthropic_merges_a_root_union_into_one_object() -> None:
    """Anthropic refuses a top-level oneOf, so its object branches are merged (only common fields required)."""
    schema = {"type": "object", "oneOf": [
        {"properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
        {"properties": {"a": {"type": "string"}, "c": {"type": "boolean"}}, "required": ["a"]}]}
    [entry] = export([Tool.from_schema("u", "Union.", schema, lambda **kw: kw)], "anthropic")
    s = entry["input_schema"]
    assert "oneOf" not in s and set(s["properties"]) == {"a", "b", "c"} and s["required"] == ["a"]
