"""The request engine behind `http_request`: headers, secrets, cookies, redirects, caps and error mapping.

Redirects are followed here rather than by httpx so that every hop gets the same URL checks, the secrets
of *its* host only (never the previous host's), the session's cookies for its origin, and its own entry in
the redirect chain. Each hop's connection is checked by `GuardedTransport` at connect time.
"""

from __future__ import annotations

import asyncio
import re
import time
import weakref
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from http.cookiejar import Cookie, CookieJar, CookiePolicy
from typing import Any

import anyio
import httpx

from .._context import ToolContext
from .._errors import ToolCallError
from ._http_body import BodyBuffer, describe_body, read_body
from ._http_cookies import CookieJars
from ._http_secrets import Secret, redact, secret_headers
from ._http_transport import GuardedTransport
from ._ssrf import AddressGuard

__all__ = ["HttpEngine", "RequestSpec"]

USER_AGENT = "toolhall-http/0.1"
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_FORBIDDEN_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer"}
)
_CROSS_ORIGIN_DROP = frozenset({"authorization", "proxy-authorization", "cookie"})


@dataclass(slots=True)
class _Hop:
    url: httpx.URL
    method: str
    content: bytes | None
    content_type: str | None


class _NoCookies(CookiePolicy):
    """Keeps the httpx client's own jar empty: cookies live in the per-session jars only."""

    netscape = True
    rfc2965 = False
    hide_cookie2 = True

    def set_ok(self, cookie: Cookie, request: Any) -> bool:  # noqa: D102 - CookiePolicy hook
        return False

    def return_ok(self, cookie: Cookie, request: Any) -> bool:  # noqa: D102 - CookiePolicy hook
        return False

    def domain_return_ok(self, domain: str, request: Any) -> bool:  # noqa: D102 - CookiePolicy hook
        return False

    def path_return_ok(self, path: str, request: Any) -> bool:  # noqa: D102 - CookiePolicy hook
        return False


