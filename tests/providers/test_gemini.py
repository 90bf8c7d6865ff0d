"""Gemini: parsing `functionCall` parts (dicts and SDK objects) and writing `functionResponse` parts."""

from __future__ import annotations

import pytest

from toolhall import Image, ParseError, Tool, Toolbox, ToolCall, ToolResult
from toolhall.providers import export
from toolhall.providers import gemini as gem

SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}, "filter": {"type": "object"},
                                           "rows": {"type": "array", "items": {"type": "object"}}},
          "required": ["query"]}
RESPONSE = {"candidates": [{"content": {"role": "model", "parts": [
    {"text": "Searching."},
    {"functionCall": {"name": "db_search", "args": {"query": "q", "filter": '{"a": 1}', "rows": ['{"b": 2}']}}},
    {"functionCall": {"id": "fc_2", "name": "db_search", "args": {"query": "r"}}}]}}]}


def _box() -> Toolbox:
    return Toolbox([Tool.from_schema("db.search", "Search.", SCHEMA, lambda **kw: kw)])


def test_free_form_objects_are_declared_as_json_text() -> None:
    """Gemini refuses OBJECTs without properties: free-form ones are STRINGs holding JSON."""
    [entry] = export(list(_box()), "gemini")
    props = entry["parameters"]["properties"]
    assert props["filter"]["type"] == "STRING" and props["rows"]["items"]["type"] == "STRING"


def test_parse_with_toolbox_maps_names_and_decodes_json_text() -> None:
    """With a toolbox the own name returns and JSON text sent for a free-form object is decoded."""
    calls = gem.parse_tool_calls(RESPONSE, toolbox=_box())
    assert calls == [ToolCall("db.search", {"query": "q", "filter": {"a": 1}, "rows": [{"b": 2}]}),
                     ToolCall("db.search", {"query": "r"}, id="fc_2")]
    assert all(_box().call_sync(c).ok for c in calls)


def test_parse_sdk_response_object() -> None:
    """google-genai's GenerateContentResponse parses like its dict."""
    from google.genai import types

    sdk = types.GenerateContentResponse.model_validate(RESPONSE)
    assert gem.parse_tool_calls(sdk) == gem.parse_tool_calls(RESPONSE)


def test_parse_rejects_a_non_response() -> None:
    """A value that is no response, content or part list is a ParseError."""
    with pytest.raises(ParseError):
        gem.parse_tool_calls(7)


def test_result_messages_are_function_response_parts_under_exported_names() -> None:
    """Each result is a functionResponse named as the tool was exported, with output or error."""
    box = _box()
    ok = box.call_sync(ToolCall("db.search", {"query": "q"}))
    bad = box.call_sync(ToolCall("db.search", {}))
    parts = gem.result_messages([ok, bad], toolbox=box, calls=[ToolCall("db_search"), ToolCall("db_search", id="x")])
    assert parts[0] == {"functionResponse": {"name": "db_search", "response": {"output": {"query": "q"}}}}
    assert parts[1]["functionResponse"]["id"] == "x"
    assert "invalid_input" in parts[1]["functionResponse"]["response"]["error"]


def test_result_parts_accepted_by_the_sdk_type_with_images() -> None:
    """google-genai's Part accepts every part written, including images as inline data."""
    from google.genai import types

    result = ToolResult(ok=True, output="shot", content=(Image(data=b"png"),), tool_name="screen.shot")
    [part] = gem.result_messages(result)
    assert part["functionResponse"]["name"] == "screen_shot"
    types.Part.model_validate(part)
