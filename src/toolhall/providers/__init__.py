"""Provider formats: export tools as OpenAI, Anthropic, Gemini or MCP definitions, and read their calls back.

Each format has a module (`openai`, `anthropic`, `gemini`, `mcp`); this package dispatches to them and owns
the name mapping (`exported_names`). Most code calls `Toolbox.schemas(format)`, which caches `export`.

Example:
    ```python
    from toolhall.providers import export, exported_names

    export([add, search], "openai", strict=True)
    exported_names([chain_status], "openai")  # {"chain:status": "chain_status"}
    ```
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

from .._errors import ExportError
from . import _names, anthropic, gemini, mcp, openai

if TYPE_CHECKING:
    from .._tool import Tool

__all__ = ["FORMATS", "Format", "export", "exported_names", "original_names"]

Format = Literal["openai", "openai-responses", "anthropic", "gemini", "mcp", "json"]
"""The export formats: OpenAI Chat Completions, OpenAI Responses, Anthropic, Gemini, MCP, and plain JSON."""
FORMATS: tuple[str, ...] = get_args(Format)
"""Every format name, in documentation order."""


def _names_of(tools: Iterable[Tool | str]) -> list[str]:
    return [t if isinstance(t, str) else t.name for t in tools]


def exported_names(tools: Iterable[Tool | str], format: Format) -> dict[str, str]:  # noqa: A002 - DESIGN's word
    """Map each tool's name to the legal, unique, stable name it is exported under in `format`.

    Legal names are kept; others get illegal characters replaced by `_` (`chain:status` → `chain_status`),
    and a short hash of the own name when that would clash. The same set of tools always gets the same names.

    Raises:
        ExportError: Unknown format, or two tools share a name.
    """
    return _names.exported_names(_names_of(tools), _check(format))


def original_names(tools: Iterable[Tool | str], format: Format) -> dict[str, str]:  # noqa: A002
    """The reverse of `exported_names`: `{exported_name: own_name}`."""
    return _names.original_names(_names_of(tools), _check(format))


def _check(format: str) -> str:  # noqa: A002
    if format not in FORMATS:
        raise ExportError(f"unknown format {format!r}; choose one of: {', '.join(FORMATS)}")
    return format


def _json(tool: Tool, name: str, *, strict: bool = False) -> dict[str, Any]:
    ann = tool.annotations
    return {
        "name": name,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "output_schema": tool.output_schema,
        "annotations": {"title": ann.title, "read_only": ann.read_only, "destructive": ann.destructive,
                        "idempotent": ann.idempotent, "open_world": ann.open_world},
    }


def _responses(tool: Tool, name: str, *, strict: bool = False) -> dict[str, Any]:
    return openai.export_tool(tool, name, strict=strict, api="responses")


_EXPORTERS = {
    "openai": openai.export_tool,
    "openai-responses": _responses,
    "anthropic": anthropic.export_tool,
    "gemini": gemini.export_tool,
    "mcp": mcp.export_tool,
    "json": _json,
}


def export(tools: Sequence[Tool], format: Format, *, strict: bool = False) -> list[dict[str, Any]]:  # noqa: A002
    """Every tool's definition in `format`, one entry per tool, in the order given (no caching).

    Args:
        tools: The tools; their names must be unique.
        format: `openai` (Chat Completions), `openai-responses`, `anthropic`, `gemini`, `mcp` or `json`.
        strict: OpenAI strict mode (also Anthropic strict tool use). A tool whose schema strict mode cannot
            express (a free-form object, say) is exported with `"strict": false` instead of being altered.

    Raises:
        ExportError: Unknown format, duplicate names, or a schema that cannot be rewritten (a `$ref` that
            points nowhere), naming the tool.
    """
    exporter = _EXPORTERS.get(format)
    if exporter is None:
        raise ExportError(f"unknown format {format!r}; choose one of: {', '.join(FORMATS)}")
    names = _names.exported_names([t.name for t in tools], format)
    out = []
    for tool in tools:
        try:
            out.append(exporter(tool, names[tool.name], strict=strict))
        except ExportError as exc:
            raise ExportError(f"tool {tool.name!r} cannot be exported as {format}: {exc}") from exc
    return out
