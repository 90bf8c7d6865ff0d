"""The direct schema path for simple signatures writes exactly what pydantic writes, and defers the validator."""

from __future__ import annotations

import inspect
import itertools
from typing import Any, Literal, Optional

import pytest

from toolhall import Tool
from toolhall._docstrings import ParsedDocstring
from toolhall._signature import NoTitles, _adapter, _fast_schema, analyse_function

EMPTY = inspect.Parameter.empty

SIMPLE_TYPES: list[Any] = [
    str,
    int,
    float,
    bool,
    list[str],
    list[int],
    list[list[float]],
    dict[str, int],
    dict[str, list[str]],
    Literal["a"],
    Literal["a", "b"],
    Literal[1, 2],
    Literal[7],
    str | None,
    Optional[int],  # noqa: UP045 - the spelling users still write
    list[str] | None,
    Literal["x", "y"] | None,
    dict[str, float] | None,
    list[int | None] | None,
]
DEFAULTS: list[Any] = [EMPTY, None, "text", 3, 2.5, True, 0]
DESCRIPTIONS = [None, "", "What it is."]


def _pydantic_schema(params: list[tuple[str, Any, Any]], doc: ParsedDocstring) -> dict[str, Any]:
    def fn() -> None:
        return None

    schema = _adapter(fn, params, doc, "fn").json_schema(schema_generator=NoTitles)
    schema.pop("title", None)
    return schema


@pytest.mark.parametrize("annotation", SIMPLE_TYPES, ids=str)
def test_direct_schema_matches_pydantic_for_every_default_and_description(annotation: Any) -> None:
    """For each simple type, every default and description gives the same schema, key order included."""
    for default, description in itertools.product(DEFAULTS, DESCRIPTIONS):
        params = [("first", int, EMPTY), ("value", annotation, default)]
        doc = ParsedDocstring(description="", params={"value": description} if description is not None else {})
        direct = _fast_schema(params, doc)
        expected = _pydantic_schema(params, doc)
        assert direct == expected, (default, description)
        assert list(direct["properties"]["value"]) == list(expected["properties"]["value"])
        assert list(direct) == list(expected)


def test_no_parameters_matches_pydantic() -> None:
    """A tool without parameters gets pydantic's empty object schema."""
    doc = ParsedDocstring(description="", params={})
    assert _fast_schema([], doc) == _pydantic_schema([], doc)


@pytest.mark.parametrize(
    ("annotation", "default"),
    [
        (Any, EMPTY),
        (list, EMPTY),
        (dict[int, str], EMPTY),
        (tuple[int, str], EMPTY),
        (Literal["a", 1], EMPTY),
        (Literal[True], EMPTY),
        (int | str, EMPTY),
        (None | int, EMPTY),
        (list[str], ["a"]),
        (float, float("inf")),
    ],
    ids=str,
)
def test_anything_else_is_left_to_pydantic(annotation: Any, default: Any) -> None:
    """Types and defaults outside the simple set take the pydantic path."""
    doc = ParsedDocstring(description="", params={})
    assert _fast_schema([("value", annotation, default)], doc) is None


def test_simple_tool_builds_its_validator_on_first_call() -> None:
    """Defining a simple tool builds no validator; the first call does, and fills defaults in."""

    def search(query: str, limit: int = 10, tags: list[str] | None = None) -> str:
        """Search.

        Args:
            query: What to look for.
        """
        return query

    sig = analyse_function(search, ParsedDocstring(description="", params={}), "search")
    assert sig._adapter is None
    tool = Tool.from_function(search)
    assert tool.input_schema["properties"]["query"]["description"] == "What to look for."
    validate_json, _ = tool.validators()
    assert validate_json('{"query": "x"}') == {"query": "x", "limit": 10, "tags": None}


def test_unsupported_type_still_fails_at_definition() -> None:
    """A type pydantic cannot handle is reported when the tool is defined, not at its first call."""
    from toolhall import DefinitionError

    class Opaque:
        pass

    def bad(thing: Opaque) -> None:
        return None

    with pytest.raises(DefinitionError, match="thing"):
        Tool.from_function(bad)
