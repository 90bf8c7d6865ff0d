"""The public surface: DESIGN.md's names import from `toolhall` and say they live there."""

from __future__ import annotations

import dataclasses

import toolhall

DESIGN_NAMES = {
    "Approval", "Audio", "Image", "MissingToolboxError", "Policy", "PostgresLog", "Resource", "ResolvedToolSet",
    "Session", "SqliteLog", "Tool", "ToolCall", "ToolContext", "ToolError", "ToolResult", "Toolbox", "ToolhallError",
    "WorkerSpec", "Workspace", "resolve_toolset", "tool",
}  # fmt: skip


def test_all_is_sorted_and_holds_every_design_name() -> None:
    """`__all__` is sorted, and every name DESIGN.md promises is in it."""
    assert list(toolhall.__all__) == sorted(toolhall.__all__)
    assert DESIGN_NAMES <= set(toolhall.__all__)


def test_every_public_name_resolves_and_lives_in_toolhall() -> None:
    """Each name in `__all__` imports, and classes report `toolhall` as their module."""
    for name in toolhall.__all__:
        value = getattr(toolhall, name)
        if isinstance(value, type):
            assert value.__module__ == "toolhall", name


def test_every_exception_roots_at_toolhall_error_and_maps_to_a_code() -> None:
    """Every public exception is a ToolhallError, and the error map gives each a code."""
    from toolhall._errormap import error_from_exception

    for name in toolhall.__all__:
        value = getattr(toolhall, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, toolhall.ToolhallError), name
            if value is not toolhall.ToolCallError:  # carries its own code, tested in test_invoke
                assert error_from_exception(value.__new__(value)).code


def test_public_dataclasses_are_keyword_only() -> None:
    """Public value classes take keyword arguments (Approval's decision is positional, as DESIGN shows it)."""
    for name in sorted(set(toolhall.__all__) - {"Approval"}):
        value = getattr(toolhall, name)
        if isinstance(value, type) and dataclasses.is_dataclass(value):
            fields = dataclasses.fields(value)
            assert all(f.kw_only for f in fields if f.init), name
