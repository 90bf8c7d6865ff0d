"""A function's signature and docstring → a JSON input schema and a validator that yields keyword arguments.

Arguments are validated straight into a dict of keyword arguments (a `TypedDict` schema, with defaults filled
in), because building and then iterating a model costs more than the validation itself.
"""

from __future__ import annotations

import inspect
import math
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, Union, get_args, get_origin, get_type_hints

from pydantic import ConfigDict, PydanticSchemaGenerationError, PydanticUserError
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticUndefined
from typing_extensions import TypedDict

from ._context import ToolContext
from ._docstrings import ParsedDocstring
from ._errors import DefinitionError

if TYPE_CHECKING:
    # pydantic.TypeAdapter pulls in pydantic's model machinery; simple tools need it only at their first call.
    from pydantic import TypeAdapter

__all__ = ["FunctionSignature", "NoTitles", "analyse_function"]

_FORBID_EXTRA = ConfigDict(extra="forbid")


_METHOD_NAMES: dict[type, list[tuple[Any, str]]] = {}


class NoTitles(GenerateJsonSchema):
    """Pydantic's JSON Schema without the `title` it derives from every field name (noise for a model)."""

    def field_title_should_be_set(self, schema: Any) -> bool:  # noqa: D102 - pydantic hook
        return False

    def build_schema_type_to_method(self) -> dict[Any, Callable[[Any], Any]]:  # noqa: D102 - pydantic hook
        # pydantic re-derives this table (a Literal's values, then a getattr each) for every schema it
        # generates; the method names never change, so look them up once per class.
        names = _METHOD_NAMES.get(type(self))
        if names is None:
            built = super().build_schema_type_to_method()
            _METHOD_NAMES[type(self)] = [(key, method.__name__) for key, method in built.items()]
            return built
        return {key: getattr(self, name) for key, name in names}

    def encode_default(self, dft: Any) -> Any:  # noqa: D102 - pydantic hook
        # pydantic builds a TypeAdapter per default to encode it (most of a cold export's cost for tools
        # with defaults); JSON-native scalars encode as themselves.
        kind = type(dft)
        if dft is None or kind is str or kind is bool or kind is int or (kind is float and math.isfinite(dft)):
            return dft
        return super().encode_default(dft)


class FunctionSignature:
    """What a tool needs to know about its function; the validating `adapter` may be built on first use."""

    __slots__ = ("_adapter", "_build_adapter", "context_param", "input_schema", "return_annotation")

    def __init__(
        self,
        *,
        input_schema: dict[str, Any],
        context_param: str | None,
        return_annotation: Any,
        adapter: TypeAdapter[Any] | None = None,
        build_adapter: Callable[[], TypeAdapter[Any]] | None = None,
    ) -> None:
        self.input_schema = input_schema
        self.context_param = context_param
        self.return_annotation = return_annotation
        self._adapter = adapter
        self._build_adapter = build_adapter

    @property
    def adapter(self) -> TypeAdapter[Any]:
        """The TypeAdapter that validates arguments into keyword arguments (built now if it was deferred)."""
        if self._adapter is None:
            assert self._build_adapter is not None  # noqa: S101 - one of the two is always given
            self._adapter = self._build_adapter()
        return self._adapter


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    if get_origin(annotation) is Annotated:
        return _is_context(get_args(annotation)[0])
    return False


def _field(kwargs: dict[str, Any]) -> FieldInfo:
    # What Field(**kwargs) returns, without Field()'s argument checks: 3x faster, and a cold export of 200
    # five-parameter tools makes a thousand of these.
    rest = dict(kwargs)
    return FieldInfo.from_field(rest.pop("default", PydanticUndefined), **rest)


