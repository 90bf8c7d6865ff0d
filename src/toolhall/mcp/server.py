"""Serve a `Toolbox` or a `Session` over MCP (stdio or streamable HTTP), with toolhall's own schemas.

Built on the SDK's low-level server so names, schemas and results go out exactly as toolhall makes them.
Protocol errors (an unknown method) are JSON-RPC errors; tool failures are `isError` results.
"""

from __future__ import annotations

import asyncio
import contextvars
import hmac
import secrets
import warnings
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol
from urllib.parse import unquote_to_bytes

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from .._context import ToolContext
from .._result import ToolCall, ToolResult
from ._convert import result_to_mcp, tool_to_mcp
from ._rounds import RoundKeeper

__all__ = [
    "ServeTarget",
    "build_server",
    "current_request",
    "http_app",
    "send_client_log",
    "serve_http",
    "serve_stdio",
]

LOOPBACK = ("127.0.0.1", "localhost", "::1")

_request: contextvars.ContextVar[Any] = contextvars.ContextVar("toolhall_mcp_request", default=None)


def current_request() -> Any:
    """The MCP request being served on this task (for approvers that ask the client), or None."""
    return _request.get()


_LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
# The level each client connection asked for with `logging/setLevel` (keyed by the SDK's connection object,
# which has no public handle; without it every level is sent, as the handshake-era SDK does).
_client_levels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _connection_of(ctx: Any) -> Any:
    return getattr(ctx.session, "_connection", None)


async def send_client_log(level: str, data: Any, *, logger: str | None = None) -> bool:
    """Send a log message to the MCP client of the call being served (a tool may call this).

    Messages below the level the client set with `logging/setLevel` are dropped. Returns whether it was sent
    (False outside an MCP call, or when filtered out).
    """
    ctx = _request.get()
    if ctx is None or level not in _LOG_LEVELS:
        return False
    connection = _connection_of(ctx)
    wanted = _client_levels.get(connection, "debug") if connection is not None else "debug"
    if _LOG_LEVELS.index(level) < _LOG_LEVELS.index(wanted):
        return False
    with warnings.catch_warnings():  # logging is deprecated for 2026-07-28 clients; older ones still use it
        warnings.simplefilter("ignore")
        await ctx.session.send_log_message(level, data, logger=logger, related_request_id=ctx.request_id)
    return True


async def _set_logging_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    connection = _connection_of(ctx)
    if connection is not None:
        _client_levels[connection] = params.level
    return types.EmptyResult()


class ServeTarget(Protocol):
    """What can be served: a `Toolbox` or a `Session`."""

    def schemas(self, format: str = ..., *, strict: bool = ...) -> list[dict[str, Any]]: ...  # noqa: A002, D102

    async def call(  # noqa: D102
        self, name_or_call: str | ToolCall, arguments: Any = ..., *, context: ToolContext | None = ...
    ) -> ToolResult: ...


def build_server(target: ServeTarget, *, name: str = "toolhall", instructions: str | None = None) -> Server[Any]:
    """A low-level MCP server whose tools are `target`'s (names already mapped to what MCP accepts)."""
    from .. import __version__

    listing: dict[str, Any] = {}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        entries = target.schemas("mcp")
        listing.clear()
        listing.update({entry["name"]: entry for entry in entries})
        return types.ListToolsResult(tools=[tool_to_mcp(entry) for entry in entries])

    rounds = RoundKeeper()

    async def call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        token = _request.set(ctx)
        round_token = rounds.begin(ctx, params)
        try:

            async def progress(value: float, total: float | None, message: str | None) -> None:
                await ctx.session.report_progress(value, total, message)

            context = ToolContext(progress=progress, extra={"transport": "mcp"})
            result = await target.call(ToolCall(params.name, params.arguments or {}), context=context)
        finally:
            finished = rounds.end(round_token)
            _request.reset(token)
        if finished is not None and finished.asked:
            return rounds.input_required(finished, params)
        entry = listing.get(params.name)
        structured = entry is None or "outputSchema" in entry or not isinstance(result.data, str)
        return result_to_mcp(result, structured=structured)

    # `logging/setLevel` is deprecated for 2026-07-28 clients (the SDK warns), but 2025 clients call it
    # before tools that log; without it they get -32601 and fail.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Server(
            name,
            version=__version__,
            instructions=instructions,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_set_logging_level=_set_logging_level,
        )


