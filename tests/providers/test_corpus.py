"""Every tool definition in the shared corpora loads, exports to every format and passes outside validators."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any, get_type_hints

import jsonschema
import pytest

from tests._services import IN_CI
from toolhall import Tool, Toolbox
from toolhall.providers import FORMATS, export, exported_names
from toolhall.providers import anthropic as ant_provider
from toolhall.providers import gemini as gem_provider
from toolhall.providers import openai as oai_provider

from . import _corpus
from ._rules import name_of, violations

# Under CI the shared corpora sit beside the clone and these tests must run, never skip.
pytestmark = pytest.mark.skipif(
    not _corpus.available() and not IN_CI, reason=f"corpora not found at {_corpus.CORPORA} (set TOOLHALL_CORPORA)"
)


def _echo(**kwargs: Any) -> dict[str, Any]:
    return kwargs


@cache
def corpus_tools() -> tuple[Tool, ...]:
    """One tool per distinct corpus definition (about 3,500), built once."""
    return tuple(
        Tool.from_schema(d.name, d.description, d.schema, _echo, output_schema=d.output)
        for d in _corpus.distinct()
    )


@cache
def exports(format: str, strict: bool) -> tuple[tuple[Tool, dict[str, Any]], ...]:  # noqa: A002
    """Each corpus tool exported alone (corpus names repeat across files), once per format."""
    return tuple((t, export([t], format, strict=strict)[0]) for t in corpus_tools())  # type: ignore[arg-type]


def _first_failures(items: list[str], limit: int = 10) -> str:
    return f"{len(items)} failures, first: " + "\n".join(items[:limit])


def test_corpus_is_the_one_described() -> None:
    """The corpora hold the thousands of definitions the research counted (guards against an empty run)."""
    assert len(_corpus.definitions()) > 9000
    assert len(_corpus.distinct()) > 3000


def test_every_corpus_definition_loads_with_from_schema() -> None:
    """Every definition, in every dialect, becomes a Tool whose input schema is JSON Schema with a root object."""
    tools = corpus_tools()
    assert len(tools) == len(_corpus.distinct())
    bad = [t.name for t in tools if t.input_schema.get("type") != "object"]
    assert not bad, _first_failures(bad)
    # An independent meta-schema check (python-jsonschema; toolhall uses jsonschema-rs): it takes ~4 ms a
    # schema, so it runs on every non-BFCL schema and every 10th BFCL one.
    for i, (d, tool) in enumerate(zip(_corpus.distinct(), tools, strict=True)):
        if i % 10 == 0 or not d.source.startswith("BFCL"):
            jsonschema.validators.validator_for(tool.input_schema).check_schema(tool.input_schema)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("format", FORMATS)
def test_every_corpus_export_follows_the_documented_rules(format: str, strict: bool) -> None:  # noqa: A002
    """Each corpus tool's export satisfies every rule in the manifest for its format."""
    found = []
    for tool, entry in exports(format, strict):
        found += [f"{tool.name}: {v}" for v in violations(entry, format)]
    assert not found, _first_failures(found)