def _field_type(annotation: Any, default: Any, description: str | None) -> Any:
    field_kwargs: dict[str, Any] = {}
    if description:
        field_kwargs["description"] = description
    if isinstance(default, FieldInfo):
        doc_field = _field(field_kwargs) if field_kwargs else None
        metadata = [m for m in (doc_field, default) if m is not None]
        typ = Annotated[(annotation, *metadata)]
        return typ if default.is_required() else NotRequired[typ]
    if default is not inspect.Parameter.empty:
        field_kwargs["default"] = default
    if field_kwargs:
        # The docstring's Field goes first so a Field(...) the author wrote in Annotated overrides it.
        if get_origin(annotation) is Annotated:
            base, *meta = get_args(annotation)
            annotation = Annotated[(base, _field(field_kwargs), *meta)]
        else:
            annotation = Annotated[annotation, _field(field_kwargs)]
    return annotation if default is inspect.Parameter.empty else NotRequired[annotation]


def _type_hints(fn: Callable[..., Any], qualname: str) -> dict[str, Any]:
    try:
        return get_type_hints(fn, include_extras=True)
    except (NameError, TypeError, AttributeError):
        pass
    # Resolve one annotation at a time so the error names every parameter whose type cannot be found.
    hints: dict[str, Any] = {}
    problems: list[str] = []
    globalns = getattr(fn, "__globals__", {})
    for name, annotation in getattr(fn, "__annotations__", {}).items():
        probe = _probe()
        probe.__annotations__ = {name: annotation}
        try:
            hints[name] = get_type_hints(probe, globalns=globalns, include_extras=True)[name]
        except (NameError, TypeError, AttributeError) as exc:
            problems.append(f"parameter {name!r}: unsupported type {annotation!r} ({exc})")
    if problems:
        raise DefinitionError(f"tool function {qualname}: " + "; ".join(problems))
    return hints


def _probe() -> Callable[[], None]:
    def probe() -> None:
        return None

    return probe


def _unsupported(name: str, annotation: Any) -> str | None:
    from pydantic import TypeAdapter

    try:
        TypeAdapter(annotation)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
        reason = str(exc).splitlines()[0]
        return f"parameter {name!r}: unsupported type {annotation!r} ({reason})"
    return None


def _parameters(
    signature: inspect.Signature, hints: dict[str, Any], qualname: str
) -> tuple[list[tuple[str, Any, Any]], str | None]:
    """(name, annotation, default) for each schema parameter, and the ToolContext parameter's name."""
    problems: list[str] = []
    params: list[tuple[str, Any, Any]] = []
    context_param: str | None = None
    for name, param in signature.parameters.items():
        annotation = hints.get(name, Any)
        if _is_context(annotation):
            context_param = name
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            problems.append(f"parameter {name!r}: positional-only parameters cannot be passed by name")
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            problems.append(f"parameter {name!r}: *args and **kwargs cannot be described by a schema")
            continue
        params.append((name, annotation, param.default))
    if problems:
        raise DefinitionError(f"tool function {qualname}: " + "; ".join(problems))
    return params, context_param


def _adapter(
    fn: Callable[..., Any], params: list[tuple[str, Any, Any]], doc: ParsedDocstring, qualname: str
) -> TypeAdapter[Any]:
    """The TypeAdapter validating arguments straight into keyword arguments (a TypedDict with defaults)."""
    from pydantic import TypeAdapter

    fields = {name: _field_type(annotation, default, doc.params.get(name)) for name, annotation, default in params}
    args_type = TypedDict(f"{fn.__name__}_arguments", fields)  # type: ignore[misc]
    args_type.__pydantic_config__ = _FORBID_EXTRA  # type: ignore[attr-defined]
    try:
        return TypeAdapter(args_type)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
        raise _definition_error(params, qualname, exc) from exc


def _definition_error(params: list[tuple[str, Any, Any]], qualname: str, exc: Exception) -> DefinitionError:
    bad = [msg for name, annotation, _ in params if (msg := _unsupported(name, annotation))]
    detail = "; ".join(bad) or str(exc).splitlines()[0]
    return DefinitionError(f"tool function {qualname}: {detail}")


