"""toolhall: the tool layer for LLM agents.

Define tools from typed functions, pydantic models or raw JSON Schema; organise them in toolboxes; export
them in each provider's format; and call them safely, with every failure returned as a result.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Exceptions load eagerly (they are cheap), so a traceback names toolhall.DefinitionError even when the
# exception was raised before anyone touched the name.
from ._errors import ConfigError as ConfigError
from ._errors import DefinitionError as DefinitionError
from ._errors import DeniedPathError as DeniedPathError
from ._errors import ExportError as ExportError
from ._errors import LogStoreError as LogStoreError
from ._errors import ManifestError as ManifestError
from ._errors import MissingToolboxError as MissingToolboxError
from ._errors import OutsideWorkspaceError as OutsideWorkspaceError
from ._errors import ParseError as ParseError
from ._errors import PolicyError as PolicyError
from ._errors import ResolveError as ResolveError
from ._errors import SchemaError as SchemaError
from ._errors import ToolCallError as ToolCallError
from ._errors import ToolhallError as ToolhallError
from ._errors import WorkspaceError as WorkspaceError

if TYPE_CHECKING:
    from ._codes import ErrorCode as ErrorCode
    from ._context import CancelSignal as CancelSignal
    from ._context import ToolContext as ToolContext
    from ._manifest import WorkerSpec as WorkerSpec
    from ._resolve import ResolvedToolSet as ResolvedToolSet
    from ._resolve import resolve_toolset as resolve_toolset
    from ._result import Audio as Audio
    from ._result import Image as Image
    from ._result import Resource as Resource
    from ._result import Text as Text
    from ._result import ToolCall as ToolCall
    from ._result import ToolError as ToolError
    from ._result import ToolResult as ToolResult
    from ._session import Session as Session
    from ._tool import Tool as Tool
    from ._tool import ToolAnnotations as ToolAnnotations
    from ._tool import ToolOptions as ToolOptions
    from ._tool import tool as tool
    from ._toolbox import Toolbox as Toolbox
    from ._workspace import Workspace as Workspace
    from .log import CallRecord as CallRecord
    from .log import LogStore as LogStore
    from .log import PostgresLog as PostgresLog
    from .log import SqliteLog as SqliteLog
    from .policy import Approval as Approval
    from .policy import Policy as Policy

__version__ = "0.1.0"

# Where each public name lives. Names load on first use (PEP 562), so `import toolhall` stays light: the
# modules behind them pull in pydantic's model machinery, anyio, pathspec, sqlite3 and more. A new public name
# goes in three places: the TYPE_CHECKING imports above (what mypy sees), this table, and __all__.
_LAZY: dict[str, str] = {
    "ErrorCode": "._codes",
    "CancelSignal": "._context",
    "ToolContext": "._context",
    "WorkerSpec": "._manifest",
    "ResolvedToolSet": "._resolve",
    "resolve_toolset": "._resolve",
    "Audio": "._result",
    "Image": "._result",
    "Resource": "._result",
    "Text": "._result",
    "ToolCall": "._result",
    "ToolError": "._result",
    "ToolResult": "._result",
    "Session": "._session",
    "Tool": "._tool",
    "ToolAnnotations": "._tool",
    "ToolOptions": "._tool",
    "tool": "._tool",
    "Toolbox": "._toolbox",
    "Workspace": "._workspace",
    "CallRecord": ".log",
    "LogStore": ".log",
    "PostgresLog": ".log",
    "SqliteLog": ".log",
    "Approval": ".policy",
    "Policy": ".policy",
}

__all__ = [
    "Approval",
    "Audio",
    "CallRecord",
    "CancelSignal",
    "ConfigError",
    "DefinitionError",
    "DeniedPathError",
    "ErrorCode",
    "ExportError",
    "Image",
    "LogStore",
    "LogStoreError",
    "ManifestError",
    "MissingToolboxError",
    "OutsideWorkspaceError",
    "ParseError",
    "Policy",
    "PolicyError",
    "PostgresLog",
    "ResolveError",
    "ResolvedToolSet",
    "Resource",
    "SchemaError",
    "Session",
    "SqliteLog",
    "Text",
    "Tool",
    "ToolAnnotations",
    "ToolCall",
    "ToolCallError",
    "ToolContext",
    "ToolError",
    "ToolOptions",
    "ToolResult",
    "Toolbox",
    "ToolhallError",
    "WorkerSpec",
    "Workspace",
    "WorkspaceError",
    "resolve_toolset",
    "tool",
]

if not TYPE_CHECKING:  # hidden from mypy, so a misspelled `toolhall.Tol` is still an error there

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'toolhall' has no attribute {name!r}")
        loaded = import_module(module, __name__)
        # Publish every public name of that module at once, so later lookups are plain module attributes.
        for public, home in _LAZY.items():
            if home == module:
                globals()[public] = _rehomed(getattr(loaded, public))
        return globals()[name]


def _rehomed(value: Any) -> Any:
    """The public home, as httpx does: reprs, docs and tracebacks say toolhall.Tool, not toolhall._tool.Tool."""
    module = getattr(value, "__module__", "")
    if module.startswith("toolhall.") and "._" in module:
        try:
            value.__module__ = "toolhall"
        except (AttributeError, TypeError):
            pass
    return value


for _name in __all__:
    if _name in globals():
        _rehomed(globals()[_name])
del _name


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
