"""SSRF: URL forms that must be refused with the guard on (payload spellings after PayloadsAllTheThings/fuzzdb).

Every refusal is checked three ways: the result is `denied` or `invalid_input`, the loopback servers saw no
request, and a fence *below* the guard saw no dial at all. The fence refuses anything but loopback, so a
guard bug can never send traffic off this machine; names resolve through a table, never through DNS. A
control test shows the loopback spellings are live: with the guard off they do reach the server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolhall import Toolbox, ToolResult
from toolhall.tools import http

from ._http_support import LoopbackFence, Server, StaticResolver, running

pytestmark = pytest.mark.anyio

NAMES: dict[str, list[str] | list[list[str]]] = {
    "evil.test": ["127.0.0.1"],
    "mixed.test": ["93.184.216.34", "127.0.0.1"],  # one public and one private answer
    "private.test": ["10.0.0.5"],
    "metadata.test": ["169.254.169.254"],
    "mapped.test": ["::ffff:169.254.169.254"],
    "nat64.test": ["64:ff9b::7f00:1"],
    "v6local.test": ["fd00:ec2::254"],
    "public.test": ["93.184.216.34"],
}

# Loopback spellings aimed at the live servers ({p}: the IPv4 server's port, {q}: the IPv6 server's).
LOOPBACK = [
    "http://127.0.0.1:{p}/",
    "https://127.0.0.1:{p}/",
    "http://127.0.0.1:{p}/%2561dmin",
    "http://localhost:{p}/",
    "http://LOCALHOST:{p}/",
    "http://localhost.:{p}/",
    "http://api.localhost:{p}/",
    "http://2130706433:{p}/",
    "http://0x7f000001:{p}/",
    "http://0x7F000001.:{p}/",
    "http://017700000001:{p}/",
    "http://0x7f.0.0.1:{p}/",
    "http://0x7f.1:{p}/",
    "http://0177.1:{p}/",
    "http://127.1:{p}/",
    "http://127.0.1:{p}/",
    "http://0x7f.0x0.0x0.0x1:{p}/",
    "http://00000000177.000000000.000000000.000000001:{p}/",
    "http://127.127.127.127:{p}/",
    "http://127。0。0。1:{p}/",
    "http://0:{p}/",
    "http://0.0.0.0:{p}/",
    "http://[::]:{p}/",
    "http://[::ffff:127.0.0.1]:{p}/",
    "http://[::ffff:7f00:1]:{p}/",
    "http://[0:0:0:0:0:ffff:127.0.0.1]:{p}/",
    "http://[::127.0.0.1]:{p}/",
    "http://[64:ff9b::127.0.0.1]:{p}/",
    "http://[2002:7f00:1::]:{p}/",
    "http://[::1]:{q}/",
    "http://[0:0:0:0:0:0:0:1]:{q}/",
    "http://[0000::1]:{q}/",
    "http://user:pass@127.0.0.1:{p}/",
    "http://public.test@127.0.0.1:{p}/",
    "http://127.0.0.1:{p}\\@public.test/",
    "http://evil.test:{p}/",
    "http://evil.test.:{p}/",
    "http://mixed.test:{p}/",
    "http://nat64.test:{p}/",
]

# Private, link-local, metadata and special ranges: never dialled (the fence would record it).
FENCED = [
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.169.254/computeMetadata/v1/",
    "http://0xa9fea9fe/",
    "http://2852039166/",
    "http://0251.0376.0251.0376/",
    "http://0xA9.0xFE.0xA9.0xFE/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:a9fe:a9fe::]/",
    "http://[fd00:ec2::254]/",
    "http://169.254.170.2/v2/credentials",
    "http://100.100.100.200/latest/meta-data/",
    "http://192.0.0.192/latest/user-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://metadata/computeMetadata/v1/",
    "http://instance-data/latest/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://3232235777/",
    "http://100.64.0.1/",
    "http://198.18.0.1/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://255.255.255.255/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]/",
    "http://[ff02::1]/",
    "http://[fc00::1]/",
    "http://[::ffff:0:a00:1]/",
    "http://[2001:db8::1]/",
    "http://425.510.425.510/",
    "http://%31%32%37%2e%30%2e%30%2e%31/",
    "http://private.test/",
    "http://metadata.test/",
    "http://mapped.test/",
    "http://v6local.test/",
]

SCHEMES = [
    "file:///etc/passwd",
    "gopher://127.0.0.1:6379/_save",
    "dict://127.0.0.1:6379/CONFIG%20SET%20dir",
    "ftp://127.0.0.1/",
    "ldap://127.0.0.1/",
    "//127.0.0.1/",
]


@pytest.fixture(scope="module")
def v4() -> Iterator[Server]:
    with running("127.0.0.1") as srv:
        yield srv


@pytest.fixture(scope="module")
def v6() -> Iterator[Server]:
    """A server on [::1]; where IPv6 loopback is missing, one on 127.0.0.1 keeps the refusal tests running."""
    try:
        server = running("::1")
        srv = server.__enter__()
    except OSError:
        with running("127.0.0.1") as fallback:
            yield fallback
        return
    try:
        yield srv
    finally:
        server.__exit__(None, None, None)


def guarded(fence: LoopbackFence, **options: object) -> Toolbox:
    return http.toolbox(resolver=StaticResolver(NAMES), network_backend=fence, **options)  # type: ignore[arg-type]


async def assert_refused(tb: Toolbox, url: str, fence: LoopbackFence, *servers: Server) -> ToolResult:
    before = [len(s.hits.requests) for s in servers]
    result = await tb.call("http_request", {"url": url})
    assert not result.ok, f"{url} was fetched: {result.output[:200]}"
    assert result.error is not None and result.error.code in ("denied", "invalid_input"), (url, result.error)
    assert fence.dialled == [] and fence.refused == [], (url, fence.dialled, fence.refused)
    assert [len(s.hits.requests) for s in servers] == before, url
    return result


def test_there_are_at_least_forty_forms() -> None:
    """The adversarial list covers at least forty distinct URL forms."""
    assert len(set(LOOPBACK + FENCED + SCHEMES)) >= 40


@pytest.mark.parametrize("form", LOOPBACK)
async def test_loopback_spelling_is_refused(form: str, v4: Server, v6: Server) -> None:
    """Every spelling of loopback, aimed at a live server, is refused before any connection."""
    fence = LoopbackFence()
    await assert_refused(guarded(fence), form.format(p=v4.port, q=v6.port), fence, v4, v6)


@pytest.mark.parametrize("form", FENCED)
async def test_private_and_metadata_address_is_refused(form: str) -> None:
    """Private, link-local, metadata and special-purpose destinations are refused, never dialled."""
    fence = LoopbackFence()
    await assert_refused(guarded(fence), form, fence)


@pytest.mark.parametrize("form", SCHEMES)
async def test_non_http_scheme_is_refused(form: str, v4: Server) -> None:
    """Only absolute http and https URLs are accepted."""
    fence = LoopbackFence()
    await assert_refused(guarded(fence), form, fence, v4)


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{q4}/",
        "http://2130706433:{q4}/",
        "http://localhost:{p}/",
        "http://[::1]:{q}/",
        "http://169.254.169.254/latest/meta-data/",
        "http://evil.test:{q4}/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_save",
        "http://user:pw@127.0.0.1:{p}/",
    ],
)
async def test_redirect_into_a_refused_destination_is_refused(target: str, v4: Server, v6: Server) -> None:
    """An allowed server redirecting to a refused place is refused on that hop."""
    fence = LoopbackFence()
    tb = guarded(fence, allow_hosts=[f"127.0.0.1:{v4.port}"])
    with running("127.0.0.1") as forbidden:
        url = target.format(p=v4.port, q=v6.port, q4=forbidden.port)
        before = len(forbidden.hits.requests)
        result = await tb.call("http_request", {"url": v4.url(f"/redirect?to={url}")})
        assert result.error is not None and result.error.code == "denied", result
        assert len(forbidden.hits.requests) == before and fence.refused == []
        assert result.error.details is not None and result.error.details["redirects"][0]["status"] == 302
        assert "reached by redirect from" in result.error.message


async def test_deny_list_beats_allow_list(v4: Server) -> None:
    """A host both allowed and denied is refused; denied networks apply with the guard off too."""
    fence = LoopbackFence()
    tb = guarded(fence, allow_hosts=["127.0.0.1"], deny_hosts=[f"127.0.0.1:{v4.port}"])
    result = await assert_refused(tb, v4.url("/"), fence, v4)
    assert "deny_hosts" in result.error.message  # type: ignore[union-attr]
    open_tb = guarded(fence, block_private=False, deny_hosts=["127.0.0.0/8", "evil.test"])
    await assert_refused(open_tb, v4.url("/", host="2130706433"), fence, v4)
    await assert_refused(open_tb, v4.url("/", host="evil.test"), fence, v4)


async def test_refusal_names_the_address_and_how_to_allow_it(v4: Server) -> None:
    """The message says what the host resolved to, which range refused it, and the way out."""
    fence = LoopbackFence()
    result = await assert_refused(guarded(fence), v4.url("/", host="evil.test"), fence, v4)
    assert result.error is not None and result.error.details is not None
    assert result.error.details["reason"] == "blocked_address" and result.error.details["addresses"] == ["127.0.0.1"]
    assert "loopback" in result.error.message and "allow_hosts" in result.error.message


@pytest.mark.parametrize(
    "form",
    [
        "http://127.0.0.1:{p}/",
        "http://2130706433:{p}/",
        "http://0x7f.1:{p}/",
        "http://127.1:{p}/",
        "http://0:{p}/",
        "http://[::ffff:127.0.0.1]:{p}/",
        "http://evil.test:{p}/",
        "http://[::1]:{q}/",
    ],
)
async def test_control_loopback_spellings_are_live_with_the_guard_off(form: str, v4: Server, v6: Server) -> None:
    """With the guard off the same spellings do reach the servers, so the refusals above are real."""
    if "[::1]" in form and v6.host != "::1":
        pytest.skip("this machine has no IPv6 loopback")
    fence = LoopbackFence()
    result = await guarded(fence, block_private=False).call("http_request", {"url": form.format(p=v4.port, q=v6.port)})
    assert result.ok and result.data["status"] == 200, result.error
    assert fence.dialled and fence.refused == []


async def test_allow_list_opens_one_service_only(v4: Server) -> None:
    """Allowing `127.0.0.1:PORT` opens that port in every spelling, and no other port."""
    fence = LoopbackFence()
    tb = guarded(fence, allow_hosts=[f"127.0.0.1:{v4.port}"])
    assert (await tb.call("http_request", {"url": v4.url("/json", host="2130706433")})).ok
    with running("127.0.0.1") as neighbour:
        fence.dialled.clear()
        await assert_refused(tb, neighbour.url("/"), fence, neighbour)
