"""Assemble a worker's tool set: base toolbox + context toolbox + the domain toolboxes it names.

Domain toolbox packages are looked up, in this order, in a given mapping, in folders of toolbox modules
(`<folder>/<name>.py` or `<folder>/<name>/__init__.py` defining `toolbox`), and through the
`toolhall.toolboxes` entry-point group. Each is a `Toolbox` or a zero-argument factory returning one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeAlias

from ._errors import MissingToolboxError, ResolveError, ToolhallError
from ._manifest import WorkerSpec
from ._toolbox import Toolbox

__all__ = ["ENTRY_POINT_GROUP", "Packages", "ResolvedToolSet", "resolve_toolset"]

ENTRY_POINT_GROUP = "toolhall.toolboxes"
"""The entry-point group where installed packages offer domain toolboxes."""

ToolboxSource: TypeAlias = Toolbox | Callable[[], Toolbox]
"""A domain toolbox package: a Toolbox, or a zero-argument factory returning one."""
_PackageSource: TypeAlias = Mapping[str, ToolboxSource] | str | os.PathLike[str]
Packages: TypeAlias = _PackageSource | Sequence[_PackageSource] | None
"""A mapping of name → package, a folder of toolbox modules, or a list of those."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedToolSet:
    """A worker's tools, ready to hand to a Session or an MCP server.

    Example:
        ```python
        resolved = resolve_toolset(WorkerSpec.load("reviewer.toml"), {"git": git_toolbox}, project=".")
        session = Session(resolved.toolbox, worker="reviewer")
        ```
    """

    toolbox: Toolbox
    """Base, context and domain tools, in that order (filtered by the worker's role)."""
    builtin_tools: list[str] = field(default_factory=list)
    """Tools the agent runtime provides itself, passed through untouched."""
    sources: dict[str, str] = field(default_factory=dict)
    """Tool name → the toolbox it came from (`memory`, `artifacts`, `decisions`, `context`, a package)."""

    def rows(self) -> list[dict[str, Any]]:
        """One row per tool (name, source, roles, description's first line), for display."""
        return [
            {"name": t.name, "source": self.sources.get(t.name, "?"), "roles": sorted(t.roles),
             "description": (t.description or "").strip().splitlines()[0] if t.description else ""}
            for t in self.toolbox
        ]


class _Catalog:
    """Where domain toolbox packages come from: mappings, folders of modules, entry points."""

    def __init__(self, packages: Packages, *, entry_points: bool) -> None:
        self.mapping: dict[str, ToolboxSource] = {}
        self.folders: list[Path] = []
        items: Sequence[Any]
        if packages is None:
            items = []
        elif isinstance(packages, Mapping | str | os.PathLike):
            items = [packages]
        else:
            items = list(packages)
        for item in items:
            if isinstance(item, Mapping):
                for name, value in item.items():
                    self.mapping.setdefault(str(name), value)
            elif isinstance(item, str | os.PathLike):
                folder = Path(os.fspath(item)).expanduser()
                if not folder.is_dir():
                    raise ResolveError(f"toolbox folder {folder} does not exist or is not a folder")
                self.folders.append(folder)
            else:
                raise ResolveError(f"packages must be a mapping of name → Toolbox, a folder, or a list of those; "
                                   f"got {type(item).__name__}")
        self.entry_points = (
            {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)} if entry_points else {}
        )

    def _module_file(self, name: str) -> Path | None:
        for folder in self.folders:
            for candidate in (folder / f"{name}.py", folder / name / "__init__.py"):
                if candidate.is_file():
                    return candidate
        return None

    def available(self) -> list[str]:
        names = set(self.mapping) | set(self.entry_points)
        for folder in self.folders:
            for entry in folder.iterdir():
                if entry.name.startswith(("_", ".")):
                    continue
                if entry.suffix == ".py":
                    names.add(entry.stem)
                elif (entry / "__init__.py").is_file():
                    names.add(entry.name)
        return sorted(names)

    def load(self, name: str) -> Toolbox | None:
        """The package's toolbox, or None when no source has it."""
        if name in self.mapping:
            return _materialise(name, self.mapping[name], "the packages mapping")
        file = self._module_file(name)
        if file is not None:
            return _materialise(name, _import_file(name, file), str(file))
        ep = self.entry_points.get(name)
        if ep is not None:
            try:
                obj = ep.load()
            except Exception as exc:
                raise ResolveError(f"toolbox package {name!r} (entry point {ep.value!r}) cannot be imported: "
                                   f"{type(exc).__name__}: {exc}") from exc
            return _materialise(name, obj, f"entry point {ep.value!r}")
        return None


def _import_file(name: str, file: Path) -> ModuleType:
    digest = hashlib.sha1(str(file.resolve()).encode(), usedforsecurity=False).hexdigest()[:10]
    module_name = f"_toolhall_toolboxes.{re.sub(r'[^0-9A-Za-z_]', '_', name)}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise ResolveError(f"toolbox module {file} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # pydantic and dataclasses look their module up here
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise ResolveError(f"toolbox module {file} failed to import: {type(exc).__name__}: {exc}") from exc
    return module


