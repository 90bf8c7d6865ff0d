"""Anthropic Messages API: tool definitions, `tool_use` blocks in, one user message of `tool_result` blocks out.

Example:
    ```python
    from toolhall.providers import anthropic as ant

    message = client.messages.create(model=..., messages=messages, tools=toolbox.schemas("anthropic"))
    results = await toolbox.call_many(ant.parse_tool_calls(message, toolbox=toolbox))
    messages += [{"role": "assistant", "content": message.content}, *ant.result_messages(results)]
    ```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import ParseError
from .._result import Image, ToolCall, ToolResult
from ._common import ToolLookup, as_data, as_results, call_id, own_call, result_text
from ._strict import NotStrictError, strict_schema
from ._transform import flatten_root

if TYPE_CHECKING:
    from .._tool import Tool

__all__ = ["export_tool", "parse_tool_calls", "result_messages"]


def export_tool(tool: Tool, name: str, *, strict: bool = False) -> dict[str, Any]:
    """One tool as an Anthropic tool definition `{name, description, input_schema}`.

    The input schema is the tool's JSON Schema; a root `anyOf`/`oneOf`/`allOf` (which the API refuses at
    the top level) is merged into one object. With `strict=True`, a schema strict tool use can express is
    rewritten like OpenAI's strict mode and marked `"strict": true`; any other keeps its schema.
    """
    out: dict[str, Any] = {"name": name, "description": tool.description}
    if strict:
        try:
            out["input_schema"] = strict_schema(tool.input_schema)
            out["strict"] = True
            return out
        except NotStrictError:
            pass  # same promise as OpenAI: never silently altered, just not strict
    out["input_schema"] = flatten_root(dict(tool.input_schema))
    return out


def parse_tool_calls(response: Any, toolbox: ToolLookup | None = None) -> list[ToolCall]:
    """The `tool_use` blocks of a message (a dict, an SDK `Message`, or its `content` list), in order.

    Raises:
        ParseError: The response has no content list, or a `tool_use` block lacks its name.
    """
    data = as_data(response)
    if isinstance(data, Mapping):
        data = data.get("content")
    if isinstance(data, str):
        return []
    if not isinstance(data, list | tuple):
        raise ParseError("not an Anthropic message: expected a dict or Message with a `content` list")
    calls = []
    for block in data:
        block = as_data(block)
        if not isinstance(block, Mapping) or block.get("type") != "tool_use":
            continue
        name = block.get("name")
        if not isinstance(name, str) or not name:
            raise ParseError(f"tool_use block without a name: {dict(block)!r}")
        args = block.get("input")
        calls.append(own_call(ToolCall(name, args if isinstance(args, dict | str) else None, id=block.get("id")),
                              toolbox, "anthropic"))
    return calls


def result_messages(results: Sequence[ToolResult] | ToolResult) -> list[dict[str, Any]]:
    """One `user` message holding a `tool_result` block per result (`is_error` set on failures).

    Images a tool returned are passed as `image` blocks inside its `tool_result`.

    Raises:
        ExportError: A result has no call id to pair it with its `tool_use` block.
    """
    blocks = [_block(r) for r in as_results(results)]
    return [{"role": "user", "content": blocks}] if blocks else []


def _block(result: ToolResult) -> dict[str, Any]:
    text = result_text(result)
    images = [p for p in result.content if isinstance(p, Image)]
    content: str | list[dict[str, Any]] = text
    if images:
        content = [{"type": "text", "text": text}] if text else []
        content += [
            {"type": "image", "source": {"type": "base64", "media_type": p.mime_type, "data": p.base64}}
            for p in images
        ]
    return {"type": "tool_result", "tool_use_id": call_id(result, "Anthropic"), "content": content,
            "is_error": not result.ok}
