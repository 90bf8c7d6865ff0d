"""A small toolbox with roles, served by `toolhall serve --toolbox tests.mcp.serve_tools:toolbox` in tests."""

from __future__ import annotations

from toolhall import Toolbox, tool


@tool(read_only=True)
def echo(text: str) -> str:
    """Echo the text (every role).

    Args:
        text: What to echo.
    """
    return text


@tool(read_only=True, roles={"reviewer"})
def review_notes() -> dict[str, object]:
    """Notes only reviewers may read."""
    return {"verdict": "approve", "comments": 2}


@tool(read_only=True, roles={"impl"})
def build_plan() -> str:
    """A plan only implementers may read."""
    return "step 1: write the code"


def toolbox() -> Toolbox:
    """The tools, in a new toolbox."""
    return Toolbox([echo, review_notes, build_plan])
