"""`toolhall serve` as a real subprocess, driven by the official `mcp` Python client (stdio and HTTP)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from ._serving import Served, serve_env, serve_http, toolhall_command

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A folder with a file to read."""
    (tmp_path / "notes.txt").write_text("hello world\nsecond line\n")
    return tmp_path


def stdio(workspace: Path, *args: str) -> StdioServerParameters:
    """`toolhall serve` over stdio for the workspace."""
    command = toolhall_command("serve", "--workspace", str(workspace), *args)
    return StdioServerParameters(command=command[0], args=command[1:], cwd=workspace, env=serve_env())


def text_of(result: types.CallToolResult) -> str:
    """The text parts of a result, joined."""
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


async def test_stdio_lists_standard_tools_and_reads_a_file(workspace: Path) -> None:
    """The standard toolbox is served with annotations, and a read-only file tool answers."""
    async with Client(stdio(workspace)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"read_file", "list_files", "write_file", "search_files"} <= set(tools)
        hints = tools["read_file"].annotations
        assert hints is not None and hints.read_only_hint is True
        assert tools["read_file"].input_schema["properties"]["path"]["type"] == "string"
        result = await client.call_tool("read_file", {"path": "notes.txt"})
        assert not result.is_error
        assert "hello world" in text_of(result) and "second line" in text_of(result)


async def test_stdio_failed_calls_are_error_results(workspace: Path) -> None:
    """A missing file, bad arguments, an unknown tool and a path outside the workspace: isError, not a crash."""
    async with Client(stdio(workspace)) as client:
        missing = await client.call_tool("read_file", {"path": "nope.txt"})
        assert missing.is_error and "does not exist" in text_of(missing)
        invalid = await client.call_tool("read_file", {"path": "notes.txt", "offset": "many"})
        assert invalid.is_error and "offset" in text_of(invalid)
        unknown = await client.call_tool("no_such_tool", {})
        assert unknown.is_error and "no_such_tool" in text_of(unknown)
        outside = await client.call_tool("read_file", {"path": "../../etc/passwd"})
        assert outside.is_error and "root:" not in text_of(outside)
        # The server is still healthy after the failures.
        assert not (await client.call_tool("read_file", {"path": "notes.txt"})).is_error


async def test_stdio_role_serves_only_that_roles_tools(workspace: Path) -> None:
    """`--role reviewer` lists and runs the reviewer's tools only; another role's tool is unknown."""
    async with Client(stdio(workspace, "--toolbox", "tests.mcp.serve_tools:toolbox", "--role", "reviewer")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"echo", "review_notes"}
        notes = await client.call_tool("review_notes", {})
        assert notes.structured_content == {"verdict": "approve", "comments": 2}
        hidden = await client.call_tool("build_plan", {})
        assert hidden.is_error and "build_plan" in text_of(hidden)


