"""Defining tools: @tool, from_function, from_model, from_schema."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from toolhall import DefinitionError, Tool, ToolContext, tool


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


def test_google_docstring_becomes_descriptions() -> None:
    """The summary and the Args section become the tool and parameter descriptions."""

    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two numbers.

        Args:
            a: The first number.
            b: The second number.
        """
        return a + b

    assert add.name == "add"
    assert add.description == "Add two numbers."
    assert add.input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first number."},
            "b": {"type": "integer", "description": "The second number.", "default": 2},
        },
        "required": ["a"],
        "additionalProperties": False,
    }


def test_numpy_and_sphinx_docstrings() -> None:
    """NumPy and Sphinx docstrings are read as well as Google's."""

    @tool
    def numpy_style(path: str) -> str:
        """Read a file.

        Parameters
        ----------
        path : str
            Where the file is.
        """
        return path

    @tool
    def sphinx_style(path: str) -> str:
        """Read a file.

        :param path: Where the file is.
        """
        return path

    for t in (numpy_style, sphinx_style):
        assert t.description == "Read a file."
        assert t.input_schema["properties"]["path"]["description"] == "Where the file is."


def test_rich_types_and_constraints() -> None:
    """Optional, unions, Literal, enums, nested models, lists, dicts and Field constraints reach the schema."""

    @tool
    def rich(
        count: Annotated[int, Field(ge=1, le=10, description="How many.")],
        mode: Literal["fast", "slow"] = "fast",
        color: Color = Color.RED,
        point: Point | None = None,
        tags: list[str] | None = None,
        weights: dict[str, float] | None = None,
        either: int | str = 1,
    ) -> dict[str, Any]:
        """Do something rich."""
        return {}

    props = rich.input_schema["properties"]
    assert props["count"] == {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many."}
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert "$defs" in rich.input_schema and "Point" in rich.input_schema["$defs"]
    assert props["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    assert props["either"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert rich.input_schema["required"] == ["count"]


def test_annotated_field_description_wins_over_docstring() -> None:
    """A description written in Field(...) overrides the docstring's."""

    @tool
    def f(x: Annotated[int, Field(description="from Field")]) -> int:
        """F.

        Args:
            x: from docstring
        """
        return x

    assert f.input_schema["properties"]["x"]["description"] == "from Field"


def test_context_parameter_is_hidden() -> None:
    """A ToolContext parameter is injected, never part of the schema."""

    @tool
    async def f(x: int, ctx: ToolContext) -> int:
        return x

    assert list(f.input_schema["properties"]) == ["x"]
    assert f.context_param == "ctx"
    assert f.is_async


def test_options_and_default_annotations() -> None:
    """Options are kept; annotations default as MCP does unless given."""

    @tool(name="renamed", roles={"impl"}, tags={"fs"}, timeout=3, requires_approval=True, subject="x")
    def f(x: str) -> str:
        return x

    assert f.name == "renamed"
    assert f.roles == frozenset({"impl"}) and f.tags == frozenset({"fs"})
    assert f.timeout == 3.0 and f.requires_approval is True
    assert (f.annotations.read_only, f.annotations.destructive) == (False, True)
    assert (f.annotations.idempotent, f.annotations.open_world) == (False, True)
    assert f.subjects({"x": "a/b"}) == ["a/b"]

    @tool(read_only=True)
    def g() -> str:
        return ""

    assert g.annotations.read_only and not g.annotations.destructive and g.annotations.idempotent


def test_subject_callable_returns_many() -> None:
    """A subject function may return several subjects."""

    @tool(subject=lambda args: args["line"].split(";"))
    def run(line: str) -> str:
        return line

    assert run.subjects({"line": "a;b"}) == ["a", "b"]


def test_unsupported_types_are_reported_at_definition() -> None:
    """Every bad parameter is named in one DefinitionError, with the function's name."""

    class Opaque:
        pass

    with pytest.raises(DefinitionError) as err:

        @tool
        def bad(ok: int, thing: Opaque, other: Opaque) -> None:
            pass

    message = str(err.value)
    assert "bad" in message and "'thing'" in message and "'other'" in message and "'ok'" not in message


def test_star_args_and_positional_only_are_refused() -> None:
    """*args, **kwargs and positional-only parameters cannot be described, so they are refused."""
    with pytest.raises(DefinitionError, match=r"'args'.*'kwargs'"):

        @tool
        def f(*args: int, **kwargs: int) -> None:
            pass

    with pytest.raises(DefinitionError, match="positional-only"):

        @tool
        def g(a: int, /) -> None:
            pass


@pytest.mark.parametrize("name", ["", "has space", "x" * 129, "semi;colon", "slash/name"])
def test_bad_names_are_refused(name: str) -> None:
    """Names outside letters, digits and `_-.:` (1-128 long) are refused with the name in the message."""
    with pytest.raises(DefinitionError, match="not allowed"):
        Tool.from_function(lambda: None, name=name)


def test_names_with_colon_and_dot_are_allowed() -> None:
    """`chain:status` and `math.factorial` are legal tool names (providers map them)."""
    assert tool(name="chain:status")(lambda: "").name == "chain:status"
    assert tool(name="math.factorial")(lambda: "").name == "math.factorial"


def test_bad_timeout_and_subject_are_refused() -> None:
    """A non-positive timeout, or a subject that is not a parameter, is a DefinitionError."""
    with pytest.raises(DefinitionError, match="timeout"):
        tool(name="t", timeout=0)(lambda: "")
    with pytest.raises(DefinitionError, match="subject"):

        @tool(subject="nope")
        def f(x: str) -> str:
            return x


def test_from_model() -> None:
    """A pydantic model's schema becomes the input schema; its docstring the description."""

    class SearchQuery(BaseModel):
        """Search the index."""

        query: str
        limit: int = 10

    t = Tool.from_model(SearchQuery, lambda q: q.query)
    assert t.name == "search_query"
    assert t.description == "Search the index."
    assert t.input_schema["required"] == ["query"]


def test_from_schema_keeps_valid_schema_exactly() -> None:
    """A valid JSON Schema with a root object type is kept as given."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    t = Tool.from_schema("echo", "Echo.", schema, lambda a: a)
    assert t.input_schema == schema


def test_from_schema_normalises_bfcl_dialect() -> None:
    """BFCL's `dict` and `float` become JSON Schema's `object` and `number`."""
    t = Tool.from_schema(
        "math.area",
        "Area.",
        {"type": "dict", "properties": {"r": {"type": "float"}}, "required": ["r"]},
        lambda r: r,
    )
    assert t.input_schema["type"] == "object"
    assert t.input_schema["properties"]["r"]["type"] == "number"


def test_version_is_stable_and_changes_with_schema() -> None:
    """`version` is a stable hash of name, description and schema."""

    def f(x: int) -> int:
        return x

    def g(x: str) -> str:
        return x

    assert Tool.from_function(f).version == Tool.from_function(f).version
    assert Tool.from_function(f).version != Tool.from_function(g, name="f").version


def test_output_schema_from_return_annotation() -> None:
    """The return annotation gives an output schema; str and None give none."""

    @tool
    def point() -> Point:
        return Point(x=1)

    @tool
    def text() -> str:
        return ""

    assert point.output_schema is not None and point.output_schema["properties"]["x"]["type"] == "integer"
    assert text.output_schema is None


def test_tools_are_frozen_and_replace_makes_copies() -> None:
    """A tool cannot be changed in place; replace() gives a changed copy."""

    @tool
    def f(x: int) -> int:
        return x

    with pytest.raises(AttributeError):
        f.name = "g"  # type: ignore[misc]
    g = f.replace(name="g", roles={"x"})
    assert (g.name, g.roles, f.name) == ("g", frozenset({"x"}), "f")
    assert g.input_schema == f.input_schema


class Unsupported:
    """A plain class pydantic cannot build a schema for."""


def test_unsupported_resolved_type_is_named() -> None:
    """A resolvable but unsupported type is named with its parameter."""

    def f(a: int, b: Unsupported) -> None:
        pass

    with pytest.raises(DefinitionError, match=r"tool function .*f: parameter 'b': unsupported type"):
        Tool.from_function(f)
