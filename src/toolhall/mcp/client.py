"""Import an MCP server's tools as ordinary toolhall tools.

`MCPToolbox` is a `Toolbox` and an async context manager: entering it connects (a command over stdio, or a
URL over streamable HTTP) and registers one forwarding tool per server tool, validated with the server's raw
JSON Schema. The connection lives in a task of its own, so when the server dies the calls in flight fail
with a clear error and the next call reconnects. Imported tools are untrusted unless configured otherwise:
their annotations are shown, but policy treats them as not read-only (tag `untrusted`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from anyio.abc import TaskGroup

from .._context import ToolContext
from .._errors import ToolCallError, ToolhallError
from .._tool import Tool
from .._toolbox import Toolbox
from ._convert import content_from_mcp

__all__ = ["UNTRUSTED_TAG", "MCPToolbox", "connect"]

UNTRUSTED_TAG = "untrusted"
_logger = logging.getLogger("toolhall.mcp")


class MCPToolbox(Toolbox):
    """The tools of one MCP server, usable in any Toolbox or Session while the `async with` block lasts.

    Example:
        ```python
        async with MCPToolbox(command=["uvx", "mcp-server-git"], prefix="git_") as git:
            session = Session(git | files.toolbox(workspace="."))
        ```
    """

    __slots__ = (
        "_client",
        "_command",
        "_env",
        "_error",
        "_headers",
        "_lock",
        "_prefix",
        "_stop",
        "_tg",
        "_trusted",
        "_url",
        "_connections",
    )

    def __init__(
        self,
        command: Sequence[str] | None = None,
        url: str | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        prefix: str | None = None,
        trusted: bool = False,
        name: str | None = None,
    ) -> None:
        if (command is None) == (url is None):
            raise ToolhallError("MCPToolbox needs exactly one of command=[...] (stdio) or url=... (streamable HTTP)")
        if command is not None and (isinstance(command, str) or not command):
            raise ToolhallError("MCPToolbox command must be a non-empty list of arguments, e.g. ['uvx', 'server']")
        super().__init__(name=name or (os.path.basename(command[0]) if command else url))
        self._command = list(command) if command else None
        self._url = url
        self._headers = dict(headers or {})
        self._env = dict(env or {})
        self._prefix = prefix or ""
        self._trusted = trusted
        self._client: Any = None
        self._error: BaseException | None = None
        self._stop: anyio.Event | None = None
        self._tg: TaskGroup | None = None
        self._lock = anyio.Lock()
        self._connections = 0

    @property
    def connections(self) -> int:
        """How many times this toolbox has connected (1 + reconnections)."""
        return self._connections

    def _transport(self) -> Any:
        """A fresh transport for one connection (stdio parameters, a URL, or an HTTP transport with headers)."""
        from mcp.client.stdio import StdioServerParameters

        if self._command is not None:
            return StdioServerParameters(command=self._command[0], args=self._command[1:], env=self._env or None)
        if not self._headers:
            return self._url
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers=self._headers, timeout=httpx2.Timeout(30, read=300))
        return streamable_http_client(self._url or "", http_client=http)

    async def _own_connection(self, ready: anyio.Event) -> None:
        from mcp import Client

        self._stop = anyio.Event()
        try:
            async with Client(self._transport(), mode="legacy") as client:
                await self._serve(client, ready)
        except BaseException as exc:  # noqa: BLE001 - the owner task records why the connection ended
            self._error = exc
            if not isinstance(exc, anyio.get_cancelled_exc_class()):
                _logger.warning("MCP server %s disconnected: %s", self.name, exc)
        finally:
            self._client = None
            ready.set()

    async def _serve(self, client: Any, ready: anyio.Event) -> None:
        self._client = client
        self._error = None
        self._connections += 1
        ready.set()
        assert self._stop is not None
        await self._stop.wait()

    async def _connect(self) -> Any:
        assert self._tg is not None
        ready = anyio.Event()
        self._tg.start_soon(self._own_connection, ready)
        await ready.wait()
        if self._client is None:
            raise ToolhallError(f"cannot connect to MCP server {self.name}: {self._error}")
        return self._client

    async def _live_client(self) -> Any:
        async with self._lock:
            if self._client is None:
                await self._connect()
            return self._client

    async def __aenter__(self) -> MCPToolbox:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        try:
            client = await self._connect()
            listed = await client.list_tools()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        self.register(*(self._import(t) for t in listed.tools))
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()
            await self._tg.__aexit__(None, None, None)
            self._tg = None

    def _import(self, remote: Any) -> Tool:
        ann = remote.annotations
        remote_name: str = remote.name
        options: dict[str, Any] = {"tags": {"mcp", f"mcp:{self.name}"} | (set() if self._trusted else {UNTRUSTED_TAG})}
        if ann is not None:
            for ours, theirs in (
                ("read_only", "read_only_hint"),
                ("destructive", "destructive_hint"),
                ("idempotent", "idempotent_hint"),
                ("open_world", "open_world_hint"),
            ):
                value = getattr(ann, theirs, None)
                if value is not None:
                    options[ours] = value
            if ann.title:
                options["title"] = ann.title
        if remote.output_schema:
            options["output_schema"] = remote.output_schema

        async def forward(ctx: ToolContext | None = None, **arguments: Any) -> Any:
            return await self._forward(remote_name, arguments, ctx)

        tool = Tool.from_schema(
            self._prefix + remote_name, remote.description or "", remote.input_schema, forward, **options
        )
        # The forwarder wants the call's context (progress), which from_schema tools do not get by default.
        object.__setattr__(tool, "context_param", "ctx")
        return tool

    async def _forward(self, name: str, arguments: dict[str, Any], ctx: ToolContext | None) -> Any:
        try:
            client = await self._live_client()
        except ToolhallError as exc:
            raise ToolCallError(str(exc), details={"reason": "disconnected"}) from exc

        async def progress(value: float, total: float | None, message: str | None) -> None:
            if ctx is not None:
                await ctx.report_progress(value, total, message)

        try:
            result = await client.call_tool(name, arguments, progress_callback=progress)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            self._mark_dead(exc)
            raise ToolCallError(
                f"MCP server {self.name} failed during {name}: {type(exc).__name__}: {exc}",
                details={"reason": "disconnected"},
            ) from exc
        parts = [content_from_mcp(block) for block in result.content]
        text = "\n".join(getattr(p, "text", "") or "" for p in parts)
        if result.is_error:
            raise ToolCallError(text or f"{name} failed on MCP server {self.name}")
        if result.structured_content is not None:
            return result.structured_content
        if all(type(p).__name__ == "Text" for p in parts):
            return text
        return parts

    def _mark_dead(self, exc: BaseException) -> None:
        self._client = None
        if self._stop is not None:
            self._stop.set()
        self._error = exc


def connect(
    command: Sequence[str] | None = None,
    url: str | None = None,
    **options: Any,
) -> MCPToolbox:
    """An `MCPToolbox` for a server: `async with connect(command=[...]) as tb: ...`."""
    return MCPToolbox(command=command, url=url, **options)
