"""The console's feed: polling a store, events for each change, approvals, expiry and stats."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from toolhall.console import CallFeed
from toolhall.console._events import Event
from toolhall.console._summary import compute_stats
from toolhall.log import CallRecord, PendingApproval
from toolhall.testing import MemoryLog

pytestmark = pytest.mark.anyio

NOW = datetime.now(UTC)


def record(**changes: Any) -> CallRecord:
    """A call record with defaults."""
    base: dict[str, Any] = {
        "id": "call_" + uuid.uuid4().hex[:12], "tool": "read_file", "status": "ok", "started_at": NOW,
        "session_id": "s1", "input": {"path": "a.txt"}, "duration_ms": 5.0, "ended_at": NOW,
    }  # fmt: skip
    base.update(changes)
    return CallRecord(**base)


async def next_events(receive: Any, kind: str, count: int = 1) -> list[Event]:
    """The next `count` events of a kind (others are skipped), within 10 s."""
    found: list[Event] = []
    with anyio.fail_after(10):
        while len(found) < count:
            event = await receive.receive()
            if event.kind == kind:
                found.append(event)
    return found


async def test_snapshot_lists_recent_calls_newest_first_without_outputs() -> None:
    """The snapshot holds summaries (no full output), newest first."""
    log = MemoryLog()
    for seconds in (3, 2, 1):
        await log.write(record(id=f"c{seconds}", started_at=NOW - timedelta(seconds=seconds), output="x" * 5000))
    snapshot = await CallFeed(log).snapshot()
    assert [call["id"] for call in snapshot["calls"]] == ["c1", "c2", "c3"]
    assert "output" not in snapshot["calls"][0]
    assert snapshot["stats"]["totals"]["calls"] == 3


async def test_a_call_sends_an_event_when_it_starts_and_when_it_ends() -> None:
    """A row written as running, then finished, gives two `call` events with its status."""
    log = MemoryLog()
    feed = CallFeed(log, interval=0.02)
    async with feed.subscribe() as (first, receive):
        assert [event.kind for event in first] == ["snapshot"] and first[0].data["calls"] == []
        running = record(status="running", ended_at=None, duration_ms=None)
        await log.write(running)
        [started] = await next_events(receive, "call")
        assert started.data["status"] == "running"
        await log.write(dataclasses.replace(running, status="error", error_message="boom"))
        [ended] = await next_events(receive, "call")
    assert (ended.data["id"], ended.data["status"], ended.data["error_message"]) == (running.id, "error", "boom")


async def test_a_long_running_call_is_followed_until_it_ends() -> None:
    """A call that started long before the newest ones is still re-read until it ends."""
    log = MemoryLog()
    old = record(status="running", started_at=NOW - timedelta(minutes=5), ended_at=None)
    await log.write(old)
    feed = CallFeed(log, interval=0.02)
    async with feed.subscribe() as (_, receive):
        await log.write(record(started_at=NOW))
        await next_events(receive, "call")
        await log.write(dataclasses.replace(old, status="ok"))
        [ended] = await next_events(receive, "call")
    assert (ended.data["id"], ended.data["status"]) == (old.id, "ok")


async def test_approval_requests_come_and_go_with_their_answers() -> None:
    """A queued request sends `approval`; answering it sends `approval_done`."""
    log = MemoryLog()
    feed = CallFeed(log, interval=0.02, approval_timeout=120)
    async with feed.subscribe() as (_, receive):
        request = PendingApproval(
            call_id="c1", tool="write_file", requested_at=datetime.now(UTC), session_id="s1",
            arguments={"path": "a"}, subjects=("a",), annotations={"destructive": True}, reason="asks",
        )  # fmt: skip
        log.request_approval(request)
        [added] = await next_events(receive, "approval")
        assert added.data["subjects"] == ["a"] and added.data["annotations"] == {"destructive": True}
        expires = datetime.fromisoformat(added.data["expires_at"]) - datetime.fromisoformat(added.data["requested_at"])
        assert expires == timedelta(seconds=120)
        log.answer_approval("c1", "approve", answered_by="someone")
        [done] = await next_events(receive, "approval_done")
    assert done.data == {"call_id": "c1"}


async def test_requests_past_the_timeout_are_denied_and_recorded_as_the_consoles() -> None:
    """An unanswered request older than the timeout (its process may be gone) is denied by the console."""
    log = MemoryLog()
    old = datetime.now(UTC) - timedelta(seconds=400)
    log.request_approval(PendingApproval(call_id="old", tool="t", requested_at=old))
    log.request_approval(PendingApproval(call_id="new", tool="t", requested_at=datetime.now(UTC)))
    snapshot = await CallFeed(log, approval_timeout=300).snapshot()
    assert [a["call_id"] for a in snapshot["approvals"]] == ["new"]
    answer = log.get_approval("old")
    assert answer is not None and answer.decision == "deny" and answer.answered_by == "console:timeout"
    assert answer.answer_reason == "no answer within 300 s"
    assert not log.get_approval("new").answered  # type: ignore[union-attr]


async def test_without_a_timeout_the_console_never_answers_by_itself() -> None:
    """approval_timeout=None leaves old requests to their own process."""
    log = MemoryLog()
    log.request_approval(PendingApproval(call_id="old", tool="t", requested_at=NOW - timedelta(days=1)))
    snapshot = await CallFeed(log, approval_timeout=None).snapshot()
    assert [a["call_id"] for a in snapshot["approvals"]] == ["old"]
    assert snapshot["approvals"][0]["expires_at"] is None


async def test_a_request_whose_call_already_ended_is_not_shown() -> None:
    """A call cancelled while waiting leaves a request nobody waits for: the queue hides it."""
    log = MemoryLog()
    await log.write(record(id="gone", status="cancelled"))
    log.request_approval(PendingApproval(call_id="gone", tool="t", requested_at=datetime.now(UTC)))
    assert (await CallFeed(log).snapshot())["approvals"] == []


async def test_the_feed_keeps_only_its_history() -> None:
    """At most `history` summaries are kept, the newest."""
    log = MemoryLog()
    for i in range(30):
        await log.write(record(id=f"c{i:02}", started_at=NOW - timedelta(seconds=60 - i)))
    feed = CallFeed(log, history=10)
    await feed.refresh()
    for i in range(30, 35):
        await log.write(record(id=f"c{i:02}", started_at=NOW - timedelta(seconds=60 - i)))
    await feed.refresh()
    ids = [call["id"] for call in (await feed.snapshot())["calls"]]
    assert ids == [f"c{i:02}" for i in range(34, 24, -1)]


async def test_the_poller_stops_when_nobody_listens() -> None:
    """Polling happens only while a page is subscribed."""
    feed = CallFeed(MemoryLog(), interval=0.01, linger=0.05)
    async with feed.subscribe():
        await anyio.sleep(0.1)
    await anyio.sleep(0.15)
    polls = feed.polls
    await anyio.sleep(0.1)
    assert polls >= 3 and feed.polls == polls


def _call(**changes: Any) -> dict[str, Any]:
    call = {"session_id": "s1", "worker": None, "role": None, "tool": "t", "status": "ok", "duration_ms": 10.0}
    return {**call, **changes}


def test_stats_count_sessions_errors_minutes_and_slowest_tools() -> None:
    """Error rate counts error and timeout among finished calls; slowest tools rank by average duration."""
    now = NOW.replace(second=30)
    entries = [
        (now, _call(tool="fast", duration_ms=1.0)),
        (now, _call(tool="slow", duration_ms=900.0, status="error")),
        (now - timedelta(minutes=2), _call(tool="slow", duration_ms=100.0, status="timeout")),
        (now, _call(session_id="s2", status="running", duration_ms=None)),
        (now - timedelta(hours=2), _call(session_id="s2", status="denied", duration_ms=0.1)),
    ]
    stats = compute_stats(entries, now)
    sessions = {row["session_id"]: row for row in stats["sessions"]}
    assert sessions["s1"]["calls"] == 3 and sessions["s1"]["errors"] == 2
    assert sessions["s1"]["error_rate"] == pytest.approx(2 / 3)
    assert sessions["s1"]["total_ms"] == 1001.0
    assert sessions["s2"]["error_rate"] == 0.0
    assert [row["tool"] for row in stats["slowest_tools"]] == ["slow", "fast"]
    assert stats["slowest_tools"][0] == {"tool": "slow", "calls": 2, "avg_ms": 500.0, "p95_ms": 900.0, "max_ms": 900.0}
    assert len(stats["per_minute"]) == 30
    minute = now.replace(second=0, microsecond=0).isoformat()
    assert stats["per_minute"][-1] == {"minute": minute, "calls": 3, "errors": 1}
    assert stats["per_minute"][-3]["errors"] == 1
    assert sum(minute["calls"] for minute in stats["per_minute"]) == 4
    assert stats["totals"] == {"calls": 5, "errors": 2, "denied": 1, "running": 1, "pending": 0}


class CountingLog(MemoryLog):
    """A MemoryLog that counts `get` calls."""

    gets = 0

    def get(self, call_id: str) -> CallRecord | None:
        """Count, then read."""
        self.gets += 1
        return super().get(call_id)


async def test_calls_left_open_long_ago_are_not_read_on_every_poll() -> None:
    """A row a dead process left `running` two hours ago is re-read about once a minute, not per poll."""
    log = CountingLog()
    await log.write(record(status="running", started_at=NOW - timedelta(hours=2), ended_at=None))
    young = record(status="running", started_at=datetime.now(UTC) - timedelta(minutes=20), ended_at=None)
    await log.write(young)
    await log.write(record())  # newer rows push both out of the window of recent calls
    feed = CallFeed(log)
    for _ in range(5):
        await feed.refresh()
    assert log.gets == 0
    await log.write(dataclasses.replace(young, status="ok"))
    await feed.refresh()
    assert (await feed.snapshot())["stats"]["totals"]["running"] == 2  # neither is due yet
