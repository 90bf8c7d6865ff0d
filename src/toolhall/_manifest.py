"""`WorkerSpec`: who a worker is and which toolboxes it needs, read from TOML, YAML or JSON."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ._errors import ManifestError

__all__ = ["WorkerSpec"]

_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,127}$"
_SUFFIXES = {".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".json": "json"}


def _describe(exc: ValidationError, where: str) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(WorkerSpec.model_fields)
            problems.append(f"unknown key {loc!r} (allowed keys: {allowed})")
        else:
            problems.append(f"{loc}: {err['msg']}")
    return f"invalid worker manifest {where}: " + "; ".join(problems)


class WorkerSpec(BaseModel):
    """A worker: its name, the domain toolboxes it needs, the runtime's built-in tools, its role.

    Example:
        ```python
        spec = WorkerSpec("reviewer", domain_toolboxes=["git"], builtin_tools=["WebSearch"], role="impl")
        same = WorkerSpec.load("workers/reviewer.toml")
        ```
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=_NAME)
    """The worker's name (also its memory folder and the `worker` recorded in logs)."""
    domain_toolboxes: tuple[str, ...] = ()
    """Names of the domain toolbox packages the worker needs, in the order they are added."""
    builtin_tools: tuple[str, ...] = ()
    """Tools the agent runtime provides itself (passed through untouched)."""
    role: str | None = None
    """A role that filters the resolved toolbox (`control`, `impl`, ...); None keeps every tool."""
    description: str = ""
    """What the worker does (shown by `toolhall resolve`)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Runtime-specific settings toolhall does not interpret (model, prompt, ...)."""

    def __init__(self, name: str | None = None, /, **data: Any) -> None:
        where = data.pop("_where", None)
        if name is not None:
            if "name" in data:
                raise ManifestError("WorkerSpec got the name twice: positionally and as name=")
            data["name"] = name
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ManifestError(_describe(exc, where or f"for worker {data.get('name', '?')!r}")) from None

    @field_validator("domain_toolboxes", "builtin_tools", mode="before")
    @classmethod
    def _names_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError("must be a list of names, not a single string")
        return value

    @field_validator("domain_toolboxes", "builtin_tools")
    @classmethod
    def _unique_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        seen: set[str] = set()
        for item in value:
            if not item.strip():
                raise ValueError("names must not be empty")
            if item in seen:
                raise ValueError(f"{item!r} is listed twice")
            seen.add(item)
        return value

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, default_name: str | None = None,
                     where: str = "(mapping)") -> WorkerSpec:
        """A spec from already-parsed data; `default_name` fills a missing `name`.

        Raises:
            ManifestError: a key is unknown or has the wrong type (names the key).
        """
        if not isinstance(data, Mapping):
            raise ManifestError(f"invalid worker manifest {where}: the top level must be a mapping of keys, "
                                f"found {type(data).__name__}")
        fields = {str(k): v for k, v in data.items()}
        if "name" not in fields and default_name is not None:
            fields["name"] = default_name
        fields.pop("_where", None)
        return cls(**fields, _where=where)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> WorkerSpec:
        """Read a worker manifest (`.toml`, `.yaml`/`.yml` or `.json`); `name` defaults to the file stem.

        Example:
            ```python
            spec = WorkerSpec.load("workers/reviewer.yaml")
            ```

        Raises:
            ManifestError: the file is missing, unreadable, not valid for its format, or has wrong keys.
        """
        file = Path(path)
        kind = _SUFFIXES.get(file.suffix.lower())
        if kind is None:
            raise ManifestError(f"worker manifest {file}: unknown file type {file.suffix!r}; "
                                f"use one of {', '.join(sorted(_SUFFIXES))}")
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ManifestError(f"worker manifest {file} cannot be read: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ManifestError(f"worker manifest {file} is not UTF-8 text: {exc.reason}") from None
        data = _parse(text, kind, file)
        return cls.from_mapping(data, default_name=file.stem, where=str(file))


def _parse(text: str, kind: str, file: Path) -> Any:
    try:
        if kind == "toml":
            return tomllib.loads(text)
        if kind == "json":
            return json.loads(text)
        return _parse_yaml(text, file)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"worker manifest {file} is not valid TOML: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ManifestError(f"worker manifest {file} is not valid JSON: {exc.msg} "
                            f"(line {exc.lineno}, column {exc.colno})") from None


def _parse_yaml(text: str, file: Path) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        data = YAML(typ="safe", pure=True).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ManifestError(f"worker manifest {file} is not valid YAML{where}: {exc.problem or exc.context}") from None
    except YAMLError as exc:
        raise ManifestError(f"worker manifest {file} is not valid YAML: {exc}") from None
    return {} if data is None else data
