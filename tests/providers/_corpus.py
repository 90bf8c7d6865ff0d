"""Every tool definition in `/work/shared/corpora`, as (source, name, description, input schema, output schema)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CORPORA = Path(os.environ.get("TOOLHALL_CORPORA", Path(__file__).resolve().parents[3] / "shared" / "corpora"))
MCP_SCHEMA = CORPORA / "mcp-spec-schema" / "2025-11-25" / "schema.json"


@dataclass(frozen=True)
class Definition:
    """One tool definition as found in a corpus."""

    source: str
    name: str
    description: str
    schema: Any
    output: Any = None


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _bfcl() -> Iterator[Definition]:
    for path in sorted((CORPORA / "bfcl").glob("BFCL_v4_*.json")):
        for entry in _jsonl(path):
            for fn in entry.get("function", []):
                yield Definition(path.name, fn["name"], fn.get("description", ""), fn["parameters"])
    for path in sorted((CORPORA / "bfcl" / "multi_turn_func_doc").glob("*.json")):
        for fn in _jsonl(path):
            yield Definition(path.name, fn["name"], fn.get("description", ""), fn["parameters"], fn.get("response"))


def _mcp() -> Iterator[Definition]:
    for path in sorted((CORPORA / "mcp-servers").glob("*.json")):
        for tool in json.loads(path.read_text(encoding="utf-8"))["tools"]:
            yield Definition(path.name, tool["name"], tool.get("description", ""), tool["inputSchema"],
                             tool.get("outputSchema"))


def _toolbench() -> Iterator[Definition]:
    for entry in _jsonl(CORPORA / "toolbench" / "answer_functions.jsonl"):
        for fn in entry["functions"]:
            yield Definition("toolbench", fn["name"], fn.get("description", ""), fn["parameters"])
    for path in sorted((CORPORA / "toolbench").glob("G*_query.json")):
        for query in json.loads(path.read_text(encoding="utf-8")):
            for api in query["api_list"]:
                props = {}
                for p in api.get("required_parameters", []) + api.get("optional_parameters", []):
                    props[p["name"]] = {"type": p["type"], "description": p.get("description") or ""}
                required = [p["name"] for p in api.get("required_parameters", [])]
                # ToolBench names these `<api>_for_<tool>` (what answer_functions.jsonl holds).
                name = re.sub(r"[^A-Za-z0-9_]+", "_", f"{api['api_name']}_for_{api['tool_name']}").strip("_")[:64]
                yield Definition(path.name, name, api.get("api_description") or "",
                                 {"properties": props, "required": required})


def _api_bank() -> Iterator[Definition]:
    """API-Bank is schema-like where `input_parameters` is a dict of `{type, description}`."""
    for api in json.loads((CORPORA / "api-bank" / "api_bank_apis.json").read_text(encoding="utf-8")):
        params = api.get("input_parameters")
        if "description" not in api:
            continue  # one row whose api_info does not parse upstream
        if not isinstance(params, dict) or "__python_set_literal__" in params:
            params = {}  # `{None}` / `None`: the API takes no arguments
        props = {k: {"type": v["type"], "description": v.get("description", "")} for k, v in params.items()}
        yield Definition("api-bank", api["class_name"], api["description"], {"properties": props})


@cache
def definitions() -> tuple[Definition, ...]:
    """Every definition of every corpus (9,000+, with repeats)."""
    return (*_bfcl(), *_mcp(), *_toolbench(), *_api_bank())


@cache
def distinct() -> tuple[Definition, ...]:
    """One definition per distinct (name, schema, output): what the exporters are checked on."""
    seen: dict[str, Definition] = {}
    for d in definitions():
        key = json.dumps([d.name, d.schema, d.output], sort_keys=True)
        seen.setdefault(key, d)
    return tuple(seen.values())


def available() -> bool:
    """Whether the shared corpora are on this machine."""
    return (CORPORA / "bfcl").is_dir() and MCP_SCHEMA.is_file()
