"""What every provider module shares: reading SDK objects as data, mapping names back, result text."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import ExportError, ParseError
from .._result import Audio, Image, Resource, Text, ToolCall, ToolResult
from ._names import original_names

if TYPE_CHECKING:
    from .._tool import Tool

__all__ = ["ToolLookup", "as_data", "as_results", "call_id", "own_call", "parts_text", "result_text", "tool_of"]


class ToolLookup(Protocol):
    """What parsing needs from a toolbox: iteration over its tools and `get(name)`."""

    def get(self, name: str) -> Tool | None: ...  # noqa: D102 - protocol member

    def __iter__(self) -> Any: ...  # noqa: D105 - protocol member


def as_data(obj: Any) -> Any:
    """A provider response as plain data: dicts and lists pass through; SDK (pydantic) objects are dumped.

    The SDKs are never imported: anything with `model_dump` (openai, anthropic, google-genai objects) works.
    """
    if isinstance(obj, Mapping | list | tuple | str) or obj is None:
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(mode="json", by_alias=True, exclude_none=True)
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    raise ParseError(f"cannot read a provider response of type {type(obj).__name__}: expected a dict or SDK object")


def own_call(call: ToolCall, toolbox: ToolLookup | None, format: str) -> ToolCall:  # noqa: A002
    """The call with the tool's own name, when a toolbox knows the exported one."""
    if toolbox is None:
        return call
    tool = tool_of(call.name, toolbox, format)
    if tool is None or tool.name == call.name:
        return call
    return ToolCall(tool.name, call.arguments, id=call.id)


def tool_of(name: str, toolbox: ToolLookup, format: str) -> Tool | None:  # noqa: A002
    """The toolbox's tool exported as `name` in `format` (or named so), if any."""
    found = toolbox.get(name)
    if found is not None:
        return found
    reverse = original_names([t.name for t in toolbox], format)
    own = reverse.get(name)
    return toolbox.get(own) if own is not None else None


def result_text(result: ToolResult) -> str:
    """The text a model reads for a result: the output, or the error's code and message."""
    if result.ok or result.error is None:
        return result.output
    text = f"Error ({result.error.code}): {result.error.message}"
    if result.error.details:
        text += "\n" + json.dumps(result.error.details, ensure_ascii=False, default=str)
    return text


def parts_text(parts: Iterable[Text | Image | Audio | Resource]) -> str:
    """The text of every text part (and of text resources), one per line."""
    out = []
    for part in parts:
        if isinstance(part, Text):
            out.append(part.text)
        elif isinstance(part, Resource) and part.text is not None:
            out.append(part.text)
    return "\n".join(out)


def as_results(results: Sequence[ToolResult] | ToolResult) -> list[ToolResult]:
    """One result or many, as a list."""
    return [results] if isinstance(results, ToolResult) else list(results)


def call_id(result: ToolResult, provider: str) -> str:
    """The provider's call id the result answers; the provider pairs results with calls by it."""
    if not result.call_id:
        raise ExportError(
            f"{provider} needs the call id for the result of tool {result.tool_name!r}: call the tool with the "
            "parsed ToolCall (it carries the provider's id) so the result echoes it"
        )
    return result.call_id
