"""Group commit: one writer thread commits every queued row in a single transaction.

A call that needs its row durable enqueues it and waits on a future; the writer takes everything queued
so far, commits it at once, then wakes every waiter of that batch. Under load, each commit carries the
rows that arrived while the previous one ran, so a hundred concurrent calls share a few commits.

The thread is the fallback: when it is idle, a caller may commit on its own thread (`run_inline`, taking
the rows lingering in the queue along), which SQLite does for every group of durable rows while its write
lock is free. Rows nobody waits for linger in the queue (`linger` seconds) for the next commit to carry.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["FuturesWaker", "GroupCommitWriter", "ThreadWaker", "report_failure", "report_recovery"]

_log = logging.getLogger("toolhall.log")
T = TypeVar("T")
_BATCH_NOW = 1000  # lingering items that are committed at once, without waiting out the linger


class ThreadWaker:
    """An awaitable that a plain thread can complete (asyncio futures, or a threading.Event elsewhere)."""

    __slots__ = ("_event", "_future", "_loop")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._future: asyncio.Future[None] | None = None
        self._event: threading.Event | None = None
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:  # trio, or no loop: a thread waits on an Event instead
            self._event = threading.Event()
        else:
            self._future = self._loop.create_future()

    def wake(self) -> None:
        """Complete the waiter from any thread (no error if its loop has gone)."""
        if self._event is not None:
            self._event.set()
            return
        assert self._loop is not None  # noqa: S101 - set together with _future
        try:
            self._loop.call_soon_threadsafe(self._resolve)
        except RuntimeError:  # the loop closed: nobody is waiting any more
            pass

    def _resolve(self) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(None)

    async def wait(self) -> None:
        """Wait until woken."""
        if self._future is not None:
            await self._future
            return
        import anyio.to_thread

        assert self._event is not None  # noqa: S101 - set when there is no future
        await anyio.to_thread.run_sync(self._event.wait, abandon_on_cancel=True)


class FuturesWaker(ThreadWaker):
    """Completes many futures of one event loop at once: the waiters of a whole batch, one hand-off."""

    __slots__ = ("_futures",)

    def __init__(self, loop: asyncio.AbstractEventLoop, futures: list[asyncio.Future[None]]) -> None:
        self._loop = loop
        self._future = None
        self._event = None
        self._futures = futures

    def _resolve(self) -> None:
        resolve_futures(self._futures)

    async def wait(self) -> None:  # pragma: no cover - its futures are awaited, not the waker
        """Wait until every future is done."""
        await asyncio.gather(*self._futures, return_exceptions=True)


def resolve_futures(futures: list[asyncio.Future[None]]) -> None:
    """Complete the futures still waited on (a cancelled waiter's future is already done)."""
    for future in futures:
        if not future.done():
            future.set_result(None)


_reported: set[int] = set()
_reported_lock = threading.Lock()


def report_failure(owner: object, what: str, exc: BaseException) -> None:
    """Log a store failure once per store until it recovers, so a broken disk does not flood the log."""
    with _reported_lock:
        if id(owner) in _reported:
            return
        _reported.add(id(owner))
    _log.error("toolhall log store %r failed (%s); calls go on unlogged until it recovers: %s", owner, what, exc)


def report_recovery(owner: object) -> None:
    """Note that a store that failed works again."""
    if id(owner) not in _reported:  # the usual case, without the lock (a set lookup is atomic)
        return
    with _reported_lock:
        if id(owner) not in _reported:
            return
        _reported.discard(id(owner))
    _log.warning("toolhall log store %r works again", owner)


class GroupCommitWriter(Generic[T]):
    """A daemon thread committing queued items in batches through `commit(items)`.

    Items nobody waits for (a call's final row) linger up to `linger` seconds so they can share a
    commit with the next row somebody does wait for; an item with a waiter is committed at once
    together with everything queued before it. `commit` must not raise for a batch it could not
    write: it reports and drops it (a failing store never fails a call). Waiters are woken after each
    batch whatever happened.
    """

    def __init__(
        self,
        commit: Callable[[Sequence[T]], None],
        *,
        name: str,
        linger: float = 0.02,
        maintain: Callable[[], None] | None = None,
    ) -> None:
        self._commit = commit
        self._maintain = maintain
        self._maintenance_due = False
        self._linger = linger
        self._cond = threading.Condition()
        self._queue: deque[tuple[T | None, ThreadWaker | threading.Event | None]] = deque()
        self._urgent = 0  # queued entries somebody waits for (or the stop marker)
        self._closed = False
        self._busy = False  # a batch (or an inline commit) is being written
        self._sleeping = False  # the writer waits with no deadline (not lingering)
        self._held = False  # the writer waits for an inline commit to end
        self._kept = False  # an inline commit left items it must not carry (the writer takes them now)
        self._inline_runs = 0  # inline commits so far (each carries the lingering items along)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        # Rows queued without waiting must reach the disk when the interpreter exits normally.
        atexit.register(self._stop)

    def submit(self, item: T, waker: ThreadWaker | None = None) -> None:
        """Queue an item; `waker` is woken once it is committed."""
        self._enqueue(item, waker)

    def submit_many(self, items: Sequence[T], waker: ThreadWaker) -> None:
        """Queue items together; `waker` is woken once all of them are committed (they share a batch)."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the log store is closed")
            self._queue.extend((item, None) for item in items[:-1])
            self._queue.append((items[-1], waker))
            self._urgent += 1
            self._cond.notify()

    def _enqueue(self, item: T | None, waker: ThreadWaker | threading.Event | None) -> None:
        with self._cond:
            if self._closed and item is not None:
                raise RuntimeError("the log store is closed")
            queue = self._queue
            queue.append((item, waker))
            if waker is not None or item is None:
                self._urgent += 1
                self._cond.notify()
            elif self._sleeping or len(queue) >= _BATCH_NOW:
                # Wake the writer only to start its linger clock (or for a full batch): a lingering
                # writer woken per row would commit each row alone, on its own thread, and take the GIL
                # from the event loop every time (that cost ~200 µs per sequential call).
                self._cond.notify()

    def request_maintenance(self) -> None:
        """Ask the writer thread to run `maintain` (a WAL checkpoint, say) soon, off the caller's thread."""
        with self._cond:
            self._maintenance_due = True
            self._cond.notify()

    def run_inline(self, commit: Callable[[list[T]], bool], inline_ok: Callable[[T], bool] | None = None) -> bool:
        """Commit on the caller's thread when the writer is idle and nobody else is waiting.

        `commit(earlier)` gets the lingering items queued before (to write first, in the same
        transaction), so no row of a call can overtake an earlier one. This lets a caller skip the
        thread hop (about 70 µs in CPython, and the GIL ping-pong with the writer thread). Items for
        which `inline_ok` is false (a huge output to redact, say) stay queued for the writer thread.
        Returns False, with the lingering items back in the queue, when `commit` returns False or
        could not run; the caller then falls back to `submit`.
        """
        with self._cond:
            if self._urgent or self._busy or self._closed:
                return False
            if inline_ok is None or all(inline_ok(item) for item, _ in self._queue if item is not None):
                earlier = [item for item, _ in self._queue if item is not None]
                self._queue.clear()
            else:
                earlier = [item for item, _ in self._queue if item is not None and inline_ok(item)]
                kept = [(item, waker) for item, waker in self._queue if item is None or not inline_ok(item)]
                self._queue.clear()
                self._queue.extend(kept)
                self._kept = True  # the writer commits these at once: they would linger forever otherwise
            self._busy = True
        done = False
        try:
            done = commit(earlier)
            return done
        finally:
            with self._cond:
                self._busy = False
                if done:
                    self._inline_runs += 1
                elif earlier:
                    self._queue.extendleft((item, None) for item in reversed(earlier))
                if self._held or self._urgent or self._kept or (self._queue and self._sleeping):
                    self._cond.notify()  # a lingering writer wakes by itself

    def flush(self, timeout: float | None = None) -> bool:
        """Block until everything queued so far is committed; False on timeout."""
        if threading.current_thread() is self._thread or not self._thread.is_alive():
            return True
        event = threading.Event()
        self._enqueue(None, event)
        return event.wait(timeout)

    def close(self) -> None:
        """Commit what is queued and stop the thread."""
        atexit.unregister(self._stop)
        self._stop()

    def _stop(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
        self._enqueue(None, None)  # no item and no waker: the stop marker
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def _take_batch(self) -> list[tuple[T | None, ThreadWaker | threading.Event | None]]:
        with self._cond:
            while True:
                if self._busy:  # a caller is committing on its own thread (taking the queue along)
                    if self._urgent or self._kept or self._maintenance_due:
                        self._wait(held=True)  # woken when it ends
                    else:
                        # Nothing pressing: look again later. Being woken at the end of every inline
                        # commit made the writer fight the event loop for the GIL once per call.
                        self._cond.wait(self._linger)
                elif self._urgent or self._kept or self._maintenance_due or len(self._queue) >= _BATCH_NOW:
                    return self._grab()
                elif not self._queue:
                    self._wait(sleeping=True)
                    # Woken by a lingering item (maybe taken by a caller's commit already): linger anyway.
                    if not (self._urgent or self._busy or self._maintenance_due or self._kept):
                        batch = self._linger_then_grab()
                        if batch is not None:
                            return batch
                else:
                    batch = self._linger_then_grab()
                    if batch is not None:
                        return batch

    def _linger_then_grab(self) -> list[tuple[T | None, ThreadWaker | threading.Event | None]] | None:
        """Let lingering items wait for a caller's commit to carry them; grab them once callers stop.

        Called with the lock held. While callers keep committing inline (each taking the queue along),
        the writer keeps lingering instead of waking for every lazy row: waking per row cost a
        sequential call ~15 µs and a GIL hand-off.
        """
        runs = self._inline_runs
        self._cond.wait(self._linger)
        if self._urgent or self._busy or self._kept or self._maintenance_due or self._inline_runs != runs:
            return None
        return self._grab() if self._queue else None

    def _wait(self, *, sleeping: bool = False, held: bool = False) -> None:
        self._sleeping, self._held = sleeping, held
        try:
            self._cond.wait()
        finally:
            self._sleeping = self._held = False

    def _grab(self) -> list[tuple[T | None, ThreadWaker | threading.Event | None]]:
        batch = list(self._queue)
        self._queue.clear()
        self._urgent = 0
        self._kept = False
        self._busy = True
        return batch

    def _run_maintenance(self) -> None:
        with self._cond:
            due, self._maintenance_due = self._maintenance_due, False
        if due and self._maintain is not None:
            try:
                self._maintain()
            except Exception as exc:  # noqa: BLE001 - maintenance is best effort
                report_failure(self, "maintenance", exc)

    def _run(self) -> None:
        while True:
            batch = self._take_batch()
            self._run_maintenance()
            items = [item for item, _ in batch if item is not None]
            if items:
                try:
                    self._commit(items)
                except BaseException as exc:  # noqa: BLE001 - the writer thread must survive anything
                    report_failure(self, "commit", exc)
            with self._cond:
                self._busy = False
            if _wake_all(batch):
                return


def _wake_all(batch: Sequence[tuple[object, ThreadWaker | threading.Event | None]]) -> bool:
    """Wake a batch's waiters, one loop callback per event loop; returns whether the stop marker came."""
    stop = False
    by_loop: dict[asyncio.AbstractEventLoop, list[ThreadWaker]] = {}
    for item, waker in batch:
        if waker is None:
            stop = stop or item is None
        elif isinstance(waker, threading.Event):
            waker.set()
        elif waker._loop is None:
            waker.wake()
        else:
            by_loop.setdefault(waker._loop, []).append(waker)
    for loop, wakers in by_loop.items():
        try:
            loop.call_soon_threadsafe(_resolve_all, wakers)
        except RuntimeError:  # the loop closed: nobody is waiting any more
            pass
    return stop


def _resolve_all(wakers: list[ThreadWaker]) -> None:
    for waker in wakers:
        waker._resolve()
