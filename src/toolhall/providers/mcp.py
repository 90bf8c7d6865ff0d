"""MCP: a tool as the protocol's `Tool` (revision 2025-11-25), with its annotations as hints.

The `inputSchema` is the tool's JSON Schema verbatim (`from_schema` keeps valid JSON Schema as given).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._errors import SchemaError
from .._jsonschema import is_standard_schema, normalize_schema

if TYPE_CHECKING:
    from .._tool import Tool

__all__ = ["export_tool", "hints", "output_schema"]


def hints(tool: Tool) -> dict[str, Any]:
    """The tool's annotations as MCP `ToolAnnotations` hints (every hint explicit, `title` when set)."""
    ann = tool.annotations
    out: dict[str, Any] = {}
    if ann.title:
        out["title"] = ann.title
    out.update(readOnlyHint=ann.read_only, destructiveHint=ann.destructive, idempotentHint=ann.idempotent,
               openWorldHint=ann.open_world)
    return out


def output_schema(tool: Tool) -> dict[str, Any] | None:
    """The tool's output schema when MCP can carry it: valid JSON Schema with a root object type.

    MCP restricts `outputSchema` to `"type": "object"`; a tool returning a bare value (a string, a list)
    has no `outputSchema`, and its result is still sent as text.
    """
    schema = tool.output_schema
    if not isinstance(schema, Mapping) or not schema:
        return None
    if is_standard_schema(schema):
        return dict(schema)
    try:  # an output schema in a wild dialect (BFCL multi-turn `response`)
        return normalize_schema(schema, name=tool.name)
    except SchemaError:
        return None


def export_tool(tool: Tool, name: str, *, strict: bool = False) -> dict[str, Any]:
    """One tool as an MCP `Tool` `{name, title?, description, inputSchema, outputSchema?, annotations}`."""
    out: dict[str, Any] = {"name": name}
    if tool.annotations.title:
        out["title"] = tool.annotations.title
    out["description"] = tool.description
    out["inputSchema"] = tool.input_schema
    schema = output_schema(tool)
    if schema is not None:
        out["outputSchema"] = schema
    out["annotations"] = hints(tool)
    return out
