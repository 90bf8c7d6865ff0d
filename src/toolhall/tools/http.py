"""The HTTP tool: `http_request`, with a per-session cookie jar, checked redirects, capped bodies, per-host
secrets, and an SSRF guard that is on by default.

Every connection goes through `GuardedTransport`: the host is resolved once, every answer is checked
against the allow/deny lists and the table of non-public networks (loopback, private, link-local, metadata,
in every spelling), and the socket is opened to the address that was checked. Redirects are followed
hop by hop, each hop checked the same way. A user who wants the agent to reach a local service allows it
explicitly: `toolbox(allow_hosts=["127.0.0.1:8080"])`.

Cookies: each session (the call context's `session_id`) has its own jar. With a store in the context
(`ctx.store`, the session's log store) the jar is saved under the session's `http.cookies` state key after
every response that sets cookies, so a later process continuing the same session id continues the jar;
without one it lives in memory (calls without a session share one jar per toolbox). The model clears the
jar with `clear_cookies=true` on a request. Cookie values never appear in results (`Set-Cookie` headers
show `name=<hidden>`), and the jar is never shared between sessions.

Configuration (`toolhall.toml`, `[tools.http]`): `allow_hosts`, `deny_hosts`, `timeout`, `max_bytes`,
`max_redirects`, `block_private`, `verify`, and a `[tools.http.secrets]` table whose keys are hosts and
whose values are an Authorization value or a table of headers (use `"env:NAME"` to keep tokens out of the
file); they map one to one onto `toolbox(...)`.

Example:
    ```python
    from toolhall.tools import http

    tb = http.toolbox(secrets={"api.github.com": "env:GITHUB_TOKEN"})
    result = await tb.call("http_request", {"url": "https://api.github.com/zen"})
    result.data["status"], result.data["text"]
    ```
"""

import ssl
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

import httpcore
from pydantic import BeforeValidator, Field

from .._context import ToolContext
from .._errors import ConfigError
from .._tool import tool
from .._toolbox import Toolbox
from ._http_request import HttpEngine, RequestSpec
from ._http_secrets import parse_secrets
from ._http_transport import Resolver
from ._ssrf import AddressGuard

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_REDIRECTS", "DEFAULT_TIMEOUT", "toolbox"]

DEFAULT_TIMEOUT = 30.0
"""Seconds a request may take from start to last body byte, redirects included."""
DEFAULT_MAX_BYTES = 1024 * 1024
"""Most body bytes (after decompression) a request keeps; the download stops there."""
DEFAULT_MAX_REDIRECTS = 10
"""Most redirects one request follows."""


Method = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
ParamValue = str | int | float | bool | list[str | int | float | bool]


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


def _guard(allow_hosts: Iterable[str] | None, deny_hosts: Iterable[str] | None, block_private: bool) -> AddressGuard:
    for name, entries in (("allow_hosts", allow_hosts), ("deny_hosts", deny_hosts)):
        if isinstance(entries, str):
            raise ConfigError(f"{name}: give a list of hosts, not the string {entries!r}")
    try:
        return AddressGuard(allow_hosts or (), deny_hosts or (), block_private=block_private)
    except ValueError as exc:
        raise ConfigError(f"allow_hosts/deny_hosts: {exc}") from None


