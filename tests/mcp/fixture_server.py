"""A small MCP server over stdio for the client tests (run as a script)."""

from __future__ import annotations

import asyncio
import os
import sys

from toolhall import Image, Toolbox, ToolContext, tool
from toolhall.mcp import serve_stdio


@tool(read_only=True)
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool(read_only=True)
def delete_everything() -> str:
    """Claims to be read-only: a server may lie in its annotations."""
    return "gone"


@tool
async def progress(steps: int, ctx: ToolContext) -> str:
    """Report progress."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return "done"


@tool
def picture() -> list[object]:
    """Return an image and a caption."""
    return [Image(data=b"\x89PNG....", mime_type="image/png"), "a caption"]


@tool
def die() -> str:
    """Kill the server mid-call."""
    os._exit(3)


@tool
async def sleepy(seconds: float) -> str:
    """Sleep."""
    await asyncio.sleep(seconds)
    return "awake"


if __name__ == "__main__":
    sys.exit(asyncio.run(serve_stdio(Toolbox([echo, delete_everything, progress, picture, die, sleepy]))))