def analyse_function(fn: Callable[..., Any], doc: ParsedDocstring, qualname: str) -> FunctionSignature:
    """Build the input schema and validator for `fn`, gathering every problem into one `DefinitionError`.

    When every parameter has a simple type (see `_simple_schema`), the schema is written directly and the
    validator is built on the first call: most of the cost of defining a tool is pydantic building both.
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise DefinitionError(f"tool function {qualname}: cannot read its signature ({exc})") from exc
    hints = _type_hints(fn, qualname)
    params, context_param = _parameters(signature, hints, qualname)
    return_annotation = hints.get("return", signature.return_annotation)
    fast = _fast_schema(params, doc)
    if fast is not None:
        return FunctionSignature(
            input_schema=fast,
            build_adapter=lambda: _adapter(fn, params, doc, qualname),
            context_param=context_param,
            return_annotation=return_annotation,
        )
    adapter = _adapter(fn, params, doc, qualname)
    try:
        schema = adapter.json_schema(schema_generator=NoTitles)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
        raise _definition_error(params, qualname, exc) from exc
    schema.pop("title", None)
    return FunctionSignature(
        input_schema=schema, adapter=adapter, context_param=context_param, return_annotation=return_annotation
    )


# -- the direct path for simple signatures -------------------------------------------------------------
# Exactly what pydantic (with NoTitles) writes for these types, keys sorted as pydantic sorts them;
# tests/test_signature_fastpath.py checks the two agree. Anything else goes through pydantic.
_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_NONE_TYPE = type(None)


def _simple_schema(annotation: Any) -> dict[str, Any] | None:
    """pydantic's JSON Schema for str, int, float, bool, list[T], dict[str, T], Literal and `T | None`."""
    if isinstance(annotation, type):
        name = _SCALARS.get(annotation)
        return {"type": name} if name is not None else None
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is list and len(args) == 1:
        items = _simple_schema(args[0])
        return None if items is None else {"items": items, "type": "array"}
    if origin is dict and len(args) == 2 and args[0] is str:
        values = _simple_schema(args[1])
        return None if values is None else {"additionalProperties": values, "type": "object"}
    if origin is Literal:
        return _literal_schema(args)
    if (origin is Union or origin is types.UnionType) and len(args) == 2 and args[1] is _NONE_TYPE:
        inner = _simple_schema(args[0])
        return None if inner is None else {"anyOf": [inner, {"type": "null"}]}
    return None


def _literal_schema(values: tuple[Any, ...]) -> dict[str, Any] | None:
    kinds = {type(value) for value in values}
    if len(kinds) != 1 or len(set(values)) != len(values) or not values:
        return None
    name = {str: "string", int: "integer"}.get(kinds.pop())
    if name is None:
        return None
    return {"const": values[0], "type": name} if len(values) == 1 else {"enum": list(values), "type": name}


def _json_native(value: Any) -> bool:
    kind = type(value)
    return value is None or kind is str or kind is bool or kind is int or (kind is float and math.isfinite(value))


def _fast_schema(params: list[tuple[str, Any, Any]], doc: ParsedDocstring) -> dict[str, Any] | None:
    """The input schema written directly, or None when a parameter needs pydantic to describe it."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, annotation, default in params:
        prop = _simple_schema(annotation)
        if prop is None:
            return None
        if default is inspect.Parameter.empty:
            required.append(name)
        elif _json_native(default):
            prop["default"] = default
        else:
            return None
        description = doc.params.get(name)
        if description:
            prop["description"] = description
        properties[name] = dict(sorted(prop.items()))
    schema: dict[str, Any] = {"additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = required
    schema["type"] = "object"
    return schema


def output_schema_for(annotation: Any) -> dict[str, Any] | None:
    """The JSON Schema of a return annotation, or None when it says nothing useful (str, None, Any)."""
    if annotation in (inspect.Signature.empty, None, type(None), Any, str, object):
        return None
    if isinstance(annotation, typing.TypeVar):
        return None
    from pydantic import TypeAdapter

    try:
        schema = TypeAdapter(annotation).json_schema(mode="serialization", schema_generator=NoTitles)
    except Exception:  # noqa: BLE001 - an odd return type just means no output schema
        return None
    return schema
