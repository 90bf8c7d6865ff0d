"""toolhall ⇄ MCP types: the only module that builds or reads `mcp_types` objects."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from .._result import Audio, ContentPart, Image, Resource, Text, ToolResult

__all__ = ["content_from_mcp", "result_to_mcp", "tool_to_mcp"]


def tool_to_mcp(entry: dict[str, Any]) -> types.Tool:
    """An exported `mcp`-format entry as the SDK's `Tool`."""
    return types.Tool.model_validate(entry)


def _part_to_mcp(part: ContentPart) -> types.ContentBlock:
    if isinstance(part, Text):
        return types.TextContent(text=part.text)
    if isinstance(part, Image):
        return types.ImageContent(data=part.base64, mime_type=part.mime_type)
    if isinstance(part, Audio):
        return types.AudioContent(data=part.base64, mime_type=part.mime_type)
    if part.text is not None:
        contents: Any = types.TextResourceContents(uri=part.uri, text=part.text, mime_type=part.mime_type)
    else:
        blob = Image(data=part.blob or b"").base64
        contents = types.BlobResourceContents(uri=part.uri, blob=blob, mime_type=part.mime_type)
    return types.EmbeddedResource(resource=contents)


def result_to_mcp(result: ToolResult, *, structured: bool) -> types.CallToolResult:
    """A toolhall result as an MCP `CallToolResult`: content parts, structured data, `isError`."""
    if not result.ok:
        return types.CallToolResult(content=[types.TextContent(text=result.output)], is_error=True)
    content: list[types.ContentBlock] = [_part_to_mcp(part) for part in result.content]
    if result.truncated or not content:
        # The session truncated `output` for the model; the text part must match what the model may see.
        texts: list[types.ContentBlock] = [p for p in content if not isinstance(p, types.TextContent)]
        content = [types.TextContent(text=result.output), *texts] if result.output or not texts else texts
    data = result.data
    structured_content = None
    if structured and data is not None and not isinstance(data, str):
        structured_content = data if isinstance(data, dict) else {"result": data}
    return types.CallToolResult(content=content, structured_content=structured_content)


def content_from_mcp(block: Any) -> ContentPart:
    """An MCP content block as a toolhall content part."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return Text(text=block.text)
    if kind == "image":
        return Image(data=block.data, mime_type=block.mime_type)
    if kind == "audio":
        return Audio(data=block.data, mime_type=block.mime_type)
    if kind == "resource":
        res = block.resource
        return Resource(
            uri=str(res.uri), text=getattr(res, "text", None), blob=getattr(res, "blob", None), mime_type=res.mime_type
        )
    if kind == "resource_link":
        return Resource(uri=str(block.uri), mime_type=getattr(block, "mime_type", None))
    return Text(text=str(block))
