"""The live feed behind the console: one poller per console, fanned out to every open page.

The store is the only source of truth (a console attached to PostgreSQL sees calls and approval requests
from every process writing there), so the feed polls it, cheaply:

- calls that started since the newest one seen (minus a few seconds, for rows committed late or clocks a
  little apart), newest first;
- the calls the feed still holds as `pending` or `running`, one by one, until they end;
- the approval queue.

It keeps summaries of the most recent calls (never their full outputs) for the feed and the stats,
emits an event for each change, and polls only while a page is listening. Events are numbered and the
latest few thousand kept, so a page whose stream ended (streams are short on purpose: a server shutting
down never waits for them) resumes from its `Last-Event-ID` without missing or repeating anything.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..log._record import FINAL_STATUSES, CallRecord, PendingApproval
from ._summary import approval_dict, compute_stats, summarize

__all__ = ["CallFeed", "Event"]

_log = logging.getLogger("toolhall.console")

_LATE_ROWS = timedelta(seconds=3)  # rows may commit a little after calls that started later
_BATCH = 1000  # most new rows read per poll
_OPEN_CHECKS = 200  # most still-open calls re-read one by one per poll
_EXPIRY_GRACE_S = 5.0  # the waiting process's own timeout normally answers first, with its reason
_STATS_EVERY_S = 1.0
_SUBSCRIBER_BUFFER = 2000  # events a slow page may lag behind before it is dropped (it reconnects)
_REPLAY = 5000  # events kept for pages that reconnect


@dataclass(frozen=True, slots=True)
class Event:
    """One server-sent event: its name and JSON-able data."""

    kind: str
    data: Any
    id: str | None = None
    """`<feed epoch>-<sequence>`, what a reconnecting page sends back as `Last-Event-ID`."""


@dataclass(frozen=True, slots=True)
class _Fetched:
    recent: list[CallRecord]
    reread: list[CallRecord]
    pending: list[PendingApproval]
    expired: list[str]


def _recheck_after(started_at: datetime) -> float:
    """Seconds until an open call is read again: at once while young, rarely once it is old.

    A row left `running` or `pending` by a process that died stays so; it must not cost a query per poll.
    """
    age = (datetime.now(UTC) - started_at).total_seconds()
    return 0.0 if age < 600 else 5.0 if age < 3600 else 60.0


def _version(record: CallRecord) -> tuple[Any, ...]:
    """What changes as a call goes on: comparing it is cheaper than building the summary again."""
    return (record.status, record.ended_at, record.duration_ms, record.truncated, record.output_chars, record.approval)


class CallFeed:
    """Polls a store and fans its changes out to subscribers (the console's event streams).

    Args:
        store: the log store (`SqliteLog`, `PostgresLog`, `MemoryLog`, ...).
        interval: seconds between polls while a page listens.
        history: how many recent calls the feed keeps (summaries only) for the feed and the stats.
        approval_timeout: seconds after which an unanswered request is denied by the console (None: never;
            the waiting process's own timeout still applies).
        linger: seconds to keep polling after the last page left (streams are short and pages reconnect).
    """

    def __init__(
        self,
        store: Any,
        *,
        interval: float = 0.1,
        history: int = 2000,
        approval_timeout: float | None = 300.0,
        linger: float = 5.0,
    ) -> None:
        self.store = store
        self.linger = linger
        self.interval = interval
        self.history = history
        self.approval_timeout = approval_timeout
        self._calls: dict[str, tuple[datetime, tuple[Any, ...], dict[str, Any]]] = {}
        self._open: dict[str, float] = {}  # call id -> when (monotonic) to read it again
        self._approvals: dict[str, dict[str, Any]] = {}
        self._watermark: datetime | None = None
        self._loaded = False
        self._subscribers: set[MemoryObjectSendStream[Event]] = set()
        self._lock: anyio.Lock | None = None
        self._poller: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._stats_dirty = True
        self._stats_sent = 0.0
        self._epoch = secrets.token_hex(4)
        self._seq = 0
        self._recent: deque[tuple[int, Event]] = deque(maxlen=_REPLAY)
        self._last_listener = 0.0
        self.polls = 0
        """How many polls ran (for tests and the bench)."""

    # -- what pages read ---------------------------------------------------------------------------
    async def snapshot(self, limit: int = 300) -> dict[str, Any]:
        """The newest calls, the open approval requests and the stats (loading the store on first use)."""
        if not self._loaded:
            await self.refresh()
        return self._snapshot_now(limit)

    def _snapshot_now(self, limit: int = 300) -> dict[str, Any]:
        newest = sorted(self._calls.values(), key=lambda item: item[0], reverse=True)[:limit]
        return {
            "server_time": datetime.now(UTC).isoformat(),
            "approval_timeout": self.approval_timeout,
            "calls": [summary for _, _, summary in newest],
            "approvals": list(self._approvals.values()),
            "stats": self.stats(),
        }

    def stats(self) -> dict[str, Any]:
        """Sessions, calls per minute and slowest tools over the calls the feed holds."""
        stats = compute_stats(((started, summary) for started, _, summary in self._calls.values()), datetime.now(UTC))
        stats["window_calls"] = len(self._calls)
        return stats

    @asynccontextmanager
    async def subscribe(
        self, last_event_id: str | None = None
    ) -> AsyncIterator[tuple[list[Event], MemoryObjectReceiveStream[Event]]]:
        """The events a page needs first, then a stream of those that follow.

        First comes a snapshot, or, for a page that reconnects with the id of the last event it got, the
        events it missed (a snapshot again when they are no longer kept). The feed polls while anyone
        is subscribed.
        """
        if not self._loaded:
            await self.refresh()
        send, receive = anyio.create_memory_object_stream[Event](_SUBSCRIBER_BUFFER)
        # No await from here to the subscription: nothing can fall between what is sent first and the stream.
        first = self._missed(last_event_id)
        if first is None:
            first = [Event("snapshot", self._snapshot_now(), f"{self._epoch}-{self._seq}")]
        self._subscribers.add(send)
        self._ensure_poller()
        try:
            with receive:
                yield first, receive
        finally:
            self._subscribers.discard(send)
            self._last_listener = time.monotonic()
            send.close()

    def _missed(self, last_event_id: str | None) -> list[Event] | None:
        """The events after `last_event_id`, or None when a snapshot is needed instead."""
        epoch, _, number = (last_event_id or "").partition("-")
        if epoch != self._epoch or not number.isdigit() or int(number) > self._seq:
            return None  # a first visit, or an id from before this server started
        after = int(number)
        oldest = self._recent[0][0] if self._recent else self._seq + 1
        if after < oldest - 1:
            return None  # what it missed is no longer kept
        return [event for seq, event in self._recent if seq > after]

    def poke(self) -> None:
        """Poll now rather than at the next interval (after the console answered a request, say)."""
        if self._wake is not None:
            self._wake.set()

    # -- polling -----------------------------------------------------------------------------------
    def _locked(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    def _ensure_poller(self) -> None:
        if self._poller is None or self._poller.done():
            self._wake = asyncio.Event()
            self._poller = asyncio.get_running_loop().create_task(self._poll_forever(), name="toolhall-console-feed")

    async def _poll_forever(self) -> None:
        while self._subscribers or time.monotonic() - self._last_listener < self.linger:
            try:
                await self.refresh()
            except Exception as exc:  # noqa: BLE001 - a store hiccup must not end the feed; retry next tick
                _log.warning("console feed: polling the store failed: %s", exc)
                self._broadcast([Event("store_error", {"message": str(exc)})])
            assert self._wake is not None
            with suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)
            self._wake.clear()

    async def refresh(self) -> None:
        """Poll the store once and send what changed to every subscriber."""
        async with self._locked():
            since = self._watermark - _LATE_ROWS if self._watermark is not None else None
            now = time.monotonic()
            open_ids = [call_id for call_id, due in self._open.items() if due <= now][:_OPEN_CHECKS]
            fetched = await anyio.to_thread.run_sync(self._fetch, since, open_ids)
            events = self._apply(fetched)
            self.polls += 1
            self._loaded = True
        self._broadcast(events)

    def _fetch(self, since: datetime | None, open_ids: list[str]) -> _Fetched:
        """Read what changed (in a worker thread: stores block)."""
        store = self.store
        recent: list[CallRecord] = store.calls(since=since, limit=_BATCH if since is not None else self.history)
        seen = {record.id for record in recent}
        reread = [record for call_id in open_ids if call_id not in seen if (record := store.get(call_id)) is not None]
        pending: list[PendingApproval] = store.pending_approvals()
        expired = self._expire(pending)
        if expired:
            pending = [request for request in pending if request.call_id not in expired]
        return _Fetched(recent, reread, pending, expired)

    def _expire(self, pending: list[PendingApproval]) -> list[str]:
        """Deny requests older than the timeout (their process may be gone); recorded as the console's."""
        if self.approval_timeout is None:
            return []
        limit = datetime.now(UTC) - timedelta(seconds=self.approval_timeout + _EXPIRY_GRACE_S)
        reason = f"no answer within {self.approval_timeout:g} s"
        return [
            request.call_id
            for request in pending
            if request.requested_at < limit
            and self.store.answer_approval(request.call_id, "deny", reason=reason, answered_by="console:timeout")
        ]

    def _apply(self, fetched: _Fetched) -> list[Event]:
        events: list[Event] = []
        for record in [*reversed(fetched.recent), *fetched.reread]:
            known = self._calls.get(record.id)
            if known is None or known[1] != _version(record):
                summary = summarize(record)
                self._calls[record.id] = (record.started_at, _version(record), summary)
                events.append(Event("call", summary))
            if record.status in FINAL_STATUSES:
                self._open.pop(record.id, None)
            else:
                self._open[record.id] = time.monotonic() + _recheck_after(record.started_at)
            if self._watermark is None or record.started_at > self._watermark:
                self._watermark = record.started_at
        if events:
            self._stats_dirty = True
            self._trim()
        events.extend(self._apply_approvals(fetched.pending))
        return events

    def _apply_approvals(self, pending: list[PendingApproval]) -> list[Event]:
        events: list[Event] = []
        current: dict[str, dict[str, Any]] = {}
        for request in pending:
            known = self._calls.get(request.call_id)
            if known is not None and known[2]["status"] in FINAL_STATUSES:
                continue  # the call ended without an answer (its process was cancelled): nothing to answer
            current[request.call_id] = approval_dict(request, self.approval_timeout)
        events.extend(Event("approval_done", {"call_id": gone}) for gone in self._approvals.keys() - current.keys())
        events.extend(Event("approval", new) for call_id, new in current.items() if call_id not in self._approvals)
        self._approvals = current
        return events

    def _trim(self) -> None:
        excess = len(self._calls) - self.history
        if excess <= 0:
            return
        oldest = sorted(self._calls.items(), key=lambda item: item[1][0])[:excess]
        for call_id, _ in oldest:
            del self._calls[call_id]
            self._open.pop(call_id, None)

    def _broadcast(self, events: list[Event]) -> None:
        now = time.monotonic()
        if self._stats_dirty and now - self._stats_sent >= _STATS_EVERY_S and self._subscribers:
            events = [*events, Event("stats", self.stats())]
            self._stats_dirty = False
            self._stats_sent = now
        if not events:
            return
        numbered = []
        for event in events:
            self._seq += 1
            numbered.append(Event(event.kind, event.data, f"{self._epoch}-{self._seq}"))
            self._recent.append((self._seq, numbered[-1]))
        events = numbered
        for send in list(self._subscribers):
            try:
                for event in events:
                    send.send_nowait(event)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                # A page too slow to keep up is dropped; its browser reconnects and catches up.
                self._subscribers.discard(send)
                send.close()
