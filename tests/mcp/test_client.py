"""Importing an MCP server's tools: MCPToolbox over stdio against a real server process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from toolhall import Image, Toolbox, ToolhallError
from toolhall.mcp.client import UNTRUSTED_TAG, MCPToolbox, connect

pytestmark = pytest.mark.anyio

SERVER = [sys.executable, str(Path(__file__).with_name("fixture_server.py"))]


async def test_tools_are_imported_with_schemas_and_annotations() -> None:
    """Every server tool becomes a local tool with its schema, annotations, a prefix and the untrusted tag."""
    async with MCPToolbox(command=SERVER, prefix="srv_") as tb:
        assert tb.names() == [
            "srv_echo",
            "srv_delete_everything",
            "srv_progress",
            "srv_picture",
            "srv_die",
            "srv_sleepy",
        ]
        echo = tb["srv_echo"]
        assert echo.input_schema["properties"]["text"]["type"] == "string"
        assert echo.annotations.read_only is True
        assert UNTRUSTED_TAG in echo.tags
        result = await tb.call("srv_echo", {"text": "hello"})
        assert result.ok and result.output == "hello"


async def test_arguments_are_validated_locally_against_the_raw_schema() -> None:
    """A wrong type is refused locally with `invalid_input`, before it reaches the server."""
    async with MCPToolbox(command=SERVER) as tb:
        result = await tb.call("echo", {"text": 3})
        assert result.error is not None and result.error.code == "invalid_input"


async def test_trusted_servers_lose_the_untrusted_tag() -> None:
    """A server marked trusted imports tools without the untrusted tag."""
    async with connect(command=SERVER, trusted=True) as tb:
        assert all(UNTRUSTED_TAG not in t.tags for t in tb)


async def test_content_parts_and_progress_are_carried_over() -> None:
    """Images come back as content parts; progress reaches the local context."""
    from toolhall import ToolContext

    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    async with MCPToolbox(command=SERVER) as tb:
        pic = await tb.call("picture")
        assert isinstance(pic.content[0], Image) and pic.content[0].mime_type == "image/png"
        done = await tb.call("progress", {"steps": 3}, context=ToolContext(progress=progress))
        assert done.output == "done"
        assert seen[-1] == (3, 3, "step 3")


async def test_server_death_fails_the_call_then_reconnects() -> None:
    """A call in flight when the server dies gets a clear error; the next call reconnects."""
    async with MCPToolbox(command=SERVER) as tb:
        died = await tb.call("die")
        assert died.error is not None and died.error.details == {"reason": "disconnected"}
        assert "failed during die" in died.error.message
        again = await tb.call("echo", {"text": "back"})
        assert again.ok and again.output == "back"
        assert tb.connections == 2


async def test_imported_tools_combine_with_local_ones() -> None:
    """Imported tools are ordinary tools: they merge into another toolbox and run from there."""
    from toolhall import tool

    local = Toolbox([tool(name="local")(lambda: "here")])
    async with MCPToolbox(command=SERVER, prefix="r_") as remote:
        combined = local | remote
        assert (await combined.call("r_echo", {"text": "x"})).output == "x"
        assert (await combined.call("local")).output == "here"


async def test_bad_arguments_and_unreachable_servers_are_clear_errors() -> None:
    """Both command and url, neither, or a command that is not a server: clear errors."""
    with pytest.raises(ToolhallError, match="exactly one"):
        MCPToolbox()
    with pytest.raises(ToolhallError, match="exactly one"):
        MCPToolbox(command=["x"], url="http://127.0.0.1:1/mcp")
    with pytest.raises(ToolhallError, match="list of arguments"):
        MCPToolbox(command="python server.py")  # type: ignore[arg-type]
    with pytest.raises(ToolhallError, match="cannot connect"):
        async with MCPToolbox(command=[sys.executable, "-c", "import sys; sys.exit(1)"]):
            pass