async def test_stdio_write_is_denied_without_elicitation_and_logged(workspace: Path) -> None:
    """A tool that is not read-only is denied (never run) when the client cannot be asked; both calls are logged."""
    async with Client(stdio(workspace)) as client:
        read = await client.call_tool("read_file", {"path": "notes.txt"})
        result = await client.call_tool("write_file", {"path": "new.txt", "content": "x"})
    assert not read.is_error
    assert result.is_error and "denied" in text_of(result)
    assert not (workspace / "new.txt").exists()
    done = subprocess.run(  # noqa: S603 - our own command line
        toolhall_command("log", "--json", "--workspace", str(workspace)),
        cwd=workspace, env=serve_env(), capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    by_tool = {row["tool"]: row for row in json.loads(done.stdout)}
    assert by_tool["read_file"]["status"] == "ok"
    assert by_tool["write_file"]["status"] == "denied"


async def test_stdio_write_runs_when_the_user_approves_through_elicitation(workspace: Path) -> None:
    """With a client that elicits (2025 protocol), the approval question reaches it and its yes runs the tool."""
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    async with Client(stdio(workspace), mode="legacy", elicitation_callback=answer) as client:
        result = await client.call_tool("write_file", {"path": "new.txt", "content": "approved"})
    assert not result.is_error, text_of(result)
    assert (workspace / "new.txt").read_text() == "approved"
    assert len(asked) == 1 and "write_file" in asked[0] and "new.txt" in asked[0]


async def test_stdio_modern_protocol_client_is_asked_through_the_result(workspace: Path) -> None:
    """A 2026-07-28 client is asked through an InputRequiredResult and its approval lets the write run."""
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    async with Client(stdio(workspace), mode="auto", elicitation_callback=answer) as client:
        result = await client.call_tool("write_file", {"path": "new.txt", "content": "x"})
    assert not result.is_error, text_of(result)
    assert (workspace / "new.txt").read_text() == "x" and len(asked) == 1 and "write_file" in asked[0]


async def test_stdio_modern_protocol_client_without_elicitation_is_denied(workspace: Path) -> None:
    """A 2026-07-28 client that cannot be asked: denied, never run unasked."""
    async with Client(stdio(workspace), mode="auto") as client:
        result = await client.call_tool("write_file", {"path": "new.txt", "content": "x"})
    assert result.is_error and "denied" in text_of(result)
    assert not (workspace / "new.txt").exists()


async def test_stdio_elicitation_decline_denies(workspace: Path) -> None:
    """A user who declines the approval question gets a denied result and no file."""

    async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        return types.ElicitResult(action="decline")

    async with Client(stdio(workspace), mode="legacy", elicitation_callback=decline) as client:
        result = await client.call_tool("write_file", {"path": "new.txt", "content": "x"})
    assert result.is_error and "denied" in text_of(result)
    assert not (workspace / "new.txt").exists()


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_client_log_level_filters_tool_log_messages(workspace: Path) -> None:
    """`logging/setLevel` is honoured: info messages reach the client at info, not at warning."""
    seen: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        seen.append(str(params.data))

    server = stdio(workspace, "--toolbox", "tests.mcp.conformance_tools:toolbox")
    async with Client(server, mode="legacy", logging_callback=on_log) as client:
        await client.set_logging_level("warning")
        assert not (await client.call_tool("test_tool_with_logging", {})).is_error
        assert seen == []
        await client.set_logging_level("info")
        await client.call_tool("test_tool_with_logging", {})
    assert seen == ["Tool execution started", "Tool processing data", "Tool execution completed"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One `toolhall serve --http` (token `t0ken-for-tests`) for the HTTP tests of this module."""
    workspace = tmp_path_factory.mktemp("http-ws")
    (workspace / "notes.txt").write_text("hello world\n")
    with serve_http(workspace) as running:
        yield running


async def test_http_banner_gives_url_token_and_client_command(served: Served) -> None:
    """The start-up banner prints the endpoint, the token, and a `claude mcp add` line that works as printed."""
    banner = "\n".join(served.banner)
    assert f"MCP endpoint: {served.url}" in banner
    assert f"token:        {served.token}" in banner
    line = next(x for x in served.banner if "claude mcp add" in x)
    expected = f'claude mcp add --transport http toolhall {served.url} --header "Authorization: Bearer {served.token}"'
    assert line.split("add it:", 1)[1].strip() == expected


async def test_http_refuses_without_the_token_and_serves_with_it(served: Served) -> None:
    """No token: 401. With the printed token the official client lists tools and reads a file."""
    async with httpx.AsyncClient(timeout=10) as probe:
        refused = await probe.post(served.url, json=INIT, headers=MCP_HEADERS)
    assert refused.status_code == 401
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {served.token}"})
    async with Client(streamable_http_client(served.url, http_client=http)) as client:
        assert "read_file" in {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("read_file", {"path": "notes.txt"})
    assert not result.is_error and "hello world" in text_of(result)


async def test_http_generates_a_token_when_none_is_given(workspace: Path) -> None:
    """Without --token a fresh token is printed, and it is the one the server requires."""
    with serve_http(workspace, token="") as running:
        token = re.search(r"token:\s+(\S+)", "\n".join(running.banner))
        assert token is not None and len(token.group(1)) >= 24
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {token.group(1)}"}
        async with httpx.AsyncClient(timeout=10) as probe:
            accepted = await probe.post(running.url, json=INIT, headers=headers)
            refused = await probe.post(running.url, json=INIT, headers={**headers, "Authorization": "Bearer x"})
    assert (accepted.status_code, refused.status_code) == (200, 401)


def test_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    """Binding a non-loopback address with no token is a usage error (exit 2), before anything listens."""
    done = subprocess.run(  # noqa: S603 - our own command line
        toolhall_command("serve", "--http", "--host", "0.0.0.0", "--port", "1", "--workspace", str(tmp_path)),  # noqa: S104
        cwd=tmp_path, env=serve_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "without a token" in done.stderr and "Traceback" not in done.stderr
