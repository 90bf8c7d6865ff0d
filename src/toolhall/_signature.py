"""A function's signature and docstring → a JSON input schema and a validator that yields keyword arguments.

Arguments are validated straight into a dict of keyword arguments (a `TypedDict` schema, with defaults filled
in), because building and then iterating a model costs more than the validation itself.
"""

from __future__ import annotations

import inspect
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, get_args, get_origin, get_type_hints

from pydantic import ConfigDict, PydanticSchemaGenerationError, PydanticUserError, TypeAdapter
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticUndefined
from typing_extensions import TypedDict

from ._context import ToolContext
from ._docstrings import ParsedDocstring
from ._errors import DefinitionError

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


@dataclass(frozen=True, slots=True)
class FunctionSignature:
    """What a tool needs to know about its function."""

    input_schema: dict[str, Any]
    adapter: TypeAdapter[Any]
    context_param: str | None
    return_annotation: Any


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
    try:
        TypeAdapter(annotation)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
        reason = str(exc).splitlines()[0]
        return f"parameter {name!r}: unsupported type {annotation!r} ({reason})"
    return None


def analyse_function(fn: Callable[..., Any], doc: ParsedDocstring, qualname: str) -> FunctionSignature:
    """Build the input schema and validator for `fn`, gathering every problem into one `DefinitionError`."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise DefinitionError(f"tool function {qualname}: cannot read its signature ({exc})") from exc
    hints = _type_hints(fn, qualname)
    problems: list[str] = []
    fields: dict[str, Any] = {}
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
        fields[name] = _field_type(annotation, param.default, doc.params.get(name))
    if problems:
        raise DefinitionError(f"tool function {qualname}: " + "; ".join(problems))
    args_type = TypedDict(f"{fn.__name__}_arguments", fields)  # type: ignore[misc]
    args_type.__pydantic_config__ = _FORBID_EXTRA  # type: ignore[attr-defined]
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(args_type)
        schema = adapter.json_schema(schema_generator=NoTitles)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
        bad = [msg for name in fields if (msg := _unsupported(name, hints.get(name, Any)))]
        detail = "; ".join(bad) or str(exc).splitlines()[0]
        raise DefinitionError(f"tool function {qualname}: {detail}") from exc
    schema.pop("title", None)
    return FunctionSignature(
        input_schema=schema,
        adapter=adapter,
        context_param=context_param,
        return_annotation=hints.get("return", signature.return_annotation),
    )


def output_schema_for(annotation: Any) -> dict[str, Any] | None:
    """The JSON Schema of a return annotation, or None when it says nothing useful (str, None, Any)."""
    if annotation in (inspect.Signature.empty, None, type(None), Any, str, object):
        return None
    if isinstance(annotation, typing.TypeVar):
        return None
    try:
        schema = TypeAdapter(annotation).json_schema(mode="serialization", schema_generator=NoTitles)
    except Exception:  # noqa: BLE001 - an odd return type just means no output schema
        return None
    return schema
