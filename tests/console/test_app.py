"""The console's JSON API and event stream over real HTTP, and answers across processes (SQLite, PostgreSQL)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._services import require_postgres
from toolhall import PostgresLog

from .conftest import TOKEN, WAIT, Console, event_stream, wait_for_pending

BEARER = {"Authorization": f"Bearer {TOKEN}"}
AGENT = Path(__file__).with_name("agent_process.py")


@pytest.fixture
def console(make_console: Callable[..., Console]) -> Console:
    """A console over SQLite."""
    return make_console()


@pytest.fixture
def api(console: Console) -> Iterator[httpx.Client]:
    """A client that presents the bearer token (as a script would)."""
    with httpx.Client(base_url=console.url, headers=BEARER, timeout=10) as client:
        yield client


def test_the_event_stream_starts_with_a_snapshot_then_sends_calls_live(console: Console, api: httpx.Client) -> None:
    """A stream opens with the snapshot, then sends each call as it starts and ends."""
    assert console.call("echo", {"text": "before"}).result(WAIT).ok
    with api.stream("GET", "/console/api/events") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
    events = event_stream(api)
    with closing(events):
        kind, snapshot = next(events)
        assert kind == "snapshot" and [c["input_preview"] for c in snapshot["calls"]] == ['{"text": "before"}']
        assert snapshot["approval_timeout"] == 60.0
        assert console.call("echo", {"text": "live"}).result(WAIT).ok
        for kind, data in events:
            if kind == "call" and data["input_preview"] == '{"text": "live"}' and data["status"] == "ok":
                break


def test_an_approval_request_streams_and_is_answered_over_the_api(console: Console, api: httpx.Client) -> None:
    """A request appears in the stream with its details; answering it lets the agent's call run."""
    events = event_stream(api)
    with closing(events):
        next(events)
        future = console.call("write_note", {"path": "plan.md", "content": "go"})
        request = next(data for kind, data in events if kind == "approval")
        assert (request["tool"], request["subjects"], request["arguments"]) == (
            "write_note", ["plan.md"], {"path": "plan.md", "content": "go"},
        )  # fmt: skip
        assert request["annotations"]["destructive"] is True
        answer = api.post(f"/console/api/approvals/{request['call_id']}", json={"decision": "approve", "by": "ann"})
        assert answer.status_code == 200
        assert answer.json()["approval"]["answered_by"] == "console:ann"
        assert answer.json()["approval"]["answered_at"]
        assert future.result(WAIT).ok
        done = next(data for kind, data in events if kind == "approval_done")
    assert done == {"call_id": request["call_id"]}


def test_a_page_that_reconnects_gets_what_it_missed_and_nothing_twice(console: Console, api: httpx.Client) -> None:
    """Reconnecting with Last-Event-ID replays the events after it, without a new snapshot."""
    events = event_stream(api)
    with closing(events):
        next(events)
        console.call("echo", {"text": "seen"}).result(WAIT)
        next(d for k, d in events if k == "call" and d["input_preview"] == '{"text": "seen"}' and d["status"] == "ok")
    with api.stream("GET", "/console/api/events") as response:
        last_id = next(line[4:] for line in response.iter_lines() if line.startswith("id: "))
    console.call("echo", {"text": "missed"}).result(WAIT)
    time.sleep(0.3)  # the feed polls on (it lingers a few seconds after the last page left)
    with api.stream("GET", "/console/api/events", headers={"Last-Event-ID": last_id}) as response:
        text = response.read().decode()
    assert "event: snapshot" not in text
    assert text.count('"input_preview": "{\\"text\\": \\"missed\\"}"') >= 1
    assert '\\"seen\\"' not in text
    with api.stream("GET", "/console/api/events", headers={"Last-Event-ID": "other-3"}) as response:
        assert "event: snapshot" in response.read().decode()


