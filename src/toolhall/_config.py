"""`toolhall.toml` → a typed `Config`; the one module that reads configuration files.

Unknown keys and wrong types are `ConfigError`s naming the key (and its line when it came from a file).
`TOOLHALL_<SECTION>__<KEY>` environment variables override the file (double underscore for nesting; values
are parsed as JSON when they can be, so `TOOLHALL_TOOLS__HTTP__ALLOW_HOSTS='["api.example.com"]'` works).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._errors import ConfigError

__all__ = ["CONFIG_FILE", "Config", "McpServerConfig", "load_config"]

CONFIG_FILE = "toolhall.toml"
TOOL_MODULES = ("files", "shell", "http", "sql", "codegraph", "memory", "artifacts", "decisions", "chains")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkspaceConfig(_Section):
    """`[workspace]`: the folder tools may touch."""

    root: str = "."
    deny_read: list[str] = Field(default_factory=list)
    deny_write: list[str] = Field(default_factory=list)
    read_only: bool = False


class PolicyConfig(_Section):
    """`[policy]`: rules as `tool` or `tool(pattern)`."""

    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class StoreConfig(_Section):
    """`[store]`: where calls are logged (SQLite path, or a PostgreSQL DSN)."""

    sqlite: str = ".toolhall/state.db"
    postgres: str | None = None
    max_output_bytes: int = Field(default=10 * 1024 * 1024, ge=0)
    redact_fields: list[str] = Field(default_factory=list)
    redact_patterns: list[str] = Field(default_factory=list)


class LimitsConfig(_Section):
    """`[limits]`: default timeouts and output caps."""

    timeout: float | None = Field(default=120.0, gt=0)
    max_output_chars: int = Field(default=50_000, gt=0)


class ServeConfig(_Section):
    """`[serve]`: the MCP server."""

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    token: str | None = None
    role: str | None = None
    approval: Literal["elicit", "deny", "queue"] = "elicit"
    approval_timeout: float = Field(default=300.0, gt=0)
    console: bool = True


class McpServerConfig(_Section):
    """`[[mcp.servers]]`: an MCP server whose tools toolhall imports (and re-serves behind its policy)."""

    name: str
    command: list[str] | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    prefix: str | None = None
    trusted: bool = False


class McpConfig(_Section):
    """`[mcp]`: servers to import."""

    servers: list[McpServerConfig] = Field(default_factory=list)


class Config(_Section):
    """The whole configuration, with defaults for everything (no file is needed)."""

    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    tools: dict[
        Literal["files", "shell", "http", "sql", "codegraph", "memory", "artifacts", "decisions", "chains"],
        dict[str, Any],
    ] = Field(default_factory=dict)
    role: str | None = None
    source: str | None = Field(default=None, exclude=True)
    """The file this came from, when there was one."""

    def tool_options(self, module: str) -> dict[str, Any]:
        """The `[tools.<module>]` options, without the `enabled` switch."""
        return {k: v for k, v in self.tools.get(module, {}).items() if k != "enabled"}  # type: ignore[call-overload]

    def tool_enabled(self, module: str, default: bool = True) -> bool:
        """Whether `[tools.<module>] enabled` switches a toolbox on or off."""
        value = self.tools.get(module, {}).get("enabled", default)  # type: ignore[call-overload]
        return bool(value)


def _env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for key, raw in environ.items():
        if not key.startswith("TOOLHALL_") or "__" not in key:
            continue
        path = [part.lower() for part in key[len("TOOLHALL_") :].split("__")]
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        node = overrides
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return overrides


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _line_of(text: str, loc: tuple[Any, ...]) -> int | None:
    keys = [str(part) for part in loc if not isinstance(part, int)]
    if not keys:
        return None
    last = re.escape(keys[-1])
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(rf"\s*(\"?{last}\"?\s*=|\[+\s*[\w.]*{last}\s*\]+)", line):
            return number
    return None


def _describe(exc: ValidationError, source: str | None, text: str) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        key = ".".join(str(p) for p in loc)
        where = f" (line {line})" if source and (line := _line_of(text, loc)) else ""
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        problems.append(f"{key}{where}: {msg}")
    origin = source or "configuration"
    return f"{origin}: " + "; ".join(problems)


def load_config(
    path: str | Path | None = None, *, cwd: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> Config:
    """Read `toolhall.toml` (the given file, or the one in `cwd` if present) plus environment overrides.

    Example:
        ```python
        config = load_config()  # ./toolhall.toml if present, defaults otherwise
        config.serve.port
        ```
    """
    environ = os.environ if environ is None else environ
    base = Path(cwd) if cwd is not None else Path.cwd()
    file = Path(path) if path is not None else base / CONFIG_FILE
    data: dict[str, Any] = {}
    text = ""
    source: str | None = None
    if path is not None or file.exists():
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read configuration file {file}: {exc.strerror or exc}") from exc
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file}: not valid TOML: {exc}") from exc
        source = str(file)
    data = _merge(data, _env_overrides(environ))
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source, text)) from exc
    return config.model_copy(update={"source": source})
