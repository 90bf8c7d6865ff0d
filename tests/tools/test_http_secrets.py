"""Per-host secrets: attached by the tool for their host only, never shown to the model or logged."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from toolhall import ToolResult
from toolhall.tools import http

from ._http_support import Server, running

pytestmark = pytest.mark.anyio

TOKEN = "tok-9f8e7d6c5b4a"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with running() as srv:
        yield srv


@pytest.fixture(scope="module")
def other() -> Iterator[Server]:
    with running() as srv:
        yield srv


def everything(result: ToolResult) -> str:
    """All a result carries, as the model and the log would see it."""
    return json.dumps(result.to_dict(), default=str)


def seen_headers(server: Server) -> dict[str, str]:
    return dict(server.hits.requests[-1]["headers"])


async def call(tb: object, url: str, **args: object) -> ToolResult:
    return await tb.call("http_request", {"url": url, **args})  # type: ignore[attr-defined,no-any-return]


async def test_secret_is_attached_for_its_host_and_redacted(server: Server) -> None:
    """The server gets the token; the result (which echoes headers) never shows it."""
    tb = http.toolbox(allow_hosts=["127.0.0.1"], secrets={f"http://127.0.0.1:{server.port}": TOKEN})
    result = await call(tb, server.url("/echo"))
    assert seen_headers(server)["Authorization"] == f"Bearer {TOKEN}"
    assert result.ok and TOKEN not in everything(result)
    assert result.data["json"]["headers"]["Authorization"] == "[secret]"


async def test_secret_is_not_sent_to_another_host_or_after_a_redirect_there(server: Server, other: Server) -> None:
    """Another port gets no secret, also when a redirect from the secret's host leads there."""
    tb = http.toolbox(allow_hosts=["127.0.0.1"], secrets={f"http://127.0.0.1:{server.port}": TOKEN})
    await call(tb, other.url("/echo"))
    assert "Authorization" not in seen_headers(other)
    result = await call(tb, server.url(f"/redirect?status=307&to={other.url('/echo')}"))
    assert result.data["url"] == other.url("/echo") and "Authorization" not in seen_headers(other)


async def test_bare_host_secret_is_sent_over_https_only(server: Server) -> None:
    """A key without `http://` keeps the secret off plain-http requests."""
    tb = http.toolbox(allow_hosts=["127.0.0.1"], secrets={f"127.0.0.1:{server.port}": TOKEN})
    await call(tb, server.url("/echo"))
    assert "Authorization" not in seen_headers(server)


async def test_secret_from_environment_and_header_mapping(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """`env:NAME` is read at request time, and a mapping sets any headers."""
    monkeypatch.setenv("TOOLHALL_TEST_KEY", "key-from-env-123")
    secrets = {f"http://127.0.0.1:{server.port}": {"X-Api-Key": "env:TOOLHALL_TEST_KEY", "Authorization": "Basic abc="}}
    result = await call(http.toolbox(allow_hosts=["127.0.0.1"], secrets=secrets), server.url("/echo"))
    assert seen_headers(server)["X-Api-Key"] == "key-from-env-123"
    assert seen_headers(server)["Authorization"] == "Basic abc="
    assert "key-from-env-123" not in everything(result)


async def test_missing_environment_secret_fails_without_sending(server: Server) -> None:
    """A secret naming an unset variable fails the call before anything is sent."""
    before = len(server.hits.requests)
    tb = http.toolbox(allow_hosts=["127.0.0.1"], secrets={f"http://127.0.0.1:{server.port}": "env:TOOLHALL_UNSET_VAR"})
    result = await call(tb, server.url("/echo"))
    assert result.error is not None and result.error.details == {"reason": "secret_missing"}
    assert "TOOLHALL_UNSET_VAR" in result.error.message and len(server.hits.requests) == before


async def test_configured_secret_wins_over_the_models_header(server: Server) -> None:
    """The model cannot replace the configured Authorization for that host."""
    tb = http.toolbox(allow_hosts=["127.0.0.1"], secrets={f"http://127.0.0.1:{server.port}": f"Token {TOKEN}"})
    await call(tb, server.url("/echo"), headers={"authorization": "Bearer model-chosen"})
    assert seen_headers(server)["Authorization"] == f"Token {TOKEN}"


async def test_secret_is_redacted_from_error_data(server: Server) -> None:
    """A failed call's partial data is redacted too."""
    tb = http.toolbox(allow_hosts=["127.0.0.1"], secrets={f"http://127.0.0.1:{server.port}": TOKEN})
    result = await call(tb, server.url("/short"))
    assert not result.ok and TOKEN not in everything(result)
