"""The tools `@modelcontextprotocol/conformance` server scenarios call, as an ordinary toolhall toolbox.

Served by `toolhall serve --http --toolbox tests.mcp.conformance_tools:toolbox` (with the repository on
`PYTHONPATH`). Every tool is read-only so the session runs it without asking; tools that talk back to the
client (logging, sampling, elicitation) reach the MCP request through `toolhall.mcp.server.current_request()`,
because toolhall's `ToolContext` has no MCP-specific channel.
"""

from __future__ import annotations

import asyncio
import base64
import warnings
from typing import Any

import mcp_types as types

from toolhall import Audio, Image, Resource, Tool, Toolbox, ToolCallError, ToolContext, tool
from toolhall.mcp.server import current_request, send_client_log

__all__ = ["SCENARIO_TOOLS", "toolbox"]

# A 1x1 red PNG and a 1-sample 8 kHz WAV: the smallest real files of each kind.
RED_PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
TINY_WAV = (
    b"RIFF" + (37).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + (8000).to_bytes(4, "little")
    + (8000).to_bytes(4, "little") + (1).to_bytes(2, "little") + (8).to_bytes(2, "little")
    + b"data" + (1).to_bytes(4, "little") + b"\x80"
)  # fmt: skip

#: Scenario → the tool it calls (what the conformance test checks exists before trusting a pass).
SCENARIO_TOOLS: dict[str, str] = {
    "tools-call-simple-text": "test_simple_text",
    "tools-call-image": "test_image_content",
    "tools-call-audio": "test_audio_content",
    "tools-call-embedded-resource": "test_embedded_resource",
    "tools-call-mixed-content": "test_multiple_content_types",
    "tools-call-with-logging": "test_tool_with_logging",
    "tools-call-error": "test_error_handling",
    "tools-call-with-progress": "test_tool_with_progress",
    "tools-call-sampling": "test_sampling",
    "tools-call-elicitation": "test_elicitation",
    "elicitation-sep1034-defaults": "test_elicitation_sep1034_defaults",
    "elicitation-sep1330-enums": "test_elicitation_sep1330_enums",
    "json-schema-2020-12": "json_schema_2020_12_tool",
}


def _mcp_request() -> Any:
    ctx = current_request()
    if ctx is None:
        raise ToolCallError("this tool only works when served over MCP")
    return ctx


@tool(read_only=True)
def test_simple_text() -> str:
    """Return a fixed text."""
    return "This is a simple text response for testing."


@tool(read_only=True)
def test_image_content() -> Image:
    """Return a 1x1 red PNG."""
    return Image(data=RED_PIXEL_PNG, mime_type="image/png")


@tool(read_only=True)
def test_audio_content() -> Audio:
    """Return a one-sample WAV file."""
    return Audio(data=TINY_WAV, mime_type="audio/wav")


@tool(read_only=True)
def test_embedded_resource() -> Resource:
    """Return an embedded text resource."""
    return Resource(
        uri="test://embedded-resource", text="This is an embedded resource content.", mime_type="text/plain"
    )


@tool(read_only=True)
def test_multiple_content_types() -> list[object]:
    """Return text, an image and a resource."""
    return [
        "Multiple content types test:",
        Image(data=RED_PIXEL_PNG, mime_type="image/png"),
        Resource(uri="test://mixed-content-resource", text='{"test":"data","value":123}', mime_type="application/json"),
    ]


@tool(read_only=True)
async def test_tool_with_logging() -> str:
    """Send three log notifications to the client, 50 ms apart."""
    _mcp_request()
    for i, message in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if i:
            await asyncio.sleep(0.05)
        await send_client_log("info", message, logger="conformance")
    return "Logging test completed"


@tool(read_only=True)
def test_error_handling() -> None:
    """Always fail."""
    raise ToolCallError("This tool intentionally returns an error for testing")


@tool(read_only=True)
async def test_tool_with_progress(ctx: ToolContext) -> str:
    """Report progress 0, 50 and 100 of 100, 50 ms apart."""
    for i, value in enumerate((0, 50, 100)):
        if i:
            await asyncio.sleep(0.05)
        await ctx.report_progress(value, 100, f"{value}%")
    return "Progress test completed"


@tool(read_only=True)
async def test_sampling(prompt: str) -> str:
    """Ask the client's model and return its answer.

    Args:
        prompt: The prompt to send to the LLM.
    """
    ctx = _mcp_request()
    message = types.SamplingMessage(role="user", content=types.TextContent(text=prompt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        answer = await ctx.session.create_message([message], max_tokens=100, related_request_id=ctx.request_id)
    text = getattr(answer.content, "text", str(answer.content))
    return f"LLM response: {text}"


async def _elicit(message: str, schema: dict[str, Any]) -> str:
    ctx = _mcp_request()
    answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return f"action={answer.action}, content={answer.content}"


@tool(read_only=True)
async def test_elicitation(message: str) -> str:
    """Ask the user for a username and an email.

    Args:
        message: The message to show the user.
    """
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return "User response: " + await _elicit(message, schema)


@tool(read_only=True)
async def test_elicitation_sep1034_defaults() -> str:
    """Elicit with a default for every primitive type (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    }
    return "Elicitation completed: " + await _elicit("Please review your information", schema)


@tool(read_only=True)
async def test_elicitation_sep1330_enums() -> str:
    """Elicit with the five enum shapes (SEP-1330)."""
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
    }
    return "Elicitation completed: " + await _elicit("Pick some options", schema)


JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def _echo_arguments(**arguments: Any) -> dict[str, Any]:
    return arguments


def toolbox() -> Toolbox:
    """Every tool the conformance scenarios call."""
    schema_tool = Tool.from_schema(
        "json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", JSON_SCHEMA_2020_12, _echo_arguments,
        read_only=True,
    )  # fmt: skip
    return Toolbox(
        [
            test_simple_text, test_image_content, test_audio_content, test_embedded_resource,
            test_multiple_content_types, test_tool_with_logging, test_error_handling, test_tool_with_progress,
            test_sampling, test_elicitation, test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums,
            schema_tool,
        ]
    )  # fmt: skip
