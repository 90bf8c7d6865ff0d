"""A real toolhall HTTP server (MCP + console) on loopback, run in a thread, with an agent session on it."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import uvicorn

from toolhall import Session, SqliteLog, Toolbox, ToolResult, tool
from toolhall.console import QueueApprover, console_routes
from toolhall.mcp.server import http_app

T = TypeVar("T")

TOKEN = "console-test-token-0123456789"
WAIT = 20.0  # seconds a test waits for something that normally takes milliseconds (the CI box may be loaded)
XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


@tool(read_only=True)
def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say.
    """
    return text


@tool(subject="path")
def write_note(path: str, content: str) -> str:
    """Write a note (asks first: it changes things).

    Args:
        path: where.
        content: what.
    """
    return f"wrote {len(content)} characters to {path}"


@tool(read_only=True)
def leak() -> str:
    """Return markup that must show as text."""
    return XSS


@tool(read_only=True)
def big() -> dict[str, Any]:
    """A long structured output."""
    return {"rows": [{"n": i, "text": f"line {i}"} for i in range(400)]}


@tool(read_only=True)
def huge() -> str:
    """An output longer than the model may see."""
    return "".join(f"{i:07d}\n" for i in range(15_000))


def free_port() -> int:
    """A port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Console:
    """A running server: its base URL, token, store, the agent's session and the server's loop."""

    url: str
    token: str
    store: Any
    session: Session
    loop: asyncio.AbstractEventLoop

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Run a coroutine on the server's loop (as the MCP transport would)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Future[ToolResult]:
        """Start an agent call through the session; returns its future."""
        return self.submit(self.session.call(name, arguments or {}))


def event_stream(client: httpx.Client, *, within: float = WAIT) -> Iterator[tuple[str, Any]]:
    """(event, data) pairs from the console's stream, reconnecting with Last-Event-ID as a browser does.

    Fails when `within` seconds pass, so a test waiting for an event that never comes does not hang.
    """
    deadline = time.monotonic() + within
    last_id: str | None = None
    while time.monotonic() < deadline:
        headers = {"Last-Event-ID": last_id} if last_id else {}
        with client.stream("GET", "/console/api/events", headers=headers) as response:
            assert response.status_code == 200, response.read()
            kind = None
            for line in response.iter_lines():
                if line.startswith("id: "):
                    last_id = line[4:]
                elif line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind is not None:
                    yield kind, json.loads(line[6:])
                    kind = None
    raise AssertionError(f"the awaited event did not come within {within} s")


async def _cancel_the_rest() -> None:
    left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)


def wait_for_pending(store: Any, session_id: str | None = None) -> str:
    """The call id of the newest request waiting for approval (of a session, when given)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        pending = store.pending_approvals(session_id)
        if pending:
            return str(pending[-1].call_id)
        time.sleep(0.02)
    raise AssertionError(f"no call was waiting for approval within {WAIT} s")


def run_server(app: Any, port: int) -> tuple[uvicorn.Server, threading.Thread, asyncio.AbstractEventLoop]:
    """Serve `app` on loopback in a thread; returns once it accepts connections."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    loop = asyncio.new_event_loop()

    def serve() -> None:
        loop.run_until_complete(server.serve())
        # Tasks a closed stream left behind (the feed's poller) end with the server, as asyncio.run does.
        loop.run_until_complete(_cancel_the_rest())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        thread.join(0.025)
    assert server.started, "the test server did not start"
    return server, thread, loop


@pytest.fixture
def make_console(tmp_path: Path) -> Iterator[Callable[..., Console]]:
    """Build and start a console server over a store (SQLite in tmp_path by default)."""
    started: list[tuple[uvicorn.Server, threading.Thread, asyncio.AbstractEventLoop, Any, bool]] = []

    def make(
        store: Any = None, *, approval_timeout: float | None = 60.0, approver_timeout: float = 60.0, **options: Any
    ) -> Console:
        owned = store is None
        store = store if store is not None else SqliteLog(tmp_path / "state.db")
        toolbox = Toolbox([echo, write_note, leak, big, huge])
        session = Session(toolbox, log=store, approver=QueueApprover(store, timeout=approver_timeout))
        port = free_port()
        routes = console_routes(store, token=TOKEN, approval_timeout=approval_timeout, interval=0.1, **options)
        app = http_app(session, token=TOKEN, host="127.0.0.1", port=port, routes=routes)
        server, thread, loop = run_server(app, port)
        started.append((server, thread, loop, store, owned))
        return Console(f"http://127.0.0.1:{port}", TOKEN, store, session, loop)

    yield make
    for server, thread, loop, store, owned in started:
        server.should_exit = True
        thread.join(10)
        loop.close()
        if owned:
            store.close()
