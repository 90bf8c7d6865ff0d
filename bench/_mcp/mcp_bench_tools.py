"""The trivial tool `bench/mcp.py` serves, once as a toolhall toolbox and once on the SDK's own `MCPServer`.

`toolhall serve --toolbox mcp_bench_tools:toolbox` (with bench/_mcp/ on PYTHONPATH, never bench/ itself,
whose `mcp.py` and `http.py` would shadow the packages) serves the toolhall side;
`python bench/_mcp/mcp_bench_tools.py stdio` or `... http PORT` runs the SDK side.
"""

from __future__ import annotations

import sys

from toolhall import Toolbox, tool


def _add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def toolbox() -> Toolbox:
    """The toolhall side: `add`, read-only (so the session runs it without asking)."""
    return Toolbox([tool(name="add", read_only=True)(_add)])


def _serve_sdk(transport: str, port: int) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench-sdk")
    server.tool(name="add")(_add)
    if transport == "http":
        server.run(transport="streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()


if __name__ == "__main__":
    _serve_sdk(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
