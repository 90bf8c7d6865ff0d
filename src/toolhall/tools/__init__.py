"""The standard toolboxes: each module offers a `toolbox(...)` factory taking its configuration.

`standard(workspace)` assembles the default set that `toolhall serve` offers for a folder.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._errors import ConfigError, ToolhallError
from .._toolbox import Toolbox
from .._workspace import Workspace

__all__ = ["standard"]


def _build(module: str, fixed: Mapping[str, Any], options: Mapping[str, Any]) -> Toolbox:
    factory: Callable[..., Toolbox] = importlib.import_module(f"{__name__}.{module}").toolbox
    params = inspect.signature(factory).parameters
    allowed = [name for name in params if name not in fixed]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError(
            f"[tools.{module}]: unknown option(s) {', '.join(unknown)}; allowed: {', '.join(allowed) or 'none'}"
        )
    try:
        return factory(**{**options, **fixed})
    except (TypeError, ValueError, ToolhallError) as exc:
        raise ConfigError(f"[tools.{module}]: {exc}") from exc


def standard(
    workspace: Workspace | str | os.PathLike[str],
    *,
    shell: bool = True,
    http: bool = True,
    sql_url: str | None = None,
    codegraph: bool = True,
    memory_root: str | os.PathLike[str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> Toolbox:
    """The default toolbox for a folder: files, shell (`run_command` only), http, codegraph, memory, artifacts,
    decisions, and sql when a URL is given.

    `options` maps a module name to its factory's options (the `[tools.<module>]` sections of `toolhall.toml`).

    Example:
        ```python
        tb = standard(".", http=False)
        tb.names()[:3]  # ['read_file', 'write_file', 'append_file']
        ```
    """
    ws = Workspace.coerce(workspace)
    opts = {name: dict(values) for name, values in (options or {}).items()}
    root = Path(ws.root)
    parts = [_build("files", {"workspace": ws}, opts.get("files", {}))]
    if shell:
        shell_opts = opts.get("shell", {})
        parts.append(_build("shell", {"workspace": ws}, shell_opts))
    if http:
        parts.append(_build("http", {}, opts.get("http", {})))
    if sql_url or opts.get("sql", {}).get("url"):
        sql_opts = dict(opts.get("sql", {}))
        sql_opts.setdefault("url", sql_url)
        parts.append(_build("sql", {}, sql_opts))
    if codegraph:
        parts.append(_build("codegraph", {"workspace": ws}, opts.get("codegraph", {})))
    memory_opts = dict(opts.get("memory", {}))
    memory_opts.setdefault("project", root.name or "root")
    parts.append(_build("memory", {"root": memory_root} if memory_root is not None else {}, memory_opts))
    parts.append(_build("artifacts", {"project": root}, opts.get("artifacts", {})))
    parts.append(_build("decisions", {"root": root / ".toolhall"}, opts.get("decisions", {})))
    combined = Toolbox(name="standard")
    for part in parts:
        combined.register(*part)
    return combined
