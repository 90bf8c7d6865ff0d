"""Anthropic: parsing `tool_use` blocks (dicts and SDK objects) and writing one user message of `tool_result`s."""

from __future__ import annotations

import pytest

from toolhall import Image, ParseError, Tool, Toolbox, ToolCall, ToolResult
from toolhall.providers import anthropic as ant

MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
           "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}, "content": [
               {"type": "text", "text": "Let me look."},
               {"type": "tool_use", "id": "toolu_1", "name": "math_factorial", "input": {"n": 5}},
               {"type": "tool_use", "id": "toolu_2", "name": "math_factorial", "input": {"n": "x"}}]}


def _box() -> Toolbox:
    schema = {"type": "dict", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    return Toolbox([Tool.from_schema("math.factorial", "n!", schema, lambda n: n)])


def test_parse_message_dict_with_toolbox_gives_own_names() -> None:
    """`tool_use` blocks become calls in order, with ids, inputs, and the tool's own dotted name."""
    assert ant.parse_tool_calls(MESSAGE, toolbox=_box()) == [ToolCall("math.factorial", {"n": 5}, id="toolu_1"),
                                                              ToolCall("math.factorial", {"n": "x"}, id="toolu_2")]


def test_parse_sdk_message_object() -> None:
    """The anthropic SDK's Message parses like its dict."""
    from anthropic.types import Message

    assert ant.parse_tool_calls(Message.model_validate(MESSAGE)) == ant.parse_tool_calls(MESSAGE)


def test_parse_rejects_a_non_message() -> None:
    """A value without a content list is a ParseError."""
    with pytest.raises(ParseError, match="Anthropic"):
        ant.parse_tool_calls({"role": "assistant"})


def test_result_messages_is_one_user_message_with_is_error() -> None:
    """All results go in one user message of tool_result blocks; failures carry is_error."""
    box = _box()
    results = [box.call_sync(c) for c in ant.parse_tool_calls(MESSAGE, toolbox=box)]
    [message] = ant.result_messages(results)
    assert message["role"] == "user"
    blocks = message["content"]
    assert [b["tool_use_id"] for b in blocks] == ["toolu_1", "toolu_2"]
    assert [b["is_error"] for b in blocks] == [False, True]
    assert blocks[0]["content"] == "5"
    assert "invalid_input" in blocks[1]["content"]


def test_result_images_are_image_blocks_inside_the_tool_result() -> None:
    """Anthropic accepts images in tool results: base64 image blocks next to the text."""
    result = ToolResult(ok=True, output="shot", content=(Image(data=b"png", mime_type="image/jpeg"),),
                        call_id="toolu_1", tool_name="shot")
    [message] = ant.result_messages(result)
    assert message["content"][0]["content"] == [
        {"type": "text", "text": "shot"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "cG5n"}}]


def test_result_message_accepted_by_the_sdk_param_type() -> None:
    """anthropic's MessageParam accepts the message result_messages writes."""
    from anthropic.types import MessageParam
    from pydantic import TypeAdapter

    result = ToolResult(ok=False, output="", call_id="toolu_1", tool_name="t", content=(Image(data=b"x"),))
    for message in ant.result_messages(result):
        TypeAdapter(MessageParam).validate_python(message)


def test_strict_anthropic_export_marks_expressible_tools_strict() -> None:
    """With strict=True a strict-able schema is rewritten and flagged; a free-form one is left as is."""
    from toolhall.providers import export

    tools = [_box()["math.factorial"],
             Tool.from_schema("free", "Free.", {"type": "object", "properties": {"m": {"type": "object"}}},
                              lambda **kw: kw)]
    strict, free = export(tools, "anthropic", strict=True)
    assert strict["strict"] is True and strict["input_schema"]["additionalProperties"] is False
    assert "strict" not in free and free["input_schema"] == tools[1].input_schema
