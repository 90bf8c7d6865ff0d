"""toolhall: the tool layer for LLM agents.

Define tools from typed functions, pydantic models or raw JSON Schema; organise them in toolboxes; export
them in each provider's format; and call them safely, with every failure returned as a result.
"""

from ._codes import ErrorCode as ErrorCode
from ._context import CancelSignal as CancelSignal
from ._context import ToolContext as ToolContext
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
    "Resource",
    "ResolveError",
    "ResolvedToolSet",
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

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("toolhall._"):
        try:
            _obj.__module__ = "toolhall"
        except (AttributeError, TypeError):
            pass
del _name, _obj
