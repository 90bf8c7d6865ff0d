"""Wild-schema normalisation and the compiled validator of `from_schema` tools."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from toolhall import SchemaError
from toolhall._errors import ArgumentsError
from toolhall._jsonschema import DIALECT_TYPES, compile_validator, normalize_schema


@pytest.mark.parametrize(("dialect", "json_type"), [
    ("dict", "object"), ("float", "number"), ("double", "number"), ("long", "integer"), ("int", "integer"),
    ("tuple", "array"), ("ArrayList", "array"), ("Array", "array"), ("String", "string"), ("HashMap", "object"),
    ("Boolean", "boolean"), ("char", "string"), ("STRING", "string"), ("NUMBER", "number"), ("str", "string"),
    ("datetime", "string"),
])
def test_dialect_type_names_map_to_json_schema_types(dialect: str, json_type: str) -> None:
    """Each documented dialect name (BFCL, Java/JS, Python, ToolBench) becomes its JSON Schema type."""
    out = normalize_schema({"type": "dict", "properties": {"x": {"type": dialect}}})
    assert out["properties"]["x"]["type"] == json_type


@pytest.mark.parametrize("untyped", ["any", ""])
def test_any_and_empty_type_mean_no_type(untyped: str) -> None:
    """`any` and `""` drop the type, so any value is accepted."""
    out = normalize_schema({"type": "dict", "properties": {"x": {"type": untyped, "description": "d"}}})
    assert out["properties"]["x"] == {"description": "d"}


def test_valid_json_schema_with_root_object_is_returned_unchanged() -> None:
    """A schema already valid (even with keywords others drop: $defs, additionalProperties) is kept equal."""
    schema: dict[str, Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                              "$defs": {"p": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/p"}},
                              "additionalProperties": False, "optional": ["a"], "x-extra": 1}
    before = copy.deepcopy(schema)
    out = normalize_schema(schema)
    assert out == before and schema == before and out is not schema


def test_missing_root_type_is_added_and_nothing_else_changes() -> None:
    """A root with properties but no type gets `type: object`."""
    assert normalize_schema({"properties": {"a": {"type": "string"}}}) == {
        "type": "object", "properties": {"a": {"type": "string"}}}


def test_optional_flags_fold_into_required() -> None:
    """`optional: true` removes a name from required; `optional: false` and `required: true` add it."""
    out = normalize_schema({"type": "dict", "required": ["a", "b"], "properties": {
        "a": {"type": "string", "optional": True}, "b": {"type": "string"},
        "c": {"type": "string", "optional": False}, "d": {"type": "string", "required": True}}})
    assert out["required"] == ["b", "c", "d"]
    assert all("optional" not in p and "required" not in p for p in out["properties"].values())


def test_nested_dialect_items_and_generics_are_mapped() -> None:
    """Nested items, list-form items (tuple) and Python generics (`List[str]`) become JSON Schema."""
    out = normalize_schema({"type": "dict", "properties": {
        "ids": {"type": "ArrayList", "items": {"type": "long"}},
        "pair": {"type": "tuple", "items": [{"type": "float"}, {"type": "String"}]},
        "names": {"type": "List[str]"}}})
    props = out["properties"]
    assert props["ids"] == {"type": "array", "items": {"type": "integer"}}
    assert props["pair"] == {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}]}
    assert props["names"] == {"type": "array", "items": {"type": "string"}}


def test_enum_values_outside_the_declared_type_widen_it() -> None:
    """BFCL's boolean with `["True", "False", "dontcare"]` accepts those strings after normalisation."""
    out = normalize_schema({"type": "dict", "properties": {
        "u": {"type": "boolean", "enum": ["True", "False", "dontcare"]}}})
    check = compile_validator(out)
    check({"u": "dontcare"})
    assert out["properties"]["u"]["type"] == ["boolean", "string"]


def test_unknown_type_name_is_a_schema_error_naming_tool_type_and_place() -> None:
    """A type no table knows raises SchemaError naming the tool, the type, its path and the known names."""
    with pytest.raises(SchemaError, match=r"tool 'f': unknown type 'complex' at #/properties/x.*known type names"):
        normalize_schema({"type": "dict", "properties": {"x": {"type": "complex"}}}, name="f")


@pytest.mark.parametrize("bad", [{"type": "string"}, ["not", "a", "mapping"]])
def test_a_root_that_cannot_be_arguments_is_a_schema_error(bad: Any) -> None:
    """Arguments are an object: a root of another type, or a non-mapping, is refused."""
    with pytest.raises(SchemaError, match="tool 't'"):
        normalize_schema(bad, name="t")


def test_every_documented_dialect_name_is_lower_case() -> None:
    """The table is keyed by lower-cased names (lookups are case-insensitive)."""
    assert all(k == k.lower() for k in DIALECT_TYPES)


def test_validator_lists_every_error_with_its_json_path() -> None:
    """ArgumentsError (a ValueError) lists each error with a `$.path` and names the tool."""
    check = compile_validator({"type": "object", "required": ["a"], "properties": {
        "a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "string"}}}}, name="add")
    check({"a": 1, "b": ["x"]})
    with pytest.raises(ArgumentsError) as info:
        check({"b": ["x", 2]})
    assert isinstance(info.value, ValueError)
    assert "invalid arguments for tool 'add'" in str(info.value)
    assert sorted(info.value.errors) == ['$.b[1]: 2 is not of type "string"', '$: "a" is a required property']


def test_bad_schemas_are_schema_errors_naming_the_tool() -> None:
    """An invalid keyword value, a dangling $ref or a bad regex fail at compile time with SchemaError."""
    for schema in ({"type": "object", "properties": {"a": {"minimum": "x"}}},
                   {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
                   {"type": "object", "properties": {"a": {"type": "string", "pattern": "(unclosed"}}}):
        with pytest.raises(SchemaError, match="tool 'bad'"):
            compile_validator(schema, name="bad")


def test_remote_refs_are_never_fetched() -> None:
    """A remote `$ref` is refused offline instead of opening a network connection."""
    with pytest.raises(SchemaError, match="cannot fetch"):
        compile_validator({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}})
