"""The pinned transport: one lookup per connection, the checked address dialled, Host and TLS SNI kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from toolhall import ToolCallError
from toolhall.tools import http
from toolhall.tools._http_transport import GuardedBackend, GuardedTransport
from toolhall.tools._ssrf import AddressGuard

from ._http_support import LoopbackFence, Server, StaticResolver, running, server_tls, tls_files

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def v4() -> Iterator[Server]:
    with running("127.0.0.1") as srv:
        yield srv


async def test_dns_rebinding_cannot_swap_the_address_after_the_check() -> None:
    """Each connection resolves once and dials that answer; a later answer is checked afresh and refused."""
    with running("127.0.0.2") as allowed:
        resolver = StaticResolver({"rebind.test": [["127.0.0.2"], ["127.0.0.1"]]})
        fence = LoopbackFence()
        tb = http.toolbox(allow_hosts=["127.0.0.2"], resolver=resolver, network_backend=fence)
        first = await tb.call("http_request", {"url": allowed.url("/conn-close", host="rebind.test")})
        assert first.ok and first.data["text"] == "closing"
        assert resolver.calls == ["rebind.test"] and fence.dialled == ["127.0.0.2"]
        assert allowed.hits.requests[-1]["headers"]["Host"] == f"rebind.test:{allowed.port}"
        # The server closed the connection, so the next request connects again and sees the new answer.
        second = await tb.call("http_request", {"url": allowed.url("/echo", host="rebind.test")})
        assert second.error is not None and second.error.code == "denied" and "127.0.0.1" in second.error.message
        assert resolver.calls == ["rebind.test", "rebind.test"] and fence.dialled == ["127.0.0.2"]


async def test_pooled_connection_is_reused_without_a_new_lookup(v4: Server) -> None:
    """Keep-alive requests to one origin share the connection dialled at the checked address."""
    resolver = StaticResolver({"pool.test": ["127.0.0.1"]})
    fence = LoopbackFence()
    tb = http.toolbox(allow_hosts=["pool.test"], resolver=resolver, network_backend=fence)
    for _ in range(3):
        assert (await tb.call("http_request", {"url": v4.url("/json", host="pool.test")})).ok
    assert resolver.calls == ["pool.test"] and fence.dialled == ["127.0.0.1"]


async def test_tls_uses_the_host_name_for_sni_and_certificate(tmp_path: Path) -> None:
    """An https request dialled at a checked IP still sends SNI and verifies the certificate for the name."""
    cert, key = tls_files(tmp_path, ["secure.test"])
    sni: list[str | None] = []
    with running("127.0.0.1", tls=server_tls(cert, key, sni)) as server:
        resolver = StaticResolver({"secure.test": ["127.0.0.1"]})
        tb = http.toolbox(allow_hosts=["secure.test", "127.0.0.1"], resolver=resolver, verify=str(cert))
        result = await tb.call("http_request", {"url": server.url("/echo", host="secure.test", scheme="https")})
        assert result.ok, result.error
        assert sni == ["secure.test"] and result.data["json"]["headers"]["Host"] == f"secure.test:{server.port}"
        by_address = await tb.call("http_request", {"url": server.url("/echo", scheme="https")})
        assert by_address.error is not None and by_address.error.code == "execution_error"
        assert "CERTIFICATE_VERIFY_FAILED" in by_address.error.message  # the cert names secure.test, not the IP


async def test_https_secret_is_attached_to_its_host(tmp_path: Path) -> None:
    """A bare-host secret goes over https to that host."""
    cert, key = tls_files(tmp_path, ["api.test"])
    with running("127.0.0.1", tls=server_tls(cert, key, [])) as server:
        tb = http.toolbox(
            allow_hosts=["api.test"],
            resolver=StaticResolver({"api.test": ["127.0.0.1"]}),
            verify=str(cert),
            secrets={"api.test": "https-only-token"},
        )
        result = await tb.call("http_request", {"url": server.url("/echo", host="api.test", scheme="https")})
        assert server.hits.requests[-1]["headers"]["Authorization"] == "Bearer https-only-token"
        assert "https-only-token" not in result.output


async def test_environment_proxies_are_ignored(v4: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY and friends cannot route requests around the guard."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9/")
    tb = http.toolbox(allow_hosts=[f"127.0.0.1:{v4.port}"])
    result = await tb.call("http_request", {"url": v4.url("/json")})
    assert result.ok and result.data["json"]["name"] == "toolhall"


async def test_plain_httpx_client_can_use_the_transport(v4: Server) -> None:
    """The transport is an ordinary httpx transport: it guards a plain AsyncClient too."""
    guard = AddressGuard(allow=[f"127.0.0.1:{v4.port}"])
    async with httpx.AsyncClient(transport=GuardedTransport(guard), trust_env=False) as client:
        assert (await client.get(v4.url("/json"))).json()["name"] == "toolhall"
        with pytest.raises(ToolCallError, match="loopback"):
            await client.get(v4.url("/json", host="localhost"))
        with pytest.raises(ToolCallError, match="not allowed"):
            await client.get("ftp://127.0.0.1/")


async def test_unix_sockets_are_never_dialled() -> None:
    """The backend refuses Unix sockets, which no address check could cover."""
    with pytest.raises(ToolCallError, match="Unix sockets"):
        await GuardedBackend(AddressGuard()).connect_unix_socket("/var/run/docker.sock")


async def test_resolver_answers_that_are_not_addresses_fail_cleanly() -> None:
    """A resolver returning garbage is an execution error, never a dial."""
    fence = LoopbackFence()
    tb = http.toolbox(resolver=StaticResolver({"odd.test": ["not-an-ip"]}), network_backend=fence)
    result = await tb.call("http_request", {"url": "http://odd.test/"})
    assert result.error is not None and result.error.details == {"reason": "dns"} and fence.dialled == []
