"""An httpx transport that resolves each host once, checks every answer, and dials the address it checked.

Checking a URL and then letting the HTTP client resolve the name again leaves a DNS-rebinding window (the
second answer can be 127.0.0.1). Here the check sits where the socket is opened: httpcore hands the
origin host to `GuardedBackend.connect_tcp`, which resolves it once, refuses the connection if *any*
answer is refused by the `AddressGuard`, and connects to the literal address. httpcore still sends the
origin's `Host` header and uses the origin name for TLS SNI and certificate checks, because the
connection pool is keyed by the origin, not by the address. Built only on public interfaces:
`httpcore.AsyncConnectionPool(network_backend=...)` and `httpx.AsyncBaseTransport`.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anyio
import httpcore
import httpx

from .._errors import ToolCallError
from ._ssrf import AddressGuard, IPAddress, numeric_host

__all__ = ["GuardedBackend", "GuardedTransport", "Resolver", "system_resolver"]

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""Resolves `(host, port)` to address strings; the default asks the system resolver."""


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve a host name with the system resolver (getaddrinfo, off the event loop).

    Args:
        host: The host name.
        port: The port (some resolvers filter by service).

    Returns:
        The distinct addresses, in the resolver's order.
    """
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _refuse(message: str, code: Any = "denied", **details: Any) -> ToolCallError:
    return ToolCallError(message, code=code, details=details)


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """A network backend that only dials addresses the `AddressGuard` admits.

    Args:
        guard: Decides which names and addresses may be reached.
        resolver: Turns a host name into addresses (default: the system resolver).
        inner: The backend that opens the socket (default: httpcore's anyio backend).
    """

    def __init__(
        self,
        guard: AddressGuard,
        resolver: Resolver | None = None,
        inner: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self.guard = guard
        self.resolver: Resolver = resolver or system_resolver
        self.inner = inner or httpcore.AnyIOBackend()

    async def addresses_for(self, host: str, port: int, timeout: float | None = None) -> list[IPAddress]:
        """Resolve and check a host: every address it may be dialled at, or a `ToolCallError`.

        Args:
            host: The origin host as httpcore sees it (IDNA-encoded, lower case, no brackets).
            port: The destination port.
            timeout: Seconds allowed for the lookup.

        Returns:
            The checked addresses, in the order to try them.

        Raises:
            ToolCallError: `denied` (a guard refusal, naming the host and each refused address),
                `invalid_input` (a host that is neither a name nor an address), `execution_error` with
                `reason: dns` (lookup failed) or `timeout` with `reason: dns_timeout`.
        """
        host = host.lower().rstrip(".")  # "name." and "name" are one host: check and resolve the same string
        allowed_by_name, refusal = self.guard.check_name(host, port)
        if refusal is not None:
            raise _refuse(refusal, reason="blocked_host", host=host)
        try:
            literal = numeric_host(host)
        except ValueError as exc:
            raise _refuse(str(exc), "invalid_input", reason="invalid_host", host=host) from None
        addresses = [literal] if literal is not None else await self._resolve(host, port, timeout)
        refused = [
            why for a in addresses if (why := self.guard.check_address(a, port, allowed_by_name=allowed_by_name))
        ]
        if refused:
            # One bad answer refuses the host: a mixed answer set is how rebinding attacks start.
            shown = ", ".join(str(a) for a in addresses)
            spelled = host if literal is not None and shown == host else f"{host!r} ({shown})"
            raise _refuse(
                f"refused {spelled}: {refused[0]}",
                reason="blocked_address",
                host=host,
                addresses=[str(a) for a in addresses],
                refused=refused,
            )
        return addresses

    async def _resolve(self, host: str, port: int, timeout: float | None) -> list[IPAddress]:
        try:
            with anyio.fail_after(timeout):
                answers = await self.resolver(host, port)
        except TimeoutError:
            raise _refuse(f"looking up {host!r} timed out after {timeout} s", "timeout", reason="dns_timeout") from None
        except OSError as exc:
            detail = exc.strerror or str(exc)
            raise _refuse(f"could not resolve {host!r}: {detail}", "execution_error", reason="dns", host=host) from None
        addresses: list[IPAddress] = []
        for answer in answers:
            try:
                address = numeric_host(answer.lower())
            except ValueError:
                address = None
            if address is None:
                raise _refuse(
                    f"resolver returned {answer!r} for {host!r}, not an address", "execution_error", reason="dns"
                )
            addresses.append(address)
        if not addresses:
            raise _refuse(f"could not resolve {host!r}: no addresses", "execution_error", reason="dns", host=host)
        return addresses

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Resolve once, check every answer, then connect to the first checked address that answers."""
        addresses = await self.addresses_for(host, port, timeout)
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # addresses is never empty
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        """Unix sockets are never dialled: they would bypass every address check."""
        raise _refuse("connections to Unix sockets are not allowed", reason="unix_socket")

    async def sleep(self, seconds: float) -> None:
        """Sleep on the inner backend (httpcore uses this between retries)."""
        await self.inner.sleep(seconds)


_EXCEPTIONS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    # Most specific first: the first match wins.
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextmanager
def _mapped() -> Iterator[None]:
    """Turn httpcore's exceptions into httpx's, as httpx's own transport does."""
    try:
        yield
    except Exception as exc:
        for source, target in _EXCEPTIONS:
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        with _mapped():
            await self._stream.aclose()


def ssl_context_for(verify: bool | str | ssl.SSLContext) -> ssl.SSLContext:
    """The TLS context for `verify`: True (system/certifi roots), False, a CA file or folder, or a context."""
    if isinstance(verify, str):
        from pathlib import Path

        path = Path(verify)
        return ssl.create_default_context(capath=verify) if path.is_dir() else ssl.create_default_context(cafile=verify)
    return httpx.create_ssl_context(verify=verify)


class GuardedTransport(httpx.AsyncBaseTransport):
    """An async httpx transport whose every connection goes through a `GuardedBackend`.

    Args:
        guard: The address guard.
        resolver: How host names are resolved (default: the system resolver).
        verify: TLS verification: True, False, a CA bundle path, or an `ssl.SSLContext`.
        network_backend: The backend that opens sockets once an address is checked (default anyio).
        limits: Connection pool limits.

    Example:
        ```python
        transport = GuardedTransport(AddressGuard(allow=["127.0.0.1:8080"]))
        async with httpx.AsyncClient(transport=transport, trust_env=False) as client:
            await client.get("http://127.0.0.1:8080/")
        ```
    """

    def __init__(
        self,
        guard: AddressGuard,
        *,
        resolver: Resolver | None = None,
        verify: bool | str | ssl.SSLContext = True,
        network_backend: httpcore.AsyncNetworkBackend | None = None,
        limits: httpx.Limits | None = None,
    ) -> None:
        limits = limits or httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)
        self.backend = GuardedBackend(guard, resolver, network_backend)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context_for(verify),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=self.backend,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request through the guarded pool."""
        if request.url.scheme not in ("http", "https"):
            raise _refuse(f"scheme {request.url.scheme!r} is not allowed; use http or https", reason="scheme")
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _mapped():
            response = await self._pool.handle_async_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close every pooled connection."""
        await self._pool.aclose()
