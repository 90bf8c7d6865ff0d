"""Every exception toolhall raises, rooted at one class.

```text
ToolhallError
├── DefinitionError           bad @tool / from_*: names the function and the parameter
│   └── SchemaError           JSON Schema invalid, or not expressible for a format
├── ResolveError
│   ├── MissingToolboxError   names every missing package
│   └── ManifestError         bad WorkerSpec file
├── ArgumentsError            arguments that fail a tool's input schema (also a ValueError; → invalid_input)
├── ExportError               a toolbox cannot be exported in a provider's format
├── ParseError                a provider response that cannot be read
├── WorkspaceError            a path a tool may not use (becomes a `denied` result)
│   ├── OutsideWorkspaceError
│   └── DeniedPathError
├── PolicyError               bad rule syntax
├── ConfigError               bad toolhall.toml (names the key)
├── LogStoreError             never escapes a call; recorded and swallowed
└── ToolCallError             raised *inside* a tool to fail with a chosen code and details
```

Inside a call every exception becomes a `ToolResult` error; outside a call (building a toolbox, resolving,
exporting) they raise with a message that names the thing at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._codes import ErrorCode

__all__ = [
    "ArgumentsError",
    "ConfigError",
    "DefinitionError",
    "DeniedPathError",
    "ExportError",
    "LogStoreError",
    "ManifestError",
    "MissingToolboxError",
    "OutsideWorkspaceError",
    "ParseError",
    "PolicyError",
    "ResolveError",
    "SchemaError",
    "ToolCallError",
    "ToolhallError",
    "WorkspaceError",
]


class ToolhallError(Exception):
    """The root of every exception toolhall raises."""


class DefinitionError(ToolhallError):
    """A tool definition that cannot be used: names the function and each bad parameter."""


class SchemaError(DefinitionError):
    """A JSON Schema that is invalid, or that a format cannot express."""


class ResolveError(ToolhallError):
    """A worker's tool set cannot be assembled."""


class MissingToolboxError(ResolveError):
    """One or more domain toolboxes named by a worker do not exist."""

    def __init__(self, missing: list[str], available: list[str]) -> None:
        self.missing = list(missing)
        self.available = list(available)
        have = ", ".join(sorted(self.available)) or "none"
        super().__init__(f"missing domain toolbox(es): {', '.join(self.missing)}; available toolboxes: {have}")


class ManifestError(ResolveError):
    """A worker manifest that cannot be read or has wrong keys."""


class ArgumentsError(ToolhallError, ValueError):
    """Arguments that do not match a tool's input schema; `errors` lists each problem with its JSON path.

    Example:
        ```python
        ArgumentsError(["$.a: \"x\" is not of type \"integer\""], tool="add")
        ```
    """

    def __init__(self, errors: list[str], *, tool: str | None = None) -> None:
        self.errors = list(errors)
        self.tool = tool
        head = f"invalid arguments for tool {tool!r}" if tool else "invalid arguments"
        super().__init__(f"{head}: " + "; ".join(self.errors))


class ExportError(ToolhallError):
    """A tool or toolbox that cannot be exported in the requested format."""


class ParseError(ToolhallError):
    """A provider response whose tool calls cannot be read."""


class WorkspaceError(ToolhallError):
    """A path a tool may not use."""


class OutsideWorkspaceError(WorkspaceError):
    """The path resolves outside the workspace root."""


class DeniedPathError(WorkspaceError):
    """The path is inside the workspace but matches a deny rule (or is not a regular file or folder)."""


class PolicyError(ToolhallError):
    """A policy rule that cannot be parsed."""


class ConfigError(ToolhallError):
    """A configuration file or value that is wrong: the message names the key."""


class LogStoreError(ToolhallError):
    """The log store failed; recorded and swallowed, never fails a call."""


class ToolCallError(ToolhallError):
    """Raise inside a tool to fail the call with a chosen error code, details and partial data.

    Example:
        ```python
        raise ToolCallError("no match for old_str", code="execution_error", details={"reason": "no_match"})
        ```
    """

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode = "execution_error",
        details: Mapping[str, Any] | None = None,
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code: ErrorCode = code
        self.details = dict(details) if details is not None else None
        self.data = data
