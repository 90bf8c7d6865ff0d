"""OpenAI: parsing Chat Completions and Responses calls (dicts and SDK objects) and writing results back."""

from __future__ import annotations

import json

import pytest

from toolhall import Image, ParseError, Tool, Toolbox, ToolCall, ToolResult
from toolhall.providers import openai as oai


def _box() -> Toolbox:
    schema = {"type": "object", "properties": {"chain_id": {"type": "string"}, "limit": {"type": "integer"}},
              "required": ["chain_id"]}
    return Toolbox([Tool.from_schema("chain:status", "Status.", schema, lambda **kw: kw)])


CHAT = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{
    "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "chain_status",
                                                          "arguments": '{"chain_id": "c", "limit": null}'}},
        {"id": "call_2", "type": "function", "function": {"name": "other", "arguments": "{}"}}]}}]}
RESPONSES = {"id": "r", "object": "response", "created_at": 1, "model": "m", "status": "completed", "output": [
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "chain_status",
     "arguments": '{"chain_id": "c"}', "status": "completed"}],
    "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def test_parse_chat_completion_dict_keeps_order_ids_and_raw_arguments() -> None:
    """Without a toolbox the calls come back as sent: exported names, JSON text arguments, provider ids."""
    calls = oai.parse_tool_calls(CHAT)
    assert calls == [ToolCall("chain_status", '{"chain_id": "c", "limit": null}', id="call_1"),
                     ToolCall("other", "{}", id="call_2")]


def test_parse_with_toolbox_maps_names_back_and_drops_strict_nulls() -> None:
    """With a toolbox the tool's own name returns, and strict mode's null for an omitted optional is dropped."""
    calls = oai.parse_tool_calls(CHAT, toolbox=_box())
    assert calls[0] == ToolCall("chain:status", {"chain_id": "c"}, id="call_1")
    assert calls[1].name == "other"  # unknown names pass through: the call reports not_found


def test_parse_responses_output_uses_call_id_and_skips_other_items() -> None:
    """Responses `function_call` items pair by `call_id`; reasoning items are skipped."""
    assert oai.parse_tool_calls(RESPONSES, toolbox=_box()) == [ToolCall("chain:status", {"chain_id": "c"},
                                                                        id="call_9")]


def test_parse_sdk_objects_without_the_caller_importing_anything() -> None:
    """The openai SDK's ChatCompletion and Response objects parse like their dicts."""
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

    assert oai.parse_tool_calls(ChatCompletion.model_validate(CHAT)) == oai.parse_tool_calls(CHAT)
    assert oai.parse_tool_calls(Response.model_validate(RESPONSES)) == oai.parse_tool_calls(RESPONSES)


def test_parse_a_message_without_calls_gives_none() -> None:
    """An assistant message that only talks has no calls."""
    assert oai.parse_tool_calls({"role": "assistant", "content": "hi"}) == []


@pytest.mark.parametrize("bad", [42, {"foo": 1}, [{"type": "function_call", "call_id": "c", "arguments": "{}"}]])
def test_parse_rejects_what_is_not_an_openai_response(bad: object) -> None:
    """Something that is not a response, or a call without a name, is a ParseError saying what was expected."""
    with pytest.raises(ParseError):
        oai.parse_tool_calls(bad)


def _results() -> list[ToolResult]:
    box = _box()
    ok = box.call_sync(ToolCall("chain_status", {"chain_id": "c"}, id="call_1"))
    bad = box.call_sync(ToolCall("chain:status", {"limit": "x"}, id="call_2"))
    return [ok, bad]


def test_result_messages_are_chat_tool_messages_with_errors_as_text() -> None:
    """Each result becomes a `tool` message for its call id; a failure says its code and message."""
    ok, bad = oai.result_messages(_results())
    assert ok["role"] == "tool" and ok["tool_call_id"] == "call_1" and json.loads(ok["content"]) == {"chain_id": "c"}
    assert bad["tool_call_id"] == "call_2" and bad["content"].startswith("Error (invalid_input)")


def test_result_messages_for_responses_are_function_call_outputs() -> None:
    """With api="responses" the results are `function_call_output` items."""
    items = oai.result_messages(_results(), api="responses")
    assert [i["type"] for i in items] == ["function_call_output"] * 2
    assert [i["call_id"] for i in items] == ["call_1", "call_2"]


def test_result_images_go_where_each_openai_api_accepts_them() -> None:
    """Chat gets images in a following user message; Responses inside the output item."""
    result = ToolResult(ok=True, output="shot", content=(Image(data=b"png"),), call_id="c1", tool_name="shot")
    chat = oai.result_messages([result])
    assert chat[0] == {"role": "tool", "tool_call_id": "c1", "content": "shot"}
    assert chat[1]["role"] == "user" and chat[1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    [item] = oai.result_messages(result, api="responses")
    assert item["output"][1] == {"type": "input_image", "image_url": "data:image/png;base64,cG5n"}


def test_result_messages_accepted_by_the_sdk_param_types() -> None:
    """The openai SDK's own message/input param types accept what result_messages writes."""
    from openai.types.chat import ChatCompletionToolMessageParam
    from openai.types.responses.response_input_item_param import FunctionCallOutput
    from pydantic import TypeAdapter

    for message in oai.result_messages(_results()):
        TypeAdapter(ChatCompletionToolMessageParam).validate_python(message)
    for item in oai.result_messages(_results(), api="responses"):
        TypeAdapter(FunctionCallOutput).validate_python(item)


def test_result_without_call_id_is_a_clear_error() -> None:
    """OpenAI pairs results by id: a result without one raises, saying how to get one."""
    from toolhall import ExportError

    with pytest.raises(ExportError, match="call id"):
        oai.result_messages([ToolResult(ok=True, output="x", tool_name="t")])
