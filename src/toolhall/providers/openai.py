"""OpenAI: Chat Completions and Responses tool definitions, tool calls in, tool results out.

Example:
    ```python
    from toolhall.providers import openai as oai

    tools = toolbox.schemas("openai")
    response = client.chat.completions.create(model=..., messages=messages, tools=tools)
    calls = oai.parse_tool_calls(response, toolbox=toolbox)
    results = await toolbox.call_many(calls)
    messages += [response.choices[0].message, *oai.result_messages(results)]
    ```
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ExportError, ParseError
from .._result import Image, ToolCall, ToolResult
from ._common import ToolLookup, as_data, as_results, call_id, result_text, tool_of
from ._strict import NotStrictError, strict_schema, strip_strict_nulls
from ._transform import SchemaTransformer, flatten_root

if TYPE_CHECKING:
    from .._tool import Tool

__all__ = ["export_tool", "parameters", "parse_tool_calls", "result_messages"]


class _Loose(SchemaTransformer):
    """Non-strict parameters: JSON Schema as given, plus what the API insists on."""

    def transform(self, node: dict[str, Any], path: str) -> dict[str, Any]:
        # "array schema missing items" is a 400 even outside strict mode.
        types = node.get("type")
        is_array = types == "array" or (isinstance(types, list) and "array" in types)
        if is_array and not isinstance(node.get("items"), Mapping):
            node.pop("items", None)
            node["items"] = {}
        return node


def parameters(tool: Tool, *, strict: bool) -> tuple[dict[str, Any], bool]:
    """The tool's `parameters` for OpenAI and whether they are strict (False when strict mode cannot say them)."""
    if strict:
        try:
            return strict_schema(tool.input_schema), True
        except NotStrictError:
            pass  # DESIGN: a tool strict mode cannot express is exported non-strict, not silently altered
    schema: dict[str, Any] = _Loose().walk(flatten_root(dict(tool.input_schema)))
    return schema, False


def export_tool(
    tool: Tool, name: str, *, strict: bool = False, api: Literal["chat", "responses"] = "chat"
) -> dict[str, Any]:
    """One tool as a Chat Completions (`api="chat"`) or Responses (`api="responses"`) function tool.

    Args:
        tool: The tool.
        name: The legal name it is exported under (see `exported_names`).
        strict: Ask for strict mode; a tool it cannot express gets `"strict": false`.
        api: Which API's shape.
    """
    params, is_strict = parameters(tool, strict=strict)
    if api == "responses":  # the Responses API defaults `strict` to true: always say it
        return {"type": "function", "name": name, "description": tool.description, "parameters": params,
                "strict": is_strict}
    function: dict[str, Any] = {"name": name, "description": tool.description, "parameters": params}
    if strict:
        function["strict"] = is_strict
    return {"type": "function", "function": function}


def parse_tool_calls(response: Any, toolbox: ToolLookup | None = None) -> list[ToolCall]:
    """The function calls in a Chat Completions or Responses result, in order.

    Accepts a whole response (dict or SDK object), a chat `message`, a Responses `output` list, or a list of
    chat `tool_calls`. With `toolbox`, exported names come back as the tools' own, and the `null`s strict
    mode sends for omitted optional arguments are dropped.

    Raises:
        ParseError: The response is not in a shape this reads, or a call lacks its name.
    """
    data = as_data(response)
    calls = [_one(item) for item in _items(data)]
    if toolbox is None:
        return [c for c in calls if c is not None]
    return [_own(c, toolbox) for c in calls if c is not None]


def _items(data: Any) -> list[Any]:
    if isinstance(data, Mapping):
        if "choices" in data:  # a chat completion: the first choice's message
            choices = data["choices"] or []
            return _items(choices[0].get("message") or {}) if choices else []
        if "output" in data and isinstance(data["output"], list):  # a Responses result
            return list(data["output"])
        if "tool_calls" in data:  # a chat message
            return list(data["tool_calls"] or [])
        if data.get("type") in ("function_call", "function") or "function" in data:
            return [data]
        if "role" in data:  # an assistant message without calls
            return []
    if isinstance(data, list | tuple):
        return list(data)
    raise ParseError(
        "not an OpenAI response: expected a chat completion, a message with tool_calls, or a Responses result"
    )


def _one(item: Any) -> ToolCall | None:
    item = as_data(item)
    if not isinstance(item, Mapping):
        raise ParseError(f"not a tool call: {item!r}")
    if item.get("type") == "function_call":  # Responses: the pairing id is call_id
        name, args, ident = item.get("name"), item.get("arguments"), item.get("call_id") or item.get("id")
    elif isinstance(item.get("function"), Mapping):  # Chat Completions
        fn = item["function"]
        name, args, ident = fn.get("name"), fn.get("arguments"), item.get("id")
    else:
        return None  # not a function call: a message, reasoning, a built-in tool call
    if not isinstance(name, str) or not name:
        raise ParseError(f"function call without a name: {dict(item)!r}")
    if args is not None and not isinstance(args, str | dict):
        raise ParseError(f"function call {name!r}: arguments must be JSON text, got {type(args).__name__}")
    return ToolCall(name, args, id=ident)


def _own(call: ToolCall, toolbox: ToolLookup) -> ToolCall:
    tool = tool_of(call.name, toolbox, "openai")
    if tool is None:
        return call
    args = call.arguments
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else None
        except ValueError:
            return ToolCall(tool.name, call.arguments, id=call.id)  # the call reports invalid_input
    if isinstance(args, dict):
        args = strip_strict_nulls(args, tool.input_schema)
    return ToolCall(tool.name, args, id=call.id)


def result_messages(
    results: Sequence[ToolResult] | ToolResult, *, api: Literal["chat", "responses"] = "chat"
) -> list[dict[str, Any]]:
    """Messages answering the calls: chat `tool` messages, or Responses `function_call_output` items.

    Images a tool returned go where the API accepts them: inside the Responses output, and for Chat
    Completions (whose tool messages take text only) in one `user` message after the tool messages.

    Raises:
        ExportError: A result has no call id to pair it with its call.
    """
    items = as_results(results)
    if api == "responses":
        return [_response_output(r) for r in items]
    if api != "chat":
        raise ExportError(f"api must be 'chat' or 'responses', got {api!r}")
    messages: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": call_id(r, "OpenAI"), "content": result_text(r)} for r in items
    ]
    images: list[dict[str, Any]] = []
    for r in items:
        found = [p for p in r.content if isinstance(p, Image)]
        if found:
            images.append({"type": "text", "text": f"Images returned by {r.tool_name} (call {r.call_id}):"})
            images += [{"type": "image_url", "image_url": {"url": _data_url(p)}} for p in found]
    if images:
        messages.append({"role": "user", "content": images})
    return messages


def _response_output(result: ToolResult) -> dict[str, Any]:
    text = result_text(result)
    images = [p for p in result.content if isinstance(p, Image)]
    output: str | list[dict[str, Any]] = text
    if images:
        output = [{"type": "input_text", "text": text}]
        output += [{"type": "input_image", "image_url": _data_url(p)} for p in images]
    return {"type": "function_call_output", "call_id": call_id(result, "OpenAI"), "output": output}


def _data_url(image: Image) -> str:
    return f"data:{image.mime_type};base64,{image.base64}"
