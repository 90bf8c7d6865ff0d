"""http_request cookie jars: kept per session, persisted in the session's store, clearable."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolhall import Policy, Session, SqliteLog, Toolbox, ToolContext, ToolResult
from toolhall.tools import http

from ._http_support import MemoryState, Server, StaticResolver, running

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with running() as srv:
        yield srv


def make(server: Server) -> Toolbox:
    return http.toolbox(allow_hosts=[f"127.0.0.1:{server.port}"])


async def fetch(tb: Toolbox, url: str, context: ToolContext | None = None, **args: object) -> ToolResult:
    return await tb.call("http_request", {"url": url, **args}, context=context)


def session(session_id: str, store: object = None) -> ToolContext:
    return ToolContext(session_id=session_id, store=store)


async def test_cookie_set_by_one_call_is_sent_on_the_next(server: Server) -> None:
    """The jar keeps a cookie between calls and sends it back."""
    tb = make(server)
    await fetch(tb, server.url("/set-cookie?sid=abc"), session("s1"))
    result = await fetch(tb, server.url("/cookies"), session("s1"))
    assert result.data["json"]["cookie"] == "sid=abc"


async def test_sessions_have_separate_jars(server: Server) -> None:
    """A cookie set in one session is not sent in another."""
    tb = make(server)
    await fetch(tb, server.url("/set-cookie?sid=only-a"), session("a"))
    assert (await fetch(tb, server.url("/cookies"), session("b"))).data["json"]["cookie"] is None
    assert (await fetch(tb, server.url("/cookies"), session("a"))).data["json"]["cookie"] == "sid=only-a"


async def test_jar_is_persisted_and_a_later_process_continues_it(server: Server) -> None:
    """The jar is saved in the store, and a fresh toolbox with the same session id sends its cookies."""
    store = MemoryState()
    await fetch(make(server), server.url("/set-cookie?sid=persisted&theme=dark"), session("s9", store))
    saved = json.loads(store.values[("s9", "http.cookies")])
    assert {row["name"]: row["value"] for row in saved} == {"sid": "persisted", "theme": "dark"}
    later = make(server)  # a new toolbox has an empty memory: only the store can supply the cookies
    result = await fetch(later, server.url("/cookies"), session("s9", store))
    assert sorted(result.data["json"]["cookie"].split("; ")) == ["sid=persisted", "theme=dark"]


async def test_clear_cookies_empties_the_jar_and_the_store(server: Server) -> None:
    """`clear_cookies` forgets the session's cookies before sending, in memory and in the store."""
    store = MemoryState()
    tb = make(server)
    await fetch(tb, server.url("/set-cookie?sid=old"), session("s2", store))
    result = await fetch(tb, server.url("/cookies"), session("s2", store), clear_cookies=True)
    assert result.data["json"]["cookie"] is None
    assert ("s2", "http.cookies") not in store.values
    assert (await fetch(tb, server.url("/cookies"), session("s2", store))).data["json"]["cookie"] is None


async def test_cookie_set_on_a_redirect_hop_is_sent_to_the_next_hop(server: Server) -> None:
    """Cookies from a redirecting response apply to the hops after it."""
    tb = make(server)
    result = await fetch(tb, server.url("/redirect?to=/cookies&cookie=hop%3D1%3B%20Path%3D%2F"), session("s3"))
    assert result.data["json"]["cookie"] == "hop=1"
    assert result.data["redirects"][0]["status"] == 302


async def test_cookie_values_are_hidden_from_the_result(server: Server) -> None:
    """Set-Cookie headers show names and attributes, never values."""
    result = await fetch(make(server), server.url("/set-cookie?sid=s3cr3t-value"), session("s4"))
    assert result.data["headers"]["set-cookie"] == ["sid=<hidden>; Path=/"]
    assert "s3cr3t-value" not in json.dumps(result.data["headers"])


async def test_expired_cookie_is_removed(server: Server) -> None:
    """A Set-Cookie with Max-Age=0 deletes the cookie."""
    tb = make(server)
    await fetch(tb, server.url("/set-cookie?sid=abc"), session("s5"))
    await fetch(tb, server.url("/redirect?to=/json&cookie=sid%3Dx%3B%20Max-Age%3D0%3B%20Path%3D%2F"), session("s5"))
    assert (await fetch(tb, server.url("/cookies"), session("s5"))).data["json"]["cookie"] is None