def test_every_mcp_export_validates_against_the_official_tool_schema() -> None:
    """Every MCP export is a valid `Tool` of the MCP 2025-11-25 schema.json, and a valid SDK `mcp.types.Tool`."""
    import mcp.types

    spec = json.loads(_corpus.MCP_SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator({"$ref": "#/$defs/Tool", "$defs": spec["$defs"]})
    failures = []
    for tool, entry in exports("mcp", False):
        failures += [f"{tool.name}: {e.message}" for e in validator.iter_errors(entry)]
        mcp.types.Tool.model_validate(entry)
    assert not failures, _first_failures(failures)


def test_mcp_exports_keep_valid_corpus_schemas_verbatim() -> None:
    """A corpus schema that already is JSON Schema with a root object (every MCP server's) is exported unchanged."""
    pairs = list(zip(_corpus.distinct(), exports("mcp", False), strict=True))
    standard = [(d, entry) for d, (_, entry) in pairs if d.schema.get("type") == "object"
                and not d.source.startswith("BFCL")]
    assert sum(1 for d, _ in standard if d.source in _MCP_FILES) == 160
    changed = [d.name for d, entry in standard if entry["inputSchema"] != d.schema]
    assert not changed, _first_failures(changed)


_MCP_FILES = {p.name for p in (_corpus.CORPORA / "mcp-servers").glob("*.json")}


@cache
def _typed_dict_keys(cls: type) -> set[str]:
    return set(get_type_hints(cls, include_extras=False))


def _sdk_checks() -> dict[str, Callable[[dict[str, Any]], None]]:
    from anthropic.types import ToolParam
    from google.genai import types as genai
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.responses import FunctionToolParam
    from openai.types.shared_params import FunctionDefinition
    from pydantic import TypeAdapter

    chat, responses, anthropic_tool = (TypeAdapter(t) for t in (ChatCompletionFunctionToolParam, FunctionToolParam,
                                                                  ToolParam))

    def openai_chat(entry: dict[str, Any]) -> None:
        chat.validate_python(entry)
        assert set(entry) <= _typed_dict_keys(ChatCompletionFunctionToolParam)
        assert set(entry["function"]) <= _typed_dict_keys(FunctionDefinition)

    def openai_responses(entry: dict[str, Any]) -> None:
        responses.validate_python(entry)
        assert set(entry) <= _typed_dict_keys(FunctionToolParam)

    def anthropic(entry: dict[str, Any]) -> None:
        anthropic_tool.validate_python(entry)
        assert set(entry) <= _typed_dict_keys(ToolParam)

    def gemini(entry: dict[str, Any]) -> None:
        genai.FunctionDeclaration.model_validate(entry)  # extra="forbid": unknown Schema fields fail

    return {"openai": openai_chat, "openai-responses": openai_responses, "anthropic": anthropic, "gemini": gemini}


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("format", ["openai", "openai-responses", "anthropic", "gemini"])
def test_every_corpus_export_is_accepted_by_the_provider_sdk_type(format: str, strict: bool) -> None:  # noqa: A002
    """The installed openai / anthropic / google-genai SDKs' own request types accept every corpus export."""
    check = _sdk_checks()[format]
    for tool, entry in exports(format, strict):
        try:
            check(entry)
        except Exception as exc:  # report which tool, then fail
            pytest.fail(f"{tool.name}: {exc}")


def test_strict_mode_takes_most_corpus_tools_and_marks_the_rest_non_strict() -> None:
    """Under strict=True most corpus tools are strict; the others say `strict: false` and keep their schema."""
    loose = {t.name + json.dumps(t.input_schema, sort_keys=True): e for t, e in exports("openai-responses", False)}
    strict_count = 0
    for tool, entry in exports("openai-responses", True):
        if entry["strict"]:
            strict_count += 1
        else:
            assert entry == loose[tool.name + json.dumps(tool.input_schema, sort_keys=True)]
    assert strict_count > 0.9 * len(corpus_tools())


def _one_per_name() -> list[Tool]:
    by_name: dict[str, Tool] = {}
    for tool in corpus_tools():
        by_name.setdefault(tool.name, tool)
    return list(by_name.values())


def _fake_response(format: str, name: str) -> Any:  # noqa: A002
    if format == "openai":
        return {"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}]}}]}
    if format == "anthropic":
        return {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": name, "input": {}}]}
    return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": {}}}]}}]}


@pytest.mark.parametrize("format", ["openai", "anthropic", "gemini"])
def test_every_corpus_name_exports_legally_and_parses_back(format: str) -> None:  # noqa: A002
    """All distinct corpus names (870 of them dotted) get legal unique names that parse back to the tool's own."""
    tools = _one_per_name()
    toolbox = Toolbox(tools)
    names = exported_names(tools, format)  # type: ignore[arg-type]
    assert len(set(names.values())) == len(tools)
    assert sum(1 for own, out in names.items() if own != out) > 800  # distinct dotted names
    module = {"openai": oai_provider, "anthropic": ant_provider, "gemini": gem_provider}[format]
    entries = toolbox.schemas(format)
    assert [name_of(e) for e in entries] == list(names.values())
    for own, exported in names.items():
        [call] = module.parse_tool_calls(_fake_response(format, exported), toolbox=toolbox)
        assert call.name == own
