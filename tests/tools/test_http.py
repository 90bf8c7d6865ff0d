"""http_request against a real server on 127.0.0.1: bodies, methods, redirects, limits, errors, secrets."""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Iterator
from typing import Any

import pytest

from toolhall import ConfigError, Toolbox, ToolContext, ToolResult
from toolhall.tools import http

from ._http_support import Server, running

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with running() as srv:
        yield srv


@pytest.fixture(scope="module")
def other() -> Iterator[Server]:
    """A second allowed server (another origin) for cross-origin redirects."""
    with running() as srv:
        yield srv


@pytest.fixture
def tb(server: Server, other: Server) -> Toolbox:
    return http.toolbox(allow_hosts=[f"127.0.0.1:{server.port}", f"127.0.0.1:{other.port}"])


async def fetch(tb: Toolbox, url: str, context: ToolContext | None = None, **args: Any) -> ToolResult:
    return await tb.call("http_request", {"url": url, **args}, context=context)


async def test_json_response_is_parsed_into_data(tb: Toolbox, server: Server) -> None:
    """A JSON body arrives parsed, with status, reason, final URL and headers."""
    result = await fetch(tb, server.url("/json"))
    assert result.ok, result.error
    assert result.data["status"] == 200 and result.data["reason"] == "OK"
    assert result.data["json"] == {"name": "toolhall", "n": [1, 2, 3]}
    assert result.data["url"] == server.url("/json")
    assert result.data["headers"]["content-type"] == "application/json"
    assert result.data["redirects"] == []


async def test_json_suffix_types_are_parsed_and_bad_json_stays_text(tb: Toolbox, server: Server) -> None:
    """`application/problem+json` parses; a body that is not valid JSON stays text with a reason."""
    assert (await fetch(tb, server.url("/problem"))).data["json"] == {"title": "gone"}
    bad = await fetch(tb, server.url("/bad-json"))
    assert bad.ok and bad.data["text"] == '{"name": ' and "not valid JSON" in bad.data["json_error"]


async def test_error_status_is_a_normal_result(tb: Toolbox, server: Server) -> None:
    """A 404 or 500 is an ok result carrying the status and body, not an error."""
    for status in (404, 500):
        result = await fetch(tb, server.url(f"/status/{status}"))
        assert result.ok and result.data["status"] == status and result.data["text"] == "status body"


async def test_text_is_decoded_by_declared_charset(tb: Toolbox, server: Server) -> None:
    """The Content-Type charset decodes the text."""
    result = await fetch(tb, server.url("/latin1"))
    assert result.data["text"] == "café" and result.data["charset"] == "iso8859-1"


async def test_text_charset_is_detected_from_the_document_or_utf8(tb: Toolbox, server: Server) -> None:
    """Without a declared charset, a meta tag decides, and untyped UTF-8 text is recognised."""
    meta = await fetch(tb, server.url("/meta-charset"))
    assert "Привет" in meta.data["text"] and meta.data["charset_source"] == "document"
    untyped = await fetch(tb, server.url("/untyped-utf8"))
    assert untyped.data["text"] == "naïve text" and untyped.data["charset"] == "utf-8"


async def test_binary_is_summarised_and_base64_on_request(tb: Toolbox, server: Server) -> None:
    """Binary bodies give type, size and sha256; base64 only when asked."""
    expected = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    summary = (await fetch(tb, server.url("/png"))).data["binary"]
    assert summary == {"type": "image/png", "size": len(expected), "sha256": hashlib.sha256(expected).hexdigest()}
    full = (await fetch(tb, server.url("/png"), base64=True)).data["binary"]
    assert base64.b64decode(full["base64"]) == expected