def _check_limits(timeout: float, max_bytes: int, max_redirects: int) -> None:
    if not timeout > 0:
        raise ConfigError(f"timeout: must be a positive number of seconds, got {timeout!r}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ConfigError(f"max_bytes: must be a positive integer, got {max_bytes!r}")
    if isinstance(max_redirects, bool) or not isinstance(max_redirects, int) or max_redirects < 0:
        raise ConfigError(f"max_redirects: must be a non-negative integer, got {max_redirects!r}")


def toolbox(
    allow_hosts: Iterable[str] | None = None,
    deny_hosts: Iterable[str] | None = None,
    secrets: Mapping[str, str | Mapping[str, str]] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    *,
    block_private: bool = True,
    verify: bool | str | ssl.SSLContext = True,
    resolver: Resolver | None = None,
    network_backend: httpcore.AsyncNetworkBackend | None = None,
) -> Toolbox:
    """The HTTP toolbox: one tool, `http_request`.

    Args:
        allow_hosts: Hosts the SSRF guard lets through although their address is loopback, private or
            otherwise non-public: `host`, `host:port`, `*.example.com`, an address (`127.0.0.1`,
            `[::1]:8080`) or a CIDR network (`10.0.0.0/8`). Public hosts need no entry.
        deny_hosts: Hosts, addresses and networks always refused, whatever else says (same forms).
        secrets: Headers the tool attaches for a host, never shown to the model nor logged. Keys are
            host entries as above (sent over https only; prefix `http://` to allow plain http too);
            values are an Authorization value (`"Bearer abc"`, or a bare token, sent as a bearer token)
            or a mapping of header names to values. A value `"env:NAME"` is read from the environment
            variable NAME at request time, so configuration files need not hold tokens.
        timeout: The most seconds a call may take (redirects and body included), and its default.
        max_bytes: The most body bytes (after decompression) a call may keep, and its default.
        max_redirects: The most redirects one call follows.
        block_private: The SSRF guard: refuse loopback, private, link-local, unique-local, multicast,
            unspecified and reserved addresses (on by default; allow_hosts opens single services).
        verify: TLS verification: True, False, a CA bundle file or folder, or an `ssl.SSLContext`.
        resolver: An async `(host, port) -> [address, ...]` used instead of the system resolver.
        network_backend: The httpcore backend that opens sockets once an address has been checked.

    Returns:
        A toolbox holding `http_request`.

    Raises:
        ConfigError: An argument is invalid; the message names it.

    Example:
        ```python
        tb = toolbox(allow_hosts=["127.0.0.1:8080"])
        result = tb.call_sync("http_request", {"url": "http://127.0.0.1:8080/health"})
        ```
    """
    _check_limits(timeout, max_bytes, max_redirects)
    engine = HttpEngine(
        _guard(allow_hosts, deny_hosts, block_private),
        parse_secrets(secrets),
        max_redirects=max_redirects,
        timeout=timeout,
        transport_options={"resolver": resolver, "verify": verify, "network_backend": network_backend},
    )
    return Toolbox([_http_request_tool(engine, float(timeout), max_bytes)], name="http")


def _http_request_tool(engine: HttpEngine, max_seconds: float, max_size: int) -> Any:
    # The limits go into the schema, so the model sees them and pydantic names them when exceeded.
    Seconds = Annotated[float, Field(gt=0, le=max_seconds)]
    Size = Annotated[int, Field(ge=1, le=max_size)]

    # A margin over the call's own deadline: the engine reports its deadline with the partial response.
    @tool(name="http_request", subject="url", timeout=max_seconds + 5, open_world=True)
    async def http_request(
        url: str,
        ctx: ToolContext,
        method: Annotated[Method, BeforeValidator(_upper)] = "GET",
        headers: dict[str, str] | None = None,
        params: dict[str, ParamValue] | None = None,
        json: Any = None,
        body: str | None = None,
        timeout: Seconds = max_seconds,
        follow_redirects: bool = True,
        max_bytes: Size = max_size,
        base64: bool = False,
        clear_cookies: bool = False,
    ) -> dict[str, Any]:
        """Send an HTTP(S) request and return the status, headers and body.

        Error statuses (404, 500) are ordinary results. The body comes back as `json` when the server says
        it is JSON, as `text` when it is text, and as a `binary` summary (type, size, sha256) otherwise.
        Cookies the server sets are kept for later calls in this session. Loopback, private and cloud
        metadata addresses are refused unless the operator allowed them.

        Args:
            url: Absolute http:// or https:// URL.
            method: HTTP method.
            headers: Extra request headers (Host, Content-Length and hop-by-hop headers are set for you).
            params: Query parameters, added to any already in the URL.
            json: A JSON value to send as the body (sets Content-Type: application/json).
            body: A text body to send instead (UTF-8).
            timeout: Seconds for the whole request, redirects and body included.
            follow_redirects: Follow 3xx redirects (each hop is checked like the first).
            max_bytes: Most body bytes to keep; the download stops there and `truncated` is set.
            base64: Include binary bodies as base64 as well as the summary.
            clear_cookies: Forget this session's cookies before sending.
        """
        spec = RequestSpec(
            url=url,
            method=method,
            headers=headers,
            params=params,
            json=json,
            body=body,
            timeout=timeout,
            follow_redirects=follow_redirects,
            max_bytes=max_bytes,
            base64=base64,
            clear_cookies=clear_cookies,
        )
        return await engine.request(spec, ctx)

    return http_request