async def test_cookies_stay_with_their_domain(server: Server) -> None:
    """A cookie set by one host name is not sent to another name on the same address."""
    resolver = StaticResolver({"a.test": ["127.0.0.1"], "b.test": ["127.0.0.1"]})
    tb = http.toolbox(allow_hosts=["a.test", "b.test"], resolver=resolver)
    await fetch(tb, server.url("/set-cookie?sid=for-a", host="a.test"), session("s6"))
    assert (await fetch(tb, server.url("/cookies", host="b.test"), session("s6"))).data["json"]["cookie"] is None
    assert (await fetch(tb, server.url("/cookies", host="a.test"), session("s6"))).data["json"]["cookie"] == "sid=for-a"


async def test_failing_store_never_fails_the_request(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    """A store that raises is logged; the request still succeeds with an in-memory jar."""
    caplog.set_level(logging.WARNING, logger="toolhall.tool")
    result = await fetch(make(server), server.url("/set-cookie?sid=abc"), session("s7", MemoryState(fail=True)))
    assert result.ok and result.data["status"] == 200
    assert "could not load the HTTP cookie jar" in caplog.text and "could not save" in caplog.text


async def test_concurrent_calls_of_one_session_share_the_jar(server: Server) -> None:
    """Cookies set by calls running at the same time all land in the session's one jar."""
    store = MemoryState()
    tb = make(server)
    ctx = session("s8", store)
    await asyncio.gather(*(fetch(tb, server.url(f"/set-cookie?c{i}={i}"), ctx) for i in range(4)))
    sent = (await fetch(tb, server.url("/cookies"), ctx)).data["json"]["cookie"]
    assert sorted(sent.split("; ")) == [f"c{i}={i}" for i in range(4)]
    assert len(json.loads(store.values[("s8", "http.cookies")])) == 4


async def test_session_with_sqlite_log_continues_the_jar_in_a_new_process(server: Server, tmp_path: Path) -> None:
    """Through `Session` and `SqliteLog`: a later session with the same id (new store, new toolbox) sends the
    cookies; the logged output shows no cookie value and no configured secret."""
    db = tmp_path / "state.db"
    secrets = {f"http://127.0.0.1:{server.port}": "tok-logged-never-123"}
    policy = Policy(allow=["http_request"])

    first_log = SqliteLog(db)
    first = Session(
        http.toolbox(allow_hosts=["127.0.0.1"], secrets=secrets), log=first_log, policy=policy, session_id="run-1"
    )
    assert (await first.call("http_request", {"url": server.url("/set-cookie?sid=from-run-1")})).ok
    echoed = await first.call("http_request", {"url": server.url("/echo")})
    assert echoed.ok
    first_log.close()

    later_log = SqliteLog(db)
    later = Session(http.toolbox(allow_hosts=["127.0.0.1"]), log=later_log, policy=policy, session_id="run-1")
    result = await later.call("http_request", {"url": server.url("/cookies")})
    assert result.data["json"]["cookie"] == "sid=from-run-1"
    logged = json.dumps([(r.input, r.output, r.data) for r in later_log.calls(session_id="run-1")], default=str)
    assert "from-run-1" in logged  # the /cookies echo itself, which is the server's body
    assert "sid=<hidden>" in logged and "tok-logged-never-123" not in logged
    later_log.close()


def test_jar_text_round_trips_attributes_and_drops_expired_cookies() -> None:
    """Dumped cookies load back with value, path, expiry and HttpOnly; expired ones and junk rows are dropped."""
    import httpx

    from toolhall.tools._http_cookies import dump_cookies, load_cookies

    jar = httpx.Cookies()
    response = httpx.Response(
        200,
        headers=[("set-cookie", "a=1; Path=/app; HttpOnly"), ("set-cookie", "b=2; Max-Age=3600")],
        request=httpx.Request("GET", "http://x.test/app"),
    )
    jar.extract_cookies(response)
    rows = json.loads(dump_cookies(jar.jar))
    rows.append({"name": "broken"})
    rows.append({**rows[0], "name": "old", "expires": 1000})
    loaded = {c.name: c for c in load_cookies(json.dumps(rows))}
    assert set(loaded) == {"a", "b"}
    assert loaded["a"].path == "/app" and loaded["a"].has_nonstandard_attr("HttpOnly")
    assert loaded["b"].expires is not None and not loaded["b"].has_nonstandard_attr("HttpOnly")
    assert list(load_cookies("not json")) == []