def test_answering_twice_is_a_conflict_naming_the_first_answer(console: Console, api: httpx.Client) -> None:
    """The second answer is refused (409) and says who answered first; the first answer stands."""
    future = console.call("write_note", {"path": "a", "content": "b"})
    call_id = wait_for_pending(console.store)
    first = api.post(f"/console/api/approvals/{call_id}", json={"decision": "deny", "reason": "no", "by": "bo"})
    second = api.post(f"/console/api/approvals/{call_id}", json={"decision": "approve"})
    assert first.status_code == 200 and second.status_code == 409
    assert "already answered (deny) by console:bo" in second.json()["message"]
    result = future.result(WAIT)
    assert result.error is not None and result.error.code == "denied" and "no" in result.error.message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"decision": "maybe"}, "decision must be 'approve' or 'deny'; got 'maybe'"),
        ({"decision": "approve", "scope": "forever"}, "scope must be 'call', 'tool' or 'subject'; got 'forever'"),
        ({"decision": "approve", "extra": 1}, "unknown field(s) ['extra']; allowed: decision, scope, reason, by"),
        ({"decision": "deny", "by": "<b>x</b>"}, "by must be a name of 1 to 64 letters"),
        ({"decision": "deny", "reason": 5}, "reason must be text of at most 2000 characters"),
        ([1, 2], "the body must be a JSON object"),
    ],
)
def test_bad_answers_are_refused_naming_the_field(console: Console, api: httpx.Client, body: Any, message: str) -> None:
    """Each malformed answer gets 400 with what was wrong and what is allowed; the request stays open."""
    future = console.call("write_note", {"path": "a", "content": "b"})
    call_id = wait_for_pending(console.store)
    response = api.post(f"/console/api/approvals/{call_id}", json=body)
    assert response.status_code == 400 and message in response.json()["message"]
    assert not console.store.get_approval(call_id).answered  # type: ignore[union-attr]
    console.store.answer_approval(call_id, "deny")
    future.result(WAIT)


def test_answering_an_unknown_call_is_not_found(api: httpx.Client) -> None:
    """No request for that call: 404."""
    response = api.post("/console/api/approvals/call_nope", json={"decision": "approve"})
    assert response.status_code == 404 and "call_nope" in response.json()["message"]


def test_a_denial_without_a_reason_gets_one(console: Console, api: httpx.Client) -> None:
    """The agent always learns why: an empty reason becomes 'denied in the console'."""
    future = console.call("write_note", {"path": "a", "content": "b"})
    api.post(f"/console/api/approvals/{wait_for_pending(console.store)}", json={"decision": "deny", "reason": "  "})
    assert "denied in the console" in future.result(WAIT).error.message  # type: ignore[union-attr]


def test_a_call_opens_with_its_full_output_not_the_models_cut(console: Console, api: httpx.Client) -> None:
    """The detail comes from the store: the whole output, though the model saw it truncated."""
    result = console.call("huge").result(WAIT)
    assert result.truncated
    detail = api.get(f"/console/api/calls/{result.call_id}").json()
    assert detail["output_chars"] == 120_000 and len(detail["output"]) == 120_000
    assert detail["status"] == "ok"
    assert api.get("/console/api/calls/call_missing").status_code == 404


def test_the_call_list_filters_in_the_store(console: Console, api: httpx.Client) -> None:
    """Filters by tool, status and session are applied by the store query."""
    console.call("echo", {"text": "a"}).result(WAIT)
    console.call("leak").result(WAIT)
    console.call("nope").result(WAIT)
    tools = [call["tool"] for call in api.get("/console/api/calls", params={"tool": "echo"}).json()["calls"]]
    assert tools == ["echo"]
    errors = api.get("/console/api/calls", params={"status": "error"}).json()["calls"]
    assert [call["tool"] for call in errors] == ["nope"]
    session = api.get("/console/api/calls", params={"session": console.session.session_id, "limit": 2}).json()
    assert len(session["calls"]) == 2
    assert api.get("/console/api/calls", params={"session": "other"}).json()["calls"] == []


@pytest.mark.parametrize(
    ("params", "message"),
    [({"status": "bogus"}, "status must be one of cancelled, denied, error, ok, pending, running, timeout"),
     ({"limit": "0"}, "limit must be an integer from 1 to 1000; got '0'")],
)  # fmt: skip
def test_bad_filters_are_refused_naming_the_argument(api: httpx.Client, params: dict[str, str], message: str) -> None:
    """A wrong status or limit is a 400 naming it and the allowed values."""
    response = api.get("/console/api/calls", params=params)
    assert response.status_code == 400 and message in response.json()["message"]


def test_stats_cover_sessions_and_tools(console: Console, api: httpx.Client) -> None:
    """The stats endpoint counts the session's calls and ranks tools by time."""
    for _ in range(3):
        console.call("echo", {"text": "x"}).result(WAIT)
    console.call("nope").result(WAIT)
    stats = api.get("/console/api/stats").json()
    [session] = stats["sessions"]
    assert (session["session_id"], session["calls"], session["errors"]) == (console.session.session_id, 4, 1)
    assert session["error_rate"] == 0.25
    assert {row["tool"] for row in stats["slowest_tools"]} >= {"echo"}
    assert sum(minute["calls"] for minute in stats["per_minute"]) == 4


