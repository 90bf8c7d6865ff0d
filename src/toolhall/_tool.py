"""`Tool`: one frozen definition, however it was made (`@tool`, `from_function`, `from_model`, `from_schema`)."""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast, overload

from typing_extensions import Unpack

from ._docstrings import parse_docstring
from ._errors import DefinitionError
from ._signature import NoTitles, analyse_function, output_schema_for

if TYPE_CHECKING:
    from pydantic import BaseModel  # imported where used: it loads pydantic's model machinery

__all__ = ["Tool", "ToolAnnotations", "ToolOptions", "tool"]

# Wider than any provider accepts (`:` for chain tools, `.` for dotted corpus names): exporters map
# names to each format's rules, and calls accept either spelling.
_NAME = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")

Subject = str | Callable[[Mapping[str, Any]], "str | Iterable[str] | None"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAnnotations:
    """Hints about a tool's behaviour, defaulting as MCP does."""

    read_only: bool = False
    """The tool does not change its environment."""
    destructive: bool = True
    """The tool may destroy or overwrite (meaningful when not read-only)."""
    idempotent: bool = False
    """Calling twice with the same arguments has no further effect."""
    open_world: bool = True
    """The tool talks to an open world (the internet), not a closed domain."""
    title: str | None = None
    """A human-readable title."""


class BehaviourOptions(TypedDict, total=False):
    """How a tool's calls are governed (every option but its name and description)."""

    roles: Iterable[str]
    tags: Iterable[str]
    timeout: float | None
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool
    title: str | None
    requires_approval: bool | None
    subject: Subject | None
    inline: bool
    output_schema: dict[str, Any] | None


class ToolOptions(BehaviourOptions, total=False):
    """Options shared by `@tool` and every `Tool.from_*` factory."""

    name: str
    description: str


ValidatorFn = Callable[[Any], Any]
"""Turns raw arguments (JSON text or a dict) into what the handler is called with."""


class _Lazy:
    """Per-tool state built on first use (validators, output schema), outside the frozen fields."""

    __slots__ = ("output_schema", "output_schema_ready", "validate_json", "validate_python")

    def __init__(self) -> None:
        self.validate_json: ValidatorFn | None = None
        self.validate_python: ValidatorFn | None = None
        self.output_schema: dict[str, Any] | None = None
        self.output_schema_ready = False


class Tool:
    """A tool: name, description, JSON input schema, handler, and the options that govern its calls.

    Build one with `@tool`, `Tool.from_function`, `Tool.from_model` or `Tool.from_schema`.

    Example:
        ```python
        @tool
        def add(a: int, b: int) -> int:
            \"\"\"Add two numbers.\"\"\"
            return a + b

        add.name, add.input_schema["required"]  # ("add", ["a", "b"])
        ```
    """

    __slots__ = (
        "_build_validators",
        "_lazy",
        "_output_hint",
        "annotations",
        "context_param",
        "description",
        "handler",
        "inline",
        "input_schema",
        "is_async",
        "kind",
        "name",
        "requires_approval",
        "roles",
        "subject",
        "tags",
        "timeout",
        "version",
    )

    name: str
    description: str
    input_schema: dict[str, Any]
    roles: frozenset[str]
    tags: frozenset[str]
    annotations: ToolAnnotations
    timeout: float | None
    requires_approval: bool | None
    subject: Subject | None
    inline: bool
    handler: Callable[..., Any]
    is_async: bool
    context_param: str | None
    kind: Literal["function", "model", "schema"]
    version: str
    _lazy: _Lazy
    _output_hint: Callable[[], dict[str, Any] | None] | dict[str, Any] | None
    _build_validators: Callable[[], tuple[ValidatorFn, ValidatorFn]]

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_schema: dict[str, Any],
        handler: Callable[..., Any],
        kind: Literal["function", "model", "schema"],
        build_validators: Callable[[], tuple[ValidatorFn, ValidatorFn]],
        context_param: str | None = None,
        output_hint: Callable[[], dict[str, Any] | None] | dict[str, Any] | None = None,
        **options: Unpack[BehaviourOptions],
    ) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise DefinitionError(
                f"tool name {name!r} is not allowed: use 1-128 characters from letters, digits, '_', '-', '.', ':'"
                " (pass name=... to @tool or Tool.from_*)"
            )
        timeout = options.get("timeout")
        if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0):
            raise DefinitionError(f"tool {name!r}: timeout must be a positive number of seconds, got {timeout!r}")
        subject = options.get("subject")
        if isinstance(subject, str) and subject not in input_schema.get("properties", {}):
            raise DefinitionError(f"tool {name!r}: subject {subject!r} is not one of its parameters")
        setattr_ = object.__setattr__
        setattr_(self, "name", name)
        setattr_(self, "description", description)
        setattr_(self, "input_schema", input_schema)
        setattr_(self, "roles", frozenset(options.get("roles") or ()))
        setattr_(self, "tags", frozenset(options.get("tags") or ()))
        read_only = options.get("read_only", False)
        setattr_(
            self,
            "annotations",
            ToolAnnotations(
                read_only=read_only,
                destructive=options.get("destructive", not read_only),
                idempotent=options.get("idempotent", read_only),
                open_world=options.get("open_world", True),
                title=options.get("title"),
            ),
        )
        setattr_(self, "timeout", float(timeout) if timeout is not None else None)
        setattr_(self, "requires_approval", options.get("requires_approval"))
        setattr_(self, "subject", subject)
        setattr_(self, "inline", bool(options.get("inline", False)))
        setattr_(self, "handler", handler)
        setattr_(self, "is_async", _is_async(handler))
        setattr_(self, "context_param", context_param)
        setattr_(self, "kind", kind)
        setattr_(self, "_build_validators", build_validators)
        explicit_output = options.get("output_schema")
        setattr_(self, "_output_hint", explicit_output if explicit_output is not None else output_hint)
        setattr_(self, "_lazy", _Lazy())
        fingerprint = json.dumps([name, description, input_schema], sort_keys=True, default=str)
        setattr_(self, "version", hashlib.sha256(fingerprint.encode()).hexdigest()[:16])

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"Tool is frozen: cannot set {key!r} (build a new tool with replace())")

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, kind={self.kind!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, bypassing validation (handy in tests)."""
        return self.handler(*args, **kwargs)

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of the tool's structured output, when known (built on first access)."""
        lazy = self._lazy
        if not lazy.output_schema_ready:
            hint = self._output_hint
            lazy.output_schema = hint() if callable(hint) else hint
            lazy.output_schema_ready = True
        return lazy.output_schema

    def validators(self) -> tuple[ValidatorFn, ValidatorFn]:
        """The (json_text, python_value) validators, built on first call."""
        lazy = self._lazy
        if lazy.validate_json is None or lazy.validate_python is None:
            lazy.validate_json, lazy.validate_python = self._build_validators()
        return lazy.validate_json, lazy.validate_python

    def subjects(self, arguments: Mapping[str, Any]) -> list[str]:
        """What policy rules match for these (validated) arguments: a path, a URL, each command of a line."""
        subject = self.subject
        if subject is None:
            return []
        if isinstance(subject, str):
            value = arguments.get(subject)
            if value is None:
                return []
            return [value] if isinstance(value, str) else [json.dumps(value, default=str)]
        found = subject(arguments)
        if found is None:
            return []
        return [found] if isinstance(found, str) else [str(item) for item in found]

    def schema(self, format: str = "json", *, strict: bool = False) -> dict[str, Any]:  # noqa: A002 - DESIGN's name
        """This tool's definition in a provider's format (see `Toolbox.schemas`)."""
        from .providers import export

        entry: dict[str, Any] = export([self], format, strict=strict)[0]  # type: ignore[arg-type]  # checked by export
        return entry

    def replace(self, **changes: Any) -> Tool:
        """A copy with some options changed (a new name, other roles, ...)."""
        options: dict[str, Any] = {
            "roles": self.roles,
            "tags": self.tags,
            "timeout": self.timeout,
            "read_only": self.annotations.read_only,
            "destructive": self.annotations.destructive,
            "idempotent": self.annotations.idempotent,
            "open_world": self.annotations.open_world,
            "title": self.annotations.title,
            "requires_approval": self.requires_approval,
            "subject": self.subject,
            "inline": self.inline,
        }
        base: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "handler": self.handler,
            "kind": self.kind,
            "build_validators": self._build_validators,
            "context_param": self.context_param,
            "output_hint": self._output_hint,
        }
        for key, value in changes.items():
            if key in base:
                base[key] = value
            else:
                options[key] = value
        new = Tool(**base, **options)
        if self._lazy.validate_json is not None:
            object.__setattr__(new, "_lazy", self._lazy)
        return new

    @classmethod
    def from_function(cls, fn: Callable[..., Any], **options: Unpack[ToolOptions]) -> Tool:
        """A tool from a typed function (sync or async); its docstring gives the descriptions.

        Example:
            ```python
            def greet(name: str) -> str:
                \"\"\"Say hello.\"\"\"
                return f"hello {name}"

            Tool.from_function(greet, read_only=True)
            ```
        """
        if not callable(fn):
            raise DefinitionError(f"Tool.from_function needs a function, got {type(fn).__name__}")
        qualname = getattr(fn, "__qualname__", repr(fn))
        doc = parse_docstring(inspect.getdoc(fn))
        sig = analyse_function(fn, doc, qualname)

        def build() -> tuple[ValidatorFn, ValidatorFn]:
            validator = sig.adapter.validator  # built here, on the first call, for simple signatures
            return validator.validate_json, validator.validate_python

        ret = sig.return_annotation
        name, description, behaviour = _split_options(options, getattr(fn, "__name__", "tool"), doc.description)
        return cls(
            name=name,
            description=description,
            input_schema=sig.input_schema,
            handler=fn,
            kind="function",
            build_validators=build,
            context_param=sig.context_param,
            output_hint=lambda: output_schema_for(ret),
            **behaviour,
        )

    @classmethod
    def from_model(cls, model: type[BaseModel], handler: Callable[..., Any], **options: Unpack[ToolOptions]) -> Tool:
        """A tool whose arguments are a pydantic model; the handler receives the validated model.

        Example:
            ```python
            class Search(BaseModel):
                query: str

            Tool.from_model(Search, lambda args: f"searching {args.query}", name="search")
            ```
        """
        from pydantic import BaseModel

        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise DefinitionError(f"Tool.from_model needs a pydantic BaseModel subclass, got {model!r}")
        schema = model.model_json_schema(schema_generator=NoTitles)
        schema.pop("title", None)
        name, description, behaviour = _split_options(
            options, _snake(model.__name__), parse_docstring(model.__doc__).description
        )

        def build() -> tuple[ValidatorFn, ValidatorFn]:
            validator = model.__pydantic_validator__
            return validator.validate_json, validator.validate_python

        return cls(
            name=name,
            description=description,
            input_schema=schema,
            handler=handler,
            kind="model",
            build_validators=build,
            output_hint=_return_schema_hint(handler),
            **behaviour,
        )

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        handler: Callable[..., Any],
        **options: Unpack[BehaviourOptions],
    ) -> Tool:
        """A tool from raw JSON Schema (an MCP server's, or a corpus's); the handler gets keyword arguments.

        The wild dialects (`"type": "dict"`, `float`, `tuple`, `any`, Java/JS type names, `optional`) are
        normalised as `docs/schemas.md` documents; a valid JSON Schema with a root object type is kept as given.

        Example:
            ```python
            Tool.from_schema("echo", "Echo text.", {"type": "object", "properties": {"text": {"type": "string"}}},
                             lambda text: text)
            ```
        """
        from ._jsonschema import compile_validator, normalize_schema

        if not isinstance(input_schema, Mapping):
            raise DefinitionError(
                f"tool {name!r}: input_schema must be a JSON object, got {type(input_schema).__name__}"
            )
        schema = normalize_schema(input_schema, name=name)

        def build() -> tuple[ValidatorFn, ValidatorFn]:
            check = compile_validator(schema, name=name)

            def validate_python(value: Any) -> Any:
                check(value)
                return value

            def validate_json(text: Any) -> Any:
                value = json.loads(text)
                check(value)
                return value

            return validate_json, validate_python

        return cls(
            name=name,
            description=description or "",
            input_schema=schema,
            handler=handler,
            kind="schema",
            build_validators=build,
            **options,
        )


def _split_options(options: ToolOptions, name: str, description: str) -> tuple[str, str, BehaviourOptions]:
    rest: dict[str, Any] = dict(options)
    return str(rest.pop("name", name)), str(rest.pop("description", description)), cast(BehaviourOptions, rest)


def _is_async(handler: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(type(handler).__call__)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _return_schema_hint(handler: Callable[..., Any]) -> Callable[[], dict[str, Any] | None]:
    def hint() -> dict[str, Any] | None:
        try:
            ret = inspect.signature(handler).return_annotation
            hints = getattr(handler, "__annotations__", {})
            ret = hints.get("return", ret)
        except (TypeError, ValueError):
            return None
        if isinstance(ret, str):
            return None
        return output_schema_for(ret)

    return hint


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(**options: Unpack[ToolOptions]) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None, /, **options: Unpack[ToolOptions]
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a `Tool`.

    Example:
        ```python
        @tool(read_only=True, subject="path")
        async def read(path: str) -> str:
            \"\"\"Read a file.

            Args:
                path: Where the file is.
            \"\"\"
            ...
        ```
    """
    if fn is not None:
        return Tool.from_function(fn, **options)

    def decorate(func: Callable[..., Any]) -> Tool:
        return Tool.from_function(func, **options)

    return decorate