async def test_methods_bodies_params_and_headers_reach_the_server(tb: Toolbox, server: Server) -> None:
    """JSON and text bodies, merged query parameters and custom headers are sent as given."""
    result = await fetch(
        tb,
        server.url("/echo?a=1"),
        method="post",
        json={"x": [1, "é"]},
        params={"b": 2, "c": [True, "z"]},
        headers={"X-Trace": "abc"},
    )
    seen = result.data["json"]
    assert seen["method"] == "POST" and seen["query"] == "a=1&b=2&c=true&c=z"
    assert seen["body"] == '{"x": [1, "é"]}' and seen["headers"]["Content-Type"] == "application/json"
    assert seen["headers"]["X-Trace"] == "abc" and seen["headers"]["User-Agent"].startswith("toolhall")
    put = (await fetch(tb, server.url("/echo"), method="PUT", body="plain text")).data["json"]
    assert put["method"] == "PUT" and put["body"] == "plain text"


async def test_head_request_has_no_body(tb: Toolbox, server: Server) -> None:
    """HEAD returns status and headers with an empty body."""
    result = await fetch(tb, server.url("/json"), method="HEAD")
    assert result.ok and result.data["status"] == 200 and result.data["bytes"] == 0 and "json" not in result.data


async def test_redirects_are_followed_and_recorded(tb: Toolbox, server: Server) -> None:
    """The final URL and each redirecting hop are in the result."""
    result = await fetch(tb, server.url("/chain/3"))
    assert result.data["text"] == "end of chain" and result.data["url"] == server.url("/chain/0")
    assert [hop["url"] for hop in result.data["redirects"]] == [server.url(f"/chain/{n}") for n in (3, 2, 1)]
    assert {hop["status"] for hop in result.data["redirects"]} == {302}


async def test_redirect_methods_follow_http_semantics(tb: Toolbox, server: Server) -> None:
    """303 turns a POST into a body-less GET; 307 and 308 keep the method and body."""
    for status, method, body in ((303, "GET", ""), (302, "GET", ""), (307, "POST", "data"), (308, "POST", "data")):
        url = server.url(f"/redirect?status={status}&to=/echo")
        result = await fetch(tb, url, method="POST", body="data", headers={"Content-Type": "text/plain"})
        seen = result.data["json"]
        assert (seen["method"], seen["body"]) == (method, body), status
        assert ("Content-Type" in seen["headers"]) == (method == "POST")


async def test_redirects_can_be_left_unfollowed(tb: Toolbox, server: Server) -> None:
    """With follow_redirects false the 3xx itself comes back with its Location."""
    result = await fetch(tb, server.url("/redirect?to=/json"), follow_redirects=False)
    assert result.ok and result.data["status"] == 302 and result.data["headers"]["location"] == "/json"


async def test_redirect_limit_is_an_error_with_the_chain(server: Server) -> None:
    """More redirects than max_redirects fails with the chain in the details."""
    tb = http.toolbox(allow_hosts=[f"127.0.0.1:{server.port}"], max_redirects=2)
    result = await fetch(tb, server.url("/chain/5"))
    assert not result.ok and result.error is not None
    assert result.error.details is not None and result.error.details["reason"] == "too_many_redirects"
    assert len(result.error.details["redirects"]) == 3


async def test_cross_origin_redirect_drops_the_models_credentials(tb: Toolbox, server: Server, other: Server) -> None:
    """Authorization and Cookie given by the model are not sent on to another origin."""
    target = other.url("/echo")
    headers = {"Authorization": "Bearer model-token", "X-Keep": "1", "Cookie": "a=b"}
    result = await fetch(tb, server.url(f"/redirect?status=307&to={target}"), headers=headers)
    seen = result.data["json"]["headers"]
    assert "Authorization" not in seen and "Cookie" not in seen and seen["X-Keep"] == "1"
    same = await fetch(tb, server.url("/redirect?status=307&to=/echo"), headers=headers)
    assert same.data["json"]["headers"]["Authorization"] == "Bearer model-token"


async def test_large_body_is_capped_while_streaming(tb: Toolbox, server: Server) -> None:
    """A body past max_bytes is cut there, marked truncated, and the download stops."""
    result = await fetch(tb, server.url("/large?size=50000000&token=cap"), max_bytes=100_000)
    assert result.ok and result.data["truncated"] is True and result.data["bytes"] == 100_000
    assert "max_bytes=100000" in result.data["note"]
    for _ in range(100):
        if "cap" in server.hits.streamed:
            break
        time.sleep(0.05)
    assert server.hits.streamed["cap"] < 20_000_000  # the server was cut off long before 50 MB