def test_the_queue_lists_open_requests(console: Console, api: httpx.Client) -> None:
    """GET /console/api/approvals lists the open requests with their deadline."""
    future = console.call("write_note", {"path": "q", "content": "r"})
    call_id = wait_for_pending(console.store)
    [request] = api.get("/console/api/approvals").json()["approvals"]
    assert request["call_id"] == call_id and request["expires_at"] is not None
    console.store.answer_approval(call_id, "deny")
    future.result(WAIT)


# -- another process, one store ----------------------------------------------------------------------
@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, Any]]:
    """(kind, target, store): a store the console opens and another process opens too."""
    if request.param == "sqlite":
        from toolhall import SqliteLog

        target = str(tmp_path / "shared.db")
        store: Any = SqliteLog(target)
        yield "sqlite", target, store
        store.close()
        return
    import psycopg
    from psycopg.conninfo import make_conninfo

    dsn = require_postgres()
    schema = "console_" + uuid.uuid4().hex[:10]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    target = make_conninfo(dsn, options=f"-csearch_path={schema}")
    store = PostgresLog(target)
    try:
        yield "postgres", target, store
    finally:
        store.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_the_console_answers_a_request_from_another_process(
    shared_store: tuple[str, str, Any], make_console: Callable[..., Console]
) -> None:
    """An agent process waiting on the shared store continues when the console approves its call."""
    kind, target, store = shared_store
    console = make_console(store)
    session_id = "sess_other_" + uuid.uuid4().hex[:8]
    agent = subprocess.Popen(
        [sys.executable, str(AGENT), kind, target, session_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with httpx.Client(base_url=console.url, headers=BEARER, timeout=10) as api:
            events = event_stream(api)
            with closing(events):
                request = next(data for k, data in events if k == "approval" and data["session_id"] == session_id)
                answer = api.post(
                    f"/console/api/approvals/{request['call_id']}", json={"decision": "approve", "by": "ops"}
                )
                assert answer.status_code == 200
                out, err = agent.communicate(timeout=20)
                assert agent.returncode == 0, err
                outcome = json.loads(out.strip().splitlines()[-1])
                assert outcome["ok"] and outcome["output"] == "wrote from-another-process.md"
                next(d for k, d in events if k == "call" and d["id"] == outcome["call_id"] and d["status"] == "ok")
        approval = store.get_approval(outcome["call_id"])
        assert approval.decision == "approve" and approval.answered_by == "console:ops"
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.communicate()


@pytest.mark.anyio
async def test_a_server_with_an_open_page_stops_promptly_and_quietly(caplog: pytest.LogCaptureFixture) -> None:
    """`serve_http` stops within a few seconds with a page listening; no stream has to be cut off."""
    import asyncio

    import anyio

    from toolhall import Session, Toolbox
    from toolhall.console import console_routes
    from toolhall.mcp.server import serve_http
    from toolhall.testing import MemoryLog

    from .conftest import echo, free_port

    store, port = MemoryLog(), free_port()
    routes = console_routes(store, token=TOKEN)
    server = asyncio.create_task(serve_http(Session(Toolbox([echo]), log=store), port=port, token=TOKEN, routes=routes))
    url = f"http://127.0.0.1:{port}/console/api/events"
    async with httpx.AsyncClient(headers=BEARER, timeout=10) as client:
        for _ in range(100):
            try:
                await client.get(f"http://127.0.0.1:{port}/console/api/stats")
                break
            except httpx.TransportError:
                await asyncio.sleep(0.05)
        # uvicorn's loggers do not propagate to the root logger caplog watches (and are set up at start).
        uvicorn_log = logging.getLogger("uvicorn")
        uvicorn_log.addHandler(caplog.handler)
        async with client.stream("GET", url) as response:
            assert response.status_code == 200
            server.cancel()
            with anyio.fail_after(5):
                with pytest.raises(asyncio.CancelledError):
                    await server
    uvicorn_log.removeHandler(caplog.handler)
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []


def test_a_failing_store_is_a_503_naming_the_failure(make_console: Callable[..., Console], tmp_path: Path) -> None:
    """When the store cannot be read the API says so (503) instead of a bare server error."""
    from toolhall import SqliteLog

    store = SqliteLog(tmp_path / "gone.db")
    console = make_console(store)
    store.close()
    with httpx.Client(base_url=console.url, headers=BEARER) as client:
        response = client.get("/console/api/calls")
    assert response.status_code == 503
    assert response.json()["error"] == "store_unavailable" and "closed database" in response.json()["message"]
