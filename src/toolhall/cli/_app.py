"""What the commands share: configuration → workspace, toolbox, log store, session."""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._config import Config, load_config
from .._errors import ConfigError
from .._toolbox import Toolbox
from .._workspace import Workspace

__all__ = ["AppState", "load_app", "open_toolbox"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AppState:
    """The configuration and the workspace it names."""

    config: Config
    workspace: Workspace

    def log_store(self) -> Any:
        """The configured log store (PostgreSQL when a DSN is set, else SQLite in the workspace)."""
        from ..log import PostgresLog, SqliteLog

        store = self.config.store
        options: dict[str, Any] = {
            "max_output_bytes": store.max_output_bytes,
            "redact_fields": store.redact_fields,
            "redact_patterns": store.redact_patterns,
        }
        if store.postgres:
            return PostgresLog(store.postgres, **options)
        path = Path(store.sqlite)
        if not path.is_absolute():
            path = Path(self.workspace.root) / path
        return SqliteLog(path, **options)

    def policy(self) -> Any:
        """The configured policy."""
        from ..policy import Policy

        rules = self.config.policy
        return Policy(allow=rules.allow, ask=rules.ask, deny=rules.deny)

    def standard_toolbox(self) -> Toolbox:
        """The standard toolbox for the workspace, shaped by `[tools.*]`."""
        from ..tools import standard

        cfg = self.config
        options: dict[str, dict[str, Any]] = {name: cfg.tool_options(name) for name in cfg.tools}
        sql_url = options.get("sql", {}).pop("url", None) if "sql" in options else None
        return standard(
            self.workspace,
            shell=cfg.tool_enabled("shell"),
            http=cfg.tool_enabled("http"),
            codegraph=cfg.tool_enabled("codegraph"),
            sql_url=sql_url if cfg.tool_enabled("sql") else None,
            options=options,
        )


def load_app(config_path: str | None = None, workspace: str | None = None) -> AppState:
    """Read the configuration and open the workspace (`--workspace` wins over `[workspace] root`)."""
    config = load_config(config_path)
    base = Path(config.source).parent if config.source else Path.cwd()
    root = Path(workspace) if workspace else base / config.workspace.root
    if not root.is_dir():
        raise ConfigError(f"workspace {os.fspath(root)!r} is not a folder")
    ws = Workspace(
        root.resolve(),
        deny_read=config.workspace.deny_read,
        deny_write=config.workspace.deny_write,
        read_only=config.workspace.read_only,
    )
    return AppState(config=config, workspace=ws)


def load_toolbox(reference: str) -> Toolbox:
    """The toolbox `MODULE:NAME` names: a `Toolbox`, or a zero-argument function returning one."""
    module_name, sep, attr = reference.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--toolbox {reference!r}: expected MODULE:NAME, e.g. mypkg.tools:toolbox")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"--toolbox {reference!r}: {exc}") from exc
    found = target() if callable(target) and not isinstance(target, Toolbox) else target
    if not isinstance(found, Toolbox):
        raise ConfigError(f"--toolbox {reference!r} is a {type(found).__name__}, not a Toolbox")
    return found


@contextlib.asynccontextmanager
async def open_toolbox(app: AppState, *, base: Toolbox | None = None) -> AsyncIterator[Toolbox]:
    """The standard toolbox (or `base`) plus the tools of every `[[mcp.servers]]`, connected for the block."""
    toolbox = base if base is not None else app.standard_toolbox()
    servers = app.config.mcp.servers
    if not servers:
        yield toolbox
        return
    from ..mcp.client import MCPToolbox

    async with contextlib.AsyncExitStack() as stack:
        for server in servers:
            imported = await stack.enter_async_context(
                MCPToolbox(
                    command=server.command,
                    url=server.url,
                    headers=server.headers,
                    env=server.env,
                    prefix=server.prefix,
                    trusted=server.trusted,
                    name=server.name,
                )
            )
            toolbox = toolbox | imported
        yield toolbox