async def _close_at_loop_shutdown(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    """Park until the event loop shuts down, then close the client's pooled connections.

    asyncio's `shutdown_asyncgens` (run by `asyncio.run`, `asyncio.Runner` and anyio) finalises every live
    async generator inside the loop, so this is the loop's own "closing" hook: without it, connections
    kept alive for the next call would be left open on a closed loop.
    """
    try:
        yield
    finally:
        with anyio.CancelScope(shield=True):
            await client.aclose()


class HttpEngine:
    """Configuration and shared state behind one toolbox's `http_request`.

    Args:
        guard: Which hosts and addresses may be reached.
        secrets: Per-host headers attached by the tool (from `parse_secrets`).
        max_redirects: Most redirects one request follows.
        timeout: The per-operation timeout given to httpx (the call's deadline is separate).
        transport_options: Keyword arguments for `GuardedTransport` (resolver, verify, network_backend).
    """

    def __init__(
        self,
        guard: AddressGuard,
        secrets: tuple[Secret, ...],
        *,
        max_redirects: int,
        timeout: float,
        transport_options: dict[str, Any],
    ) -> None:
        self.guard = guard
        self.secrets = secrets
        self.max_redirects = max_redirects
        self.timeout = timeout
        self.transport_options = transport_options
        self.jars = CookieJars()
        # A pooled connection belongs to one event loop; `call_sync` may run each call on a new one.
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[httpx.AsyncClient, AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()

    async def client(self) -> httpx.AsyncClient:
        """This event loop's client, created on first use and closed when the loop shuts down."""
        loop = asyncio.get_running_loop()
        entry = self._clients.get(loop)
        if entry is None:
            client = httpx.AsyncClient(
                transport=GuardedTransport(self.guard, **self.transport_options),
                trust_env=False,  # environment proxies would resolve names themselves, past the guard
                follow_redirects=False,
                timeout=httpx.Timeout(self.timeout),
                headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate"},
                cookies=CookieJar(policy=_NoCookies()),  # the client's own jar would be shared by all sessions
            )
            keeper = _close_at_loop_shutdown(client)
            await anext(keeper)
            entry = self._clients[loop] = (client, keeper)
        return entry[0]

    async def request(self, spec: RequestSpec, ctx: ToolContext) -> dict[str, Any]:
        """Run one `http_request` call: the response summary, or a `ToolCallError`."""
        started = time.perf_counter()
        url = _check_url(spec.url)
        if spec.params:
            url = url.copy_merge_params(dict(spec.params))  # httpx would replace the URL's own query
        headers = _check_headers(spec.headers)
        content, content_type = _encode_body(spec)
        cookies = await self.jars.get(ctx.store, ctx.session_id, ctx.logger)
        state = _Exchange(url, cookies_changed=spec.clear_cookies)
        if spec.clear_cookies:
            cookies.clear()
        timed_out = False
        try:
            try:
                async with asyncio.timeout(spec.timeout):  # one deadline for every hop and the body
                    await self._follow(_Hop(url, spec.method, content, content_type), headers, cookies, spec, state)
            except TimeoutError:
                timed_out = True
        except ToolCallError as exc:
            reason = (exc.details or {}).get("reason")
            if state.redirects and reason != "too_many_redirects":  # say which hop failed, and the chain to it
                exc.message = f"{exc.message} (reached by redirect from {state.redirects[-1]['url']})"
                exc.args = (exc.message,)
                exc.details = {**(exc.details or {}), "url": str(state.url), "redirects": state.redirects}
            raise
        except httpx.HTTPError as exc:
            error = _map_error(exc, state.url)
            raise ToolCallError(
                redact(error.message, state.secret_values),
                code=error.code,
                details=error.details,
                data=_summary(state, spec, started),
            ) from exc
        finally:
            if state.cookies_changed:
                with anyio.CancelScope(shield=True):
                    await self.jars.save(ctx.store, ctx.session_id, cookies, ctx.logger)
        if timed_out:
            raise ToolCallError(
                f"{spec.method} {state.url} timed out after {spec.timeout:g} s while {state.phase}",
                code="timeout",
                details={"reason": "deadline", "phase": state.phase},
                data=_summary(state, spec, started),
            )
        summary = _summary(state, spec, started)
        assert summary is not None
        return summary

    async def _follow(
        self, hop: _Hop, headers: dict[str, str], cookies: httpx.Cookies, spec: RequestSpec, state: _Exchange
    ) -> None:
        """Send `hop`, then each redirect it leads to, and read the final body into `state`."""
        for _ in range(self.max_redirects + 1):
            state.url, state.phase = hop.url, "connecting"
            response = await self._send(hop, headers, cookies, state)
            try:
                if response.headers.get_list("set-cookie"):
                    cookies.extract_cookies(response)
                    state.cookies_changed = True
                location = response.headers.get("location")
                if not (spec.follow_redirects and response.status_code in _REDIRECTS and location):
                    state.response, state.phase = response, "reading the body"
                    await read_body(response, spec.max_bytes, state.buffer)
                    return
                state.redirects.append({"url": str(hop.url), "status": response.status_code})
                following = _next_hop(hop, response.status_code, location)
                drop = _CROSS_ORIGIN_DROP if _origin(following.url) != _origin(hop.url) else frozenset()
                if following.content is None and hop.content is not None:
                    drop = drop | {"content-type"}  # the body was dropped with the method change
                if drop:
                    # Credentials the model gave for one origin never follow it to another.
                    headers = {k: v for k, v in headers.items() if k.lower() not in drop}
                hop = following
            finally:
                await response.aclose()
        raise ToolCallError(
            f"stopped after {self.max_redirects} redirects (the limit); the last pointed to {hop.url}",
            details={"reason": "too_many_redirects", "redirects": state.redirects},
        )

    async def _send(
        self, hop: _Hop, headers: dict[str, str], cookies: httpx.Cookies, state: _Exchange
    ) -> httpx.Response:
        client = await self.client()
        request = client.build_request(hop.method, hop.url, headers=headers, content=hop.content)
        if hop.content_type and "content-type" not in request.headers:
            request.headers["Content-Type"] = hop.content_type
        for name, value in secret_headers(self.secrets, hop.url) if self.secrets else ():
            request.headers[name] = value  # configured secrets win over the model's header of that name
            state.secret_values.update(v for v in (value, value.partition(" ")[2]) if len(v) >= 6)
        if cookies.jar:  # (an empty CookieJar is falsy) the urllib-based lookup costs more than the rest
            cookies.set_cookie_header(request)
        state.phase = "waiting for the response"
        return await client.send(request, stream=True)


def _check_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    checked: dict[str, str] = {}
    for name, value in (headers or {}).items():
        if not _TOKEN.match(name):
            raise ToolCallError(f"headers: {name!r} is not a valid header name", code="invalid_input")
        if any(c in value for c in "\r\n\x00"):
            raise ToolCallError(f"headers: the value of {name!r} contains a line break or NUL", code="invalid_input")
        lower = name.lower()
        if lower in _FORBIDDEN_HEADERS or lower.startswith("proxy-"):
            raise ToolCallError(
                f"headers: {name!r} is set by the HTTP client and cannot be given",
                code="invalid_input",
                details={"reason": "forbidden_header"},
            )
        checked[name] = value
    return checked


def _check_url(url: str | httpx.URL, what: str = "url") -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ToolCallError(f"{what}: {url!s} is not a valid URL ({exc})", code="invalid_input") from None
    if parsed.scheme not in ("http", "https"):
        shown = repr(parsed.scheme) if parsed.scheme else "no scheme"
        raise ToolCallError(
            f"{what}: {shown} is not allowed; only absolute http:// and https:// URLs are",
            code="denied" if parsed.scheme else "invalid_input",
            details={"reason": "scheme", "url": str(parsed)},
        )
    if not parsed.host:
        raise ToolCallError(f"{what}: {url!s} has no host", code="invalid_input")
    if parsed.userinfo:
        raise ToolCallError(
            f"{what}: credentials in the URL (user:password@) are not allowed; configure secrets for the host",
            code="denied",
            details={"reason": "userinfo"},
        )
    return parsed


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestSpec:
    """One `http_request` call's arguments, validated by the tool's schema."""

    url: str
    method: str = "GET"
    headers: Mapping[str, str] | None = None
    params: Mapping[str, Any] | None = None
    json: Any = None
    body: str | None = None
    timeout: float = 30.0
    follow_redirects: bool = True
    max_bytes: int = 1024 * 1024
    base64: bool = False
    clear_cookies: bool = False


@dataclass(slots=True)
class _Exchange:
    """What one call has seen so far, kept outside the deadline so a timeout still reports it."""

    url: httpx.URL
    redirects: list[dict[str, Any]] = field(default_factory=list)
    response: httpx.Response | None = None
    buffer: BodyBuffer = field(default_factory=BodyBuffer)
    secret_values: set[str] = field(default_factory=set)
    cookies_changed: bool = False
    phase: str = "connecting"


def _encode_body(spec: RequestSpec) -> tuple[bytes | None, str | None]:
    if spec.json is not None and spec.body is not None:
        raise ToolCallError("give either json or body, not both", code="invalid_input")
    if spec.json is not None:
        import json

        return json.dumps(spec.json, ensure_ascii=False).encode("utf-8"), "application/json"
    if spec.body is not None:
        return spec.body.encode("utf-8"), None
    return None, None


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


def _next_hop(hop: _Hop, status: int, location: str) -> _Hop:
    try:
        target = hop.url.join(location)
    except (httpx.InvalidURL, ValueError) as exc:
        raise ToolCallError(
            f"the server redirected to {location!r}, which is not a valid URL ({exc})",
            details={"reason": "bad_redirect"},
        ) from None
    target = _check_url(target, "redirect")
    # As browsers and httpx do: 303 (and 301/302 after a POST) turn into a GET without a body.
    if (status == 303 and hop.method != "HEAD") or (status in (301, 302) and hop.method == "POST"):
        return _Hop(target, "GET", None, None)
    return _Hop(target, hop.method, hop.content, hop.content_type)


_TIMEOUT_REASONS: tuple[tuple[type[httpx.TimeoutException], str], ...] = (
    (httpx.ConnectTimeout, "connect_timeout"),
    (httpx.ReadTimeout, "read_timeout"),
    (httpx.WriteTimeout, "write_timeout"),
    (httpx.PoolTimeout, "pool_timeout"),
)


def _map_error(exc: httpx.HTTPError, url: httpx.URL) -> ToolCallError:
    """One httpx exception → a coded error naming the host (most specific first)."""
    target = f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        reason = next((why for kind, why in _TIMEOUT_REASONS if isinstance(exc, kind)), "timeout")
        return ToolCallError(
            f"{target}: {reason.replace('_', ' ')} ({detail})", code="timeout", details={"reason": reason}
        )
    if isinstance(exc, httpx.ConnectError):
        return ToolCallError(f"could not connect to {target}: {detail}", details={"reason": "connect"})
    if isinstance(exc, httpx.RemoteProtocolError):
        return ToolCallError(f"{target} sent an invalid HTTP response: {detail}", details={"reason": "protocol"})
    if isinstance(exc, httpx.LocalProtocolError):
        return ToolCallError(
            f"the request could not be sent: {detail}", code="invalid_input", details={"reason": "request"}
        )
    if isinstance(exc, httpx.UnsupportedProtocol):
        return ToolCallError(f"{url.scheme!r} is not allowed: {detail}", code="denied", details={"reason": "scheme"})
    if isinstance(exc, httpx.TransportError):
        return ToolCallError(f"network error talking to {target}: {detail}", details={"reason": "network"})
    return ToolCallError(f"HTTP error talking to {target}: {detail}", details={"reason": "http"})


def _hide_cookie(value: str) -> str:
    name, sep, rest = value.partition("=")
    _, semi, attributes = rest.partition(";")
    return f"{name}{sep}<hidden>{semi}{attributes}" if sep else value


def _response_headers(response: httpx.Response) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    for name, value in response.headers.multi_items():
        if name == "set-cookie":
            # Cookie values are session credentials: the jar keeps them, the model and the log do not.
            headers.setdefault(name, []).append(_hide_cookie(value))
        elif name in headers:
            headers[name] = f"{headers[name]}, {value}"
        else:
            headers[name] = value
    return headers


def _summary(state: _Exchange, spec: RequestSpec, started: float) -> dict[str, Any] | None:
    response = state.response
    if response is None:
        return None
    version = response.extensions.get("http_version", b"HTTP/1.1")
    data: dict[str, Any] = {
        "status": response.status_code,
        "reason": response.reason_phrase,
        "url": str(state.url),
        "http_version": version.decode("ascii", "replace") if isinstance(version, bytes) else str(version),
        "redirects": state.redirects,
        "headers": _response_headers(response),
        "bytes": state.buffer.size,
        "truncated": state.buffer.truncated,
        "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
    }
    data.update(
        describe_body(
            state.buffer.content, response.headers, truncated=not state.buffer.complete, want_base64=spec.base64
        )
    )
    notes = [state.buffer.note] if state.buffer.note else []
    if state.buffer.truncated:
        notes.append(f"the body was cut at max_bytes={spec.max_bytes}; the rest was not downloaded")
    if notes:
        data["note"] = "; ".join(notes)
    redacted: dict[str, Any] = redact(data, state.secret_values)
    return redacted