async def serve_stdio(target: ServeTarget, *, name: str = "toolhall") -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    from mcp.server.stdio import stdio_server

    server = build_server(target, name=name)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def new_token() -> str:
    """A fresh bearer token for the HTTP transport."""
    return secrets.token_urlsafe(24)


class BearerTokenMiddleware:
    """Require `Authorization: Bearer <token>` (or the console's cookie) on every HTTP request."""

    def __init__(self, app: ASGIApp, token: str, *, open_paths: Sequence[str] = ()) -> None:
        self.app = app
        self.token = token.encode()
        self.open_paths = tuple(open_paths)

    def _presented(self, scope: Scope) -> bytes | None:
        # The console's sign-in link (`/?token=...`): accepted on that one page, which sets the cookie.
        if scope.get("method") == "GET" and scope.get("path") == "/":
            for pair in scope.get("query_string", b"").split(b"&"):
                name, _, value = pair.partition(b"=")
                if name == b"token":
                    return unquote_to_bytes(value.replace(b"+", b" "))
        for key, value in scope.get("headers", []):
            if key == b"authorization" and value[:7].lower() == b"bearer ":
                return bytes(value[7:].strip())
            if key == b"cookie":
                for part in value.split(b";"):
                    name, _, cookie = part.strip().partition(b"=")
                    if name == b"toolhall_token":
                        return bytes(cookie)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "") in self.open_paths:
            await self.app(scope, receive, send)
            return
        presented = self._presented(scope)
        if presented is None or not hmac.compare_digest(presented, self.token):
            response = JSONResponse(
                {"error": "unauthorized", "message": "a valid bearer token is required"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="toolhall"'},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _security(host: str, port: int | None) -> TransportSecuritySettings:
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if host not in LOOPBACK and host not in ("0.0.0.0", "::"):  # noqa: S104 - compared, not bound
        hosts += [host, f"{host}:*"]
        origins += [f"http://{host}:*", f"https://{host}:*"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def http_app(
    target: ServeTarget,
    *,
    token: str,
    host: str = "127.0.0.1",
    port: int | None = None,
    routes: Sequence[BaseRoute] = (),
    name: str = "toolhall",
) -> Starlette:
    """The streamable-HTTP app at `/mcp`, behind the bearer token and Host/Origin checks.

    `routes` adds pages on the same app (the console), behind the same token.
    """
    if not token:
        raise ValueError("the HTTP transport needs a non-empty token")
    server = build_server(target, name=name)
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=_security(host, port),
        host=host,
        custom_starlette_routes=list(routes),  # type: ignore[arg-type]
    )
    app.add_middleware(BearerTokenMiddleware, token=token)
    return app


async def serve_http(
    target: ServeTarget,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str,
    routes: Sequence[BaseRoute] = (),
    on_ready: Callable[[], Awaitable[None] | None] | None = None,
) -> None:
    """Serve over streamable HTTP until cancelled. Refuses a non-loopback address without a token."""
    import uvicorn

    if host not in LOOPBACK and not token:
        raise ValueError(f"refusing to bind {host} (not loopback) without a token")
    app = http_app(target, token=token, host=host, port=port, routes=routes)
    # Open event streams (MCP GET streams, console pages) would otherwise hold a shutdown until they end.
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    # Cancelling the caller asks uvicorn to shut down cleanly (lifespan included) instead of tearing it apart.
    running = asyncio.ensure_future(server.serve())
    try:
        await asyncio.shield(running)
    except asyncio.CancelledError:
        server.should_exit = True
        await running
        raise