async def test_endless_body_never_downloads_past_the_cap(tb: Toolbox, server: Server) -> None:
    """A body that never ends returns promptly at the cap."""
    started = time.perf_counter()
    result = await fetch(tb, server.url("/endless?token=endless"), max_bytes=256 * 1024, timeout=10)
    assert result.ok and result.data["truncated"] and result.data["bytes"] == 256 * 1024
    assert time.perf_counter() - started < 5


async def test_chunked_body_is_read_whole(tb: Toolbox, server: Server) -> None:
    """A chunked response is reassembled."""
    result = await fetch(tb, server.url("/chunked?n=200"))
    assert result.data["text"] == "".join(f"chunk {i}\n" for i in range(200)) and not result.data["truncated"]


async def test_gzip_body_is_decoded(tb: Toolbox, server: Server) -> None:
    """A gzip-encoded body is decompressed and decoded."""
    result = await fetch(tb, server.url("/gzip-text"))
    assert result.data["text"] == "héllo gzip " * 100


async def test_gzip_bomb_is_capped_after_decompression(tb: Toolbox, server: Server) -> None:
    """64 MB of zeros in 64 KB of gzip yield at most max_bytes decompressed bytes."""
    result = await fetch(tb, server.url("/bomb"), max_bytes=1_000_000)
    assert result.ok and result.data["truncated"] and result.data["bytes"] == 1_000_000
    assert result.data["binary"]["size"] == 1_000_000


async def test_slow_response_times_out_with_the_phase(tb: Toolbox, server: Server) -> None:
    """A server slower than the timeout gives a timeout error saying what it waited for."""
    started = time.perf_counter()
    result = await fetch(tb, server.url("/slow-headers?delay=3"), timeout=0.5)
    assert result.error is not None and result.error.code == "timeout"
    assert result.error.details == {"reason": "deadline", "phase": "waiting for the response"}
    assert time.perf_counter() - started < 2.5


async def test_trickling_body_times_out_with_the_partial_body(tb: Toolbox, server: Server) -> None:
    """A body that trickles past the deadline returns what arrived as data on the timeout error."""
    result = await fetch(tb, server.url("/slow-body"), timeout=0.6)
    assert result.error is not None and result.error.code == "timeout"
    assert result.data["status"] == 200 and 0 < result.data["bytes"] < 100
    assert set(result.data["text"]) == {"a"}


@pytest.mark.parametrize(
    ("path", "fragment"),
    [("/garbage", "invalid HTTP response"), ("/hangup", "invalid HTTP response"), ("/bad-header", "invalid")],
)
async def test_invalid_responses_are_protocol_errors(tb: Toolbox, server: Server, path: str, fragment: str) -> None:
    """Garbage, a hang-up and a malformed header line are execution errors with reason protocol."""
    result = await fetch(tb, server.url(path))
    assert result.error is not None and result.error.code == "execution_error"
    assert result.error.details == {"reason": "protocol"} and fragment in result.error.message


async def test_body_cut_short_keeps_what_arrived(tb: Toolbox, server: Server) -> None:
    """A body shorter than its Content-Length is a protocol error carrying the partial response."""
    result = await fetch(tb, server.url("/short"))
    assert result.error is not None and result.error.details == {"reason": "protocol"}
    assert result.data["status"] == 200 and result.data["text"] == "only ten b"


async def test_connection_refused_is_a_connect_error(server: Server) -> None:
    """An allowed port with nothing listening gives reason connect."""
    with running() as gone:
        port = gone.port
    tb = http.toolbox(allow_hosts=["127.0.0.1"])
    result = await fetch(tb, f"http://127.0.0.1:{port}/")
    assert result.error is not None and result.error.code == "execution_error"
    assert result.error.details == {"reason": "connect"} and f"127.0.0.1:{port}" in result.error.message


