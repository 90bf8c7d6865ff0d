"""The console's routes: the page, its assets, the event stream, and the JSON API behind them.

Every route sits behind the server's bearer token (`BearerTokenMiddleware`) and this package's `Guard`
(Host/Origin, CSRF on changes). Paths: `/` (the page; `/?token=...` logs in), `/console/static/<file>`,
`/console/api/events` (server-sent events), `/console/api/calls`, `/console/api/calls/{id}`,
`/console/api/approvals` (GET the queue, POST `/{id}` to answer), `/console/api/stats`.
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .._errors import LogStoreError
from ..log._record import CALL_STATUSES
from ._events import CallFeed, Event
from ._security import Guard, error_response
from ._summary import approval_dict, call_detail, summarize

__all__ = ["console_routes"]

Endpoint = Callable[[Request], Awaitable[Response]]

_STATIC_TYPES = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "login.js": "text/javascript; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_SECURITY_HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
_NAME = re.compile(r"^[\w .@+-]{1,64}$")
_MAX_REASON = 2000
# Streams end after a moment and the browser reconnects at once (resuming from Last-Event-ID): a server
# shutting down never waits for an open page, and a proxy never sees an idle connection.
_STREAM_LIFETIME_S = 1.5
_RETRY_MS = 100


@lru_cache(maxsize=8)
def _static(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


def console_routes(
    store: Any,
    *,
    token: str,
    host: str = "127.0.0.1",
    approval_timeout: float | None = 300.0,
    allowed_hosts: Sequence[str] = (),
    interval: float = 0.1,
    history: int = 2000,
) -> list[Route]:
    """The console's routes, to pass as `routes=` to `toolhall.mcp.server.http_app` / `serve_http`.

    Example:
        ```python
        log = SqliteLog(".toolhall/state.db")
        session = Session(toolbox, log=log, approver=QueueApprover(log, timeout=300))
        await serve_http(session, token=token, routes=console_routes(log, token=token, approval_timeout=300))
        ```

    Args:
        store: the log store the sessions write to (SQLite, PostgreSQL, or `MemoryLog`).
        token: the server's bearer token (the console's login link is `/?token=<token>`).
        host: the address the server binds (it is then an accepted Host besides the loopback names).
        approval_timeout: seconds after which the console denies an unanswered request, and the deadline
            it shows (None: the console never times requests out).
        allowed_hosts: more host names the console answers to (behind a reverse proxy, say).
        interval: seconds between polls of the store while a page is open.
        history: how many recent calls the live feed and the stats cover.
    """
    guard = Guard.build(token, host, allowed_hosts)
    _check_number("approval_timeout", approval_timeout, allow_none=True)
    _check_number("interval", interval)
    if isinstance(history, bool) or not isinstance(history, int) or history < 1:
        raise ValueError(f"history must be a positive integer; got {history!r}")
    feed = CallFeed(store, interval=interval, history=history, approval_timeout=approval_timeout)
    api = _Api(store, feed, guard)
    return [
        Route("/", _guarded(guard, api.index), methods=["GET"], name="console"),
        Route("/favicon.ico", _guarded(guard, api.favicon), methods=["GET"]),
        Route("/console/static/{name}", _guarded(guard, api.static), methods=["GET"]),
        Route("/console/api/events", _guarded(guard, api.events), methods=["GET"]),
        Route("/console/api/calls", _guarded(guard, api.calls), methods=["GET"]),
        Route("/console/api/calls/{call_id}", _guarded(guard, api.call), methods=["GET"]),
        Route("/console/api/approvals", _guarded(guard, api.approvals), methods=["GET"]),
        Route(
            "/console/api/approvals/{call_id}",
            _guarded(guard, api.answer, write=True),
            methods=["POST"],
            max_body_size=16_384,
        ),
        Route("/console/api/stats", _guarded(guard, api.stats), methods=["GET"]),
    ]


def _check_number(name: str, value: float | None, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        allowed = "a positive number of seconds" + (" or None" if allow_none else "")
        raise ValueError(f"{name} must be {allowed}; got {value!r}")


def _guarded(guard: Guard, endpoint: Endpoint, *, write: bool = False) -> Endpoint:
    async def checked(request: Request) -> Response:
        response = guard.refuse(request, write=write)
        if response is None:
            try:
                response = await endpoint(request)
            except LogStoreError as exc:
                response = error_response(503, "store_unavailable", str(exc))
        for key, value in _SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    return checked


def _sse(event: Event) -> str:
    # json.dumps never emits a raw newline, so one `data:` line carries the whole event.
    head = f"id: {event.id}\n" if event.id else ""
    return f"{head}event: {event.kind}\ndata: {json.dumps(event.data, ensure_ascii=False, default=str)}\n\n"


class _Api:
    def __init__(self, store: Any, feed: CallFeed, guard: Guard) -> None:
        self.store = store
        self.feed = feed
        self.guard = guard

    # -- page --------------------------------------------------------------------------------------
    async def index(self, request: Request) -> Response:
        presented = request.query_params.get("token")
        if presented is not None:
            return self._login(presented)
        csrf, new = self.guard.csrf_for(request)
        page = _static("index.html").decode().replace("{{csrf}}", html.escape(csrf, quote=True))
        response = HTMLResponse(page)
        if new:
            self.guard.set_cookies(response, csrf=csrf)
        return response

    def _login(self, presented: str) -> Response:
        if not self.guard.token_matches(presented):
            return error_response(401, "unauthorized", "that token is not this server's")
        # A page that replaces itself (rather than a 303): the next request is then same-site, so the
        # browser sends the SameSite=Strict cookie even when the link was opened from another site,
        # and the token leaves both the address bar and the history.
        response = HTMLResponse(_static("login.html"))
        self.guard.set_cookies(response, csrf=self.guard.new_csrf(), token=self.guard.token)
        return response

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        media = _STATIC_TYPES.get(name)
        if media is None:
            return error_response(404, "not_found", f"no console file {name!r}")
        return Response(_static(name), media_type=media)

    async def favicon(self, request: Request) -> Response:
        return Response(_static("favicon.svg"), media_type=_STATIC_TYPES["favicon.svg"])

    # -- live --------------------------------------------------------------------------------------
    async def events(self, request: Request) -> Response:
        last_event_id = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
        return StreamingResponse(
            self._stream(last_event_id),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def _stream(self, last_event_id: str | None) -> AsyncIterator[str]:
        async with self.feed.subscribe(last_event_id) as (first, receive):
            yield f"retry: {_RETRY_MS}\n\n" + "".join(_sse(event) for event in first)
            ends = time.monotonic() + _STREAM_LIFETIME_S
            while (left := ends - time.monotonic()) > 0:
                event = None
                with anyio.move_on_after(left):
                    try:
                        event = await receive.receive()
                    except anyio.EndOfStream:
                        return
                if event is not None:
                    yield _sse(event)

    # -- API ---------------------------------------------------------------------------------------
    async def calls(self, request: Request) -> Response:
        query = request.query_params
        status = query.get("status") or None
        if status is not None and status not in CALL_STATUSES:
            allowed = ", ".join(sorted(CALL_STATUSES))
            return error_response(400, "invalid_input", f"status must be one of {allowed}; got {status!r}")
        raw_limit = query.get("limit", "200")
        if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= 1000:
            return error_response(400, "invalid_input", f"limit must be an integer from 1 to 1000; got {raw_limit!r}")
        records = await anyio.to_thread.run_sync(
            lambda: self.store.calls(
                session_id=query.get("session") or None,
                tool=query.get("tool") or None,
                status=status,
                limit=int(raw_limit),
            )  # fmt: skip
        )
        return JSONResponse({"calls": [summarize(record) for record in records]})

    async def call(self, request: Request) -> Response:
        call_id = request.path_params["call_id"]
        record = await anyio.to_thread.run_sync(self.store.get, call_id)
        if record is None:
            return error_response(404, "not_found", f"no call {call_id!r} in the log")
        approval = await anyio.to_thread.run_sync(self.store.get_approval, call_id)
        return JSONResponse(call_detail(record, approval, self.feed.approval_timeout))

    async def approvals(self, request: Request) -> Response:
        pending = await anyio.to_thread.run_sync(self.store.pending_approvals)
        timeout = self.feed.approval_timeout
        return JSONResponse({"approvals": [approval_dict(request, timeout) for request in pending]})

    async def stats(self, request: Request) -> Response:
        if not self.feed.polls:
            await self.feed.refresh()
        return JSONResponse(self.feed.stats())

    async def answer(self, request: Request) -> Response:
        call_id = request.path_params["call_id"]
        try:
            body = await request.json()
        except ValueError:
            return error_response(400, "invalid_input", "the body must be a JSON object")
        parsed = _parse_answer(body)
        if isinstance(parsed, Response):
            return parsed
        decision, scope, reason, who = parsed
        answered_by = f"console:{who}" if who else "console"
        existing = await anyio.to_thread.run_sync(self.store.get_approval, call_id)
        if existing is None:
            return error_response(404, "not_found", f"no approval request for call {call_id!r}")
        changed = await anyio.to_thread.run_sync(
            lambda: self.store.answer_approval(call_id, decision, scope=scope, reason=reason, answered_by=answered_by)
        )
        current = await anyio.to_thread.run_sync(self.store.get_approval, call_id)
        self.feed.poke()
        payload = approval_dict(current or existing, self.feed.approval_timeout)
        if not changed:
            by = payload["answered_by"] or "someone"
            message = f"already answered ({payload['decision']}) by {by} at {payload['answered_at']}"
            return JSONResponse({"error": "conflict", "message": message, "approval": payload}, status_code=409)
        return JSONResponse({"answered": True, "approval": payload})


def _parse_answer(body: Any) -> tuple[Any, Any, str | None, str | None] | Response:
    """`{decision, scope, reason, by}` checked; an error response naming the field otherwise."""
    if not isinstance(body, dict):
        return error_response(400, "invalid_input", "the body must be a JSON object")
    unknown = set(body) - {"decision", "scope", "reason", "by"}
    if unknown:
        return error_response(
            400, "invalid_input", f"unknown field(s) {sorted(unknown)}; allowed: decision, scope, reason, by"
        )
    decision, scope = body.get("decision"), body.get("scope", "call")
    if decision not in ("approve", "deny"):
        return error_response(400, "invalid_input", f"decision must be 'approve' or 'deny'; got {decision!r}")
    if scope not in ("call", "tool", "subject"):
        return error_response(400, "invalid_input", f"scope must be 'call', 'tool' or 'subject'; got {scope!r}")
    reason, who = body.get("reason"), body.get("by")
    if reason is not None and (not isinstance(reason, str) or len(reason) > _MAX_REASON):
        return error_response(400, "invalid_input", f"reason must be text of at most {_MAX_REASON} characters")
    if who is not None and who != "" and (not isinstance(who, str) or not _NAME.match(who)):
        return error_response(400, "invalid_input", "by must be a name of 1 to 64 letters, digits, spaces or . _ @ + -")
    if decision == "deny" and not (reason or "").strip():
        reason = "denied in the console"
    return decision, scope, (reason or "").strip() or None, (who or "").strip() or None