def _materialise(name: str, obj: Any, where: str) -> Toolbox:
    if isinstance(obj, ModuleType):
        if not hasattr(obj, "toolbox"):
            raise ResolveError(f"toolbox package {name!r} ({where}) defines no `toolbox` "
                               "(a Toolbox or a zero-argument function returning one)")
        obj = obj.toolbox
    if isinstance(obj, Toolbox):
        return obj
    if callable(obj):
        try:
            made = obj()
        except ToolhallError:
            raise
        except Exception as exc:
            raise ResolveError(f"toolbox package {name!r} ({where}) failed to build: "
                               f"{type(exc).__name__}: {exc}") from exc
        if isinstance(made, Toolbox):
            return made
        raise ResolveError(f"toolbox package {name!r} ({where}) returned {type(made).__name__}, not a Toolbox")
    raise ResolveError(f"toolbox package {name!r} ({where}) is a {type(obj).__name__}, "
                       "not a Toolbox or a function returning one")


def _project_key(folder: Path) -> str:
    key = re.sub(r"[^A-Za-z0-9_.\-]", "-", folder.name).lstrip(".-")
    return key[:128] or "project"


def _base(worker: WorkerSpec, project: Path, meeting: str | None,
          memory_root: str | os.PathLike[str] | None) -> list[tuple[str, Toolbox]]:
    # Imported here: the standard tools sit a layer above resolution, and `import toolhall` stays light.
    from .tools import artifacts, decisions, memory

    return [
        ("memory", memory.toolbox(root=memory_root, project=_project_key(project), worker=worker.name)),
        ("artifacts", artifacts.toolbox(project=project)),
        ("decisions", decisions.toolbox(root=project / ".toolhall", meeting=meeting)),
    ]


def _coerce_worker(worker: WorkerSpec | str | os.PathLike[str] | Mapping[str, Any]) -> WorkerSpec:
    if isinstance(worker, WorkerSpec):
        return worker
    if isinstance(worker, str | os.PathLike):
        return WorkerSpec.load(worker)
    if isinstance(worker, Mapping):
        return WorkerSpec.from_mapping(worker)
    raise ResolveError(f"worker must be a WorkerSpec, a manifest path or a mapping; got {type(worker).__name__}")


def resolve_toolset(
    worker: WorkerSpec | str | os.PathLike[str] | Mapping[str, Any],
    packages: Packages = None,
    context: Toolbox | None = None,
    *,
    project: str | os.PathLike[str] | None = None,
    meeting: str | None = None,
    memory_root: str | os.PathLike[str] | None = None,
    base: Toolbox | None = None,
    entry_points: bool = True,
) -> ResolvedToolSet:
    """Assemble a worker's tools: base (memory, artifacts, decisions) + `context` + its domain toolboxes.

    Args:
        worker: The worker (a `WorkerSpec`, or a manifest path / mapping to read one from).
        packages: Domain toolbox packages: a mapping of name → Toolbox (or factory), a folder of toolbox
            modules, or a list of those; installed `toolhall.toolboxes` entry points are searched last.
        context: Tools for the context the worker runs in (a meeting, a chain), added after the base.
        project: The project folder (artifacts, decision log, memory key); default the current folder.
        meeting: The meeting id decisions are recorded under (default: the session id at call time).
        memory_root: Where memory lives (default `~/.toolhall/memory`).
        base: A ready base toolbox to use instead of building memory, artifacts and decisions.
        entry_points: Whether to search installed entry points.

    Raises:
        MissingToolboxError: domain toolboxes not found (names every missing one and every available one).
        ResolveError: two toolboxes provide the same tool name (names both), or a package fails to load.
        ManifestError: the worker manifest is invalid.

    Example:
        ```python
        resolved = resolve_toolset(WorkerSpec("coder", domain_toolboxes=["git"]), {"git": git_tools})
        resolved.sources["read_memory"]  # "memory"
        ```
    """
    spec = _coerce_worker(worker)
    folder = Path(os.fspath(project)).expanduser().absolute() if project is not None else Path.cwd()
    parts = [("base", base)] if base is not None else _base(spec, folder, meeting, memory_root)
    if context is not None:
        parts.append((context.name or "context", context))
    catalog = _Catalog(packages, entry_points=entry_points)
    missing = []
    for name in spec.domain_toolboxes:
        loaded = catalog.load(name)
        if loaded is None:
            missing.append(name)
        else:
            parts.append((name, loaded))
    if missing:
        raise MissingToolboxError(missing, catalog.available())
    return _assemble(spec, parts)


def _assemble(spec: WorkerSpec, parts: list[tuple[str, Toolbox]]) -> ResolvedToolSet:
    sources: dict[str, str] = {}
    clashes: list[str] = []
    merged = Toolbox(name=spec.name)
    for label, box in parts:
        for t in box:
            if t.name in sources:
                clashes.append(f"tool {t.name!r} is provided by both {sources[t.name]!r} and {label!r}")
                continue
            sources[t.name] = label
            merged.register(t)
    if clashes:
        raise ResolveError("; ".join(clashes) + " (prefix one of them, e.g. toolbox.prefixed('name_'), "
                           "or leave one out)")
    if spec.role is not None:
        merged = merged.for_role(spec.role)
        sources = {name: sources[name] for name in merged.names()}
    builtin_clash = [b for b in spec.builtin_tools if b in sources]
    if builtin_clash:
        raise ResolveError("built-in tool(s) " + ", ".join(f"{b!r} (also from {sources[b]!r})" for b in builtin_clash)
                           + f" of worker {spec.name!r} clash with toolbox tools; prefix the toolbox")
    return ResolvedToolSet(toolbox=merged, builtin_tools=list(spec.builtin_tools), sources=sources)