async def test_dns_failure_is_reported_as_dns() -> None:
    """A name that does not resolve is an execution error with reason dns."""

    async def nxdomain(host: str, port: int) -> list[str]:
        raise OSError(-2, "Name or service not known")

    tb = http.toolbox(resolver=nxdomain)
    result = await fetch(tb, "http://no-such-host.test/")
    assert result.error is not None and result.error.code == "execution_error"
    assert result.error.details == {"reason": "dns", "host": "no-such-host.test"}
    assert "Name or service not known" in result.error.message


async def test_system_resolver_reaches_an_allowed_local_name(server: Server) -> None:
    """`localhost` resolved by the system resolver is reachable once allowed by name."""
    tb = http.toolbox(allow_hosts=["localhost"])
    result = await fetch(tb, server.url("/echo", host="localhost"))
    assert result.ok and result.data["json"]["headers"]["Host"] == f"localhost:{server.port}"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"json": {"a": 1}, "body": "x"}, "either json or body"),
        ({"headers": {"Host": "evil"}}, "'Host' is set by the HTTP client"),
        ({"headers": {"X-A": "1\r\nX-Injected: 2"}}, "line break"),
        ({"headers": {"Bad Name": "1"}}, "not a valid header name"),
        ({"max_bytes": 10**12}, "max_bytes"),
        ({"timeout": 10**6}, "timeout"),
        ({"method": "TRACE"}, "method"),
    ],
)
async def test_bad_arguments_are_invalid_input(
    tb: Toolbox, server: Server, args: dict[str, Any], fragment: str
) -> None:
    """Each bad argument is refused before sending, naming what is wrong."""
    before = len(server.hits.requests)
    result = await fetch(tb, server.url("/echo"), **args)
    assert result.error is not None and result.error.code == "invalid_input", result.error
    assert fragment in result.error.message
    assert len(server.hits.requests) == before


async def test_relative_url_is_invalid_input(tb: Toolbox) -> None:
    """A URL without a scheme is invalid input."""
    result = await fetch(tb, "/just/a/path")
    assert result.error is not None and result.error.code == "invalid_input" and "http://" in result.error.message


async def test_per_call_limits_are_in_the_schema(server: Server) -> None:
    """The toolbox's ceilings appear as the schema's maximums and defaults."""
    tb = http.toolbox(timeout=12, max_bytes=5000)
    props = tb["http_request"].input_schema["properties"]
    assert props["max_bytes"]["maximum"] == 5000 and props["max_bytes"]["default"] == 5000
    assert props["timeout"]["maximum"] == 12 and props["url"]["type"] == "string"


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"allow_hosts": ["http://x"]}, "allow_hosts"),
        ({"deny_hosts": "10.0.0.0/8"}, "deny_hosts"),
        ({"timeout": 0}, "timeout"),
        ({"max_bytes": 0}, "max_bytes"),
        ({"max_redirects": -1}, "max_redirects"),
        ({"secrets": {"api.test": {}}}, "secrets"),
        ({"secrets": {"not a host": "x"}}, "secrets"),
    ],
)
def test_bad_configuration_raises_config_error(kwargs: dict[str, Any], fragment: str) -> None:
    """Building the toolbox with a bad argument raises ConfigError naming it."""
    with pytest.raises(ConfigError, match=fragment):
        http.toolbox(**kwargs)


def test_call_sync_works_across_event_loops(server: Server) -> None:
    """Each `call_sync` runs on a fresh loop; the client pool follows the loop."""
    tb = http.toolbox(allow_hosts=[f"127.0.0.1:{server.port}"])
    for _ in range(3):
        assert tb.call_sync("http_request", {"url": server.url("/json")}).data["status"] == 200


async def test_policy_subject_is_the_url(tb: Toolbox) -> None:
    """Policy rules match the URL argument."""
    tool = tb["http_request"]
    assert tool.annotations.open_world is True and tool.annotations.read_only is False
    assert tool.subjects({"url": "https://example.com/x"}) == ["https://example.com/x"]
