"""Serving tools over MCP: the official client, in memory and over streamable HTTP on loopback."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from toolhall import Image, Toolbox, ToolCallError, ToolContext, tool
from toolhall.mcp import build_server, serve_http

pytestmark = pytest.mark.anyio

cancelled = asyncio.Event()


@tool(read_only=True)
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool(name="chain:status", read_only=True, idempotent=True, open_world=False)
def chain_status() -> dict[str, Any]:
    """A name MCP does not accept as it is."""
    return {"state": "green", "tasks": 3}


@tool
def picture() -> list[object]:
    """An image and a caption."""
    return [Image(data=b"\x89PNG", mime_type="image/png"), "caption"]


@tool
def broken() -> None:
    """Always fails."""
    raise ToolCallError("it broke", details={"reason": "test"})


@tool
async def slow(steps: int, ctx: ToolContext) -> str:
    """Report progress, then sleep until cancelled."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, "working")
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        cancelled.set()
        raise
    return "finished"


def fixture_toolbox() -> Toolbox:
    """The tools these tests serve."""
    return Toolbox([echo, chain_status, picture, broken, slow])


async def test_tools_list_with_mapped_names_and_annotations() -> None:
    """tools/list gives every tool, `chain:status` under a legal name, with MCP annotations."""
    async with Client(build_server(fixture_toolbox())) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == {"echo", "chain_status", "picture", "broken", "slow"}
        status = listed["chain_status"].annotations
        assert status is not None
        assert (status.read_only_hint, status.idempotent_hint, status.open_world_hint) == (True, True, False)
        assert listed["echo"].input_schema["properties"]["text"]["type"] == "string"


async def test_calls_return_content_structured_data_and_errors() -> None:
    """Text, structured data, images and failures come back as MCP results (failures with isError)."""
    async with Client(build_server(fixture_toolbox())) as client:
        text = await client.call_tool("echo", {"text": "hi"})
        assert text.content[0].text == "hi" and not text.is_error  # type: ignore[union-attr]
        status = await client.call_tool("chain_status", {})
        assert status.structured_content == {"state": "green", "tasks": 3}
        pic = await client.call_tool("picture", {})
        assert pic.content[0].type == "image" and pic.content[1].text == "caption"  # type: ignore[union-attr]
        failed = await client.call_tool("broken", {})
        assert failed.is_error and failed.content[0].text == "it broke"  # type: ignore[union-attr]
        invalid = await client.call_tool("echo", {"text": 3})
        assert invalid.is_error and "invalid arguments" in invalid.content[0].text  # type: ignore[union-attr]
        unknown = await client.call_tool("nope", {})
        assert unknown.is_error and "no tool named" in unknown.content[0].text  # type: ignore[union-attr]


async def test_progress_and_client_cancellation() -> None:
    """Progress reaches the client; cancelling the request on the client cancels the tool for real."""
    cancelled.clear()
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with Client(build_server(fixture_toolbox())) as client:
        with anyio.move_on_after(0.5):
            await client.call_tool("slow", {"steps": 2}, progress_callback=on_progress)
        await asyncio.wait_for(cancelled.wait(), 5)
    assert seen == [1, 2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def http_server() -> AsyncIterator[str]:
    """The fixture toolbox over streamable HTTP on loopback, token `s3cret`."""
    port = _free_port()
    task = asyncio.create_task(serve_http(fixture_toolbox(), host="127.0.0.1", port=port, token="s3cret"))
    url = f"http://127.0.0.1:{port}/mcp"
    async with httpx.AsyncClient() as probe:
        for _ in range(100):
            try:
                await probe.get(url)
                break
            except httpx.TransportError:
                await asyncio.sleep(0.05)
    yield url
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_http_with_token_serves_the_official_client(http_server: str) -> None:
    """The official client lists and calls tools over streamable HTTP when it sends the token."""
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"})
    async with Client(streamable_http_client(http_server, http_client=http)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "echo" in names
        assert (await client.call_tool("echo", {"text": "over http"})).content[0].text == "over http"  # type: ignore[union-attr]


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.mark.parametrize("auth", [None, "Bearer wrong", "Basic czNjcmV0", "Bearer s3cretX"])
async def test_http_refuses_requests_without_the_token(http_server: str, auth: str | None) -> None:
    """No token, a wrong one, or another scheme: 401 before anything is served."""
    headers = dict(HEADERS)
    if auth is not None:
        headers["Authorization"] = auth
    async with httpx.AsyncClient() as client:
        response = await client.post(http_server, json=INIT, headers=headers)
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("header", "value", "status"),
    [("Host", "evil.example:80", 421), ("Origin", "http://evil.example", 403)],
)
async def test_http_checks_host_and_origin_against_dns_rebinding(
    http_server: str, header: str, value: str, status: int
) -> None:
    """A foreign Host or Origin is refused even with the right token."""
    headers = {**HEADERS, "Authorization": "Bearer s3cret", header: value}
    async with httpx.AsyncClient() as client:
        response = await client.post(http_server, json=INIT, headers=headers)
    assert response.status_code == status


async def test_unknown_methods_answer_method_not_found_at_once(http_server: str) -> None:
    """An unimplemented JSON-RPC method gets -32601 straight away."""
    headers = {**HEADERS, "Authorization": "Bearer s3cret"}
    async with httpx.AsyncClient(timeout=5) as client:
        init = await client.post(http_server, json=INIT, headers=headers)
        headers["mcp-session-id"] = init.headers["mcp-session-id"]
        await client.post(http_server, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        response = await client.post(
            http_server, json={"jsonrpc": "2.0", "id": 2, "method": "server/unheard_of", "params": {}}, headers=headers
        )
    assert '"code":-32601' in response.text


async def test_a_served_session_logs_calls_and_passes_progress_on() -> None:
    """Serving a Session: policy applies, every call is logged, and progress still reaches the client."""
    from toolhall import Policy, Session
    from toolhall.testing import MemoryLog

    log = MemoryLog()
    session = Session(fixture_toolbox(), policy=Policy(deny=["broken"], allow=["slow"]), log=log)
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with Client(build_server(session)) as client:
        with anyio.move_on_after(0.5):
            await client.call_tool("slow", {"steps": 2}, progress_callback=on_progress)
        refused = await client.call_tool("broken", {})
        assert refused.is_error and "denied" in refused.content[0].text  # type: ignore[union-attr]
    assert seen == [1, 2]
    statuses = {record.tool: record.status for record in log.calls()}
    assert statuses == {"slow": "cancelled", "broken": "denied"}
