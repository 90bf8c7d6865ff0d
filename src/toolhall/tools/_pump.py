"""Event-loop plumbing for `_proc.run`: bounded output buffers and one command's descriptor callbacks.

Each command has three or four descriptors to watch (stdout, stderr, its pidfd, stdin). Registering
each with the asyncio loop (`add_reader`/`remove_reader`) builds handles and selector keys in Python,
about 35 µs a descriptor here, which is a tenth of a short command's whole budget. So each loop gets one
`epoll` of our own, watched by the loop as a single reader; a command's descriptors are added to it and
removed in C. Its callbacks run inside the loop iteration that saw them ready, so a command that exits
at once costs two or three iterations and no task.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import os
import select
import weakref
from collections.abc import Callable
from typing import Protocol

__all__ = ["HeadTail", "Pump"]

_F_SETPIPE_SZ = 1031
_PIPE_DEFAULT = 65536  # Linux's default pipe capacity
_BIG = 1 << 20


class HeadTail:
    """Keep the first and last `cap // 2` bytes of a stream and count everything in between."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.total = 0
        self._head = bytearray()
        self._tail = bytearray()

    def feed(self, data: bytes) -> None:
        """Add a chunk; memory stays bounded by `cap` whatever the stream's length."""
        self.total += len(data)
        room = self.cap // 2 - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            keep = self.cap - self.cap // 2
            if len(self._tail) > keep:
                del self._tail[: len(self._tail) - keep]

    @property
    def truncated(self) -> bool:
        """Whether bytes were dropped from the middle."""
        return self.total > len(self._head) + len(self._tail)

    def render(self) -> str:
        """The kept text, decoded leniently, with the omitted middle marked."""
        head = bytes(self._head).decode("utf-8", errors="replace")
        tail = bytes(self._tail).decode("utf-8", errors="replace")
        if not self.truncated:
            return head + tail
        omitted = self.total - len(self._head) - len(self._tail)
        return f"{head}\n[... {omitted} bytes omitted ...]\n{tail}"


class _Reactor:
    """One epoll per event loop, itself one reader of that loop; holds no reference to the loop.

    Descriptors are registered one-shot: after an event the kernel disarms them, so a stream at end of
    file or an exited pidfd needs no removal call; closing the descriptor drops it from the epoll. A
    stream with more to read is re-armed (one call per read, and reads are up to 1 MB).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.epoll = select.epoll()  # close-on-exec; closed when the reactor is collected with its loop
        self.handlers: dict[int, Callable[[], None]] = {}  # armed descriptors only
        loop.add_reader(self.epoll.fileno(), self._ready)

    def watch(self, fd: int, events: int, handler: Callable[[], None]) -> None:
        self.epoll.register(fd, events | select.EPOLLONESHOT)
        self.handlers[fd] = handler

    def rearm(self, fd: int, events: int, handler: Callable[[], None]) -> None:
        self.epoll.modify(fd, events | select.EPOLLONESHOT)
        self.handlers[fd] = handler

    def unwatch(self, fd: int) -> None:
        """Stop watching a descriptor that is still armed (one that fired is disarmed already)."""
        if self.handlers.pop(fd, None) is not None:
            self.epoll.unregister(fd)

    def _ready(self) -> None:
        for fd, _ in self.epoll.poll(0):
            handler = self.handlers.pop(fd, None)  # one-shot: disarmed now, until re-armed
            if handler is not None:
                handler()


_reactors: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Reactor] = weakref.WeakKeyDictionary()


def _reactor(loop: asyncio.AbstractEventLoop) -> _Reactor:
    reactor = _reactors.get(loop)
    if reactor is None:
        reactor = _reactors[loop] = _Reactor(loop)
    return reactor


class Streams(Protocol):
    """The descriptors of a spawned command (`_proc.Process`); `stdin` becomes None once closed."""

    pidfd: int
    stdout: int
    stderr: int
    stdin: int | None


class Pump:
    """Read both pipes into `HeadTail`s, feed stdin, and report `exit`, `output_limit` and `eof` events."""

    def __init__(self, proc: Streams, out: HeadTail, err: HeadTail, max_read_bytes: int,
                 stdin: bytes | None) -> None:
        self.loop = asyncio.get_running_loop()
        self.proc, self.max_read_bytes = proc, max_read_bytes
        self.bufs = {proc.stdout: out, proc.stderr: err}
        self.open = set(self.bufs)  # streams not yet at end of file
        self.events: set[str] = set()  # "exit", "output_limit", "eof" once they happened
        self.limit_hit = False
        self._waiter: asyncio.Future[str] | None = None
        self._wanted: frozenset[str] = frozenset()
        self._pending = memoryview(stdin or b"")
        self._reactor = _reactor(self.loop)
        for fd in self.bufs:
            self._reactor.watch(fd, select.EPOLLIN, functools.partial(self._read, fd))
        self._reactor.watch(proc.pidfd, select.EPOLLIN, self._exited)  # fires once, when the leader exits
        if proc.stdin is not None:
            self._reactor.watch(proc.stdin, select.EPOLLOUT, self._write)

    def _exited(self) -> None:
        self._fire("exit")

    def _fire(self, event: str) -> None:
        self.events.add(event)
        if event in self._wanted:
            self._wake(event)

    def _wake(self, event: str) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(event)

    def _read(self, fd: int) -> None:
        buf = self.bufs[fd]
        try:
            chunk = os.read(fd, _BIG if buf.total else _PIPE_DEFAULT)  # most output fits one small read
        except BlockingIOError:
            chunk = None
        except OSError:
            chunk = b""
        if chunk == b"":
            self.open.discard(fd)
            if not self.open:
                self._fire("eof")
            return
        self._reactor.rearm(fd, select.EPOLLIN, functools.partial(self._read, fd))
        if chunk is None:
            return
        if len(chunk) == _PIPE_DEFAULT and buf.total == 0:
            _grow(fd)  # the pipe filled up: a chatty command, give it room to run ahead of us
        buf.feed(chunk)
        if not self.limit_hit and sum(b.total for b in self.bufs.values()) >= self.max_read_bytes:
            self.limit_hit = True
            self._fire("output_limit")

    def _write(self) -> None:
        fd = self.proc.stdin
        assert fd is not None
        try:
            while self._pending:
                self._pending = self._pending[os.write(fd, self._pending[:_PIPE_DEFAULT]):]
        except BlockingIOError:
            self._reactor.rearm(fd, select.EPOLLOUT, self._write)  # the pipe is full: wait for room
            return
        except OSError:
            pass  # the command stopped reading (EPIPE): that is its business
        self._close_stdin()

    def _close_stdin(self) -> None:
        if self.proc.stdin is not None:
            self._reactor.unwatch(self.proc.stdin)
            os.close(self.proc.stdin)
            self.proc.stdin = None

    async def until(self, wanted: frozenset[str], deadline: float | None) -> str | None:
        """The first of `wanted` to happen (or to have happened), or None once `deadline` (loop time) passes."""
        for event in ("exit", "output_limit", "eof"):
            if event in wanted and event in self.events:
                return event
        if deadline is not None and deadline <= self.loop.time():
            return None
        self._waiter, self._wanted = self.loop.create_future(), wanted
        timer = self.loop.call_at(deadline, self._wake, "") if deadline is not None else None
        try:
            return await self._waiter or None
        finally:
            self._waiter, self._wanted = None, frozenset()
            if timer is not None:
                timer.cancel()

    def forget_exit(self) -> None:
        """Stop watching the leader's pidfd (before `kill_tree`, which waits on pidfds of its own)."""
        self._reactor.unwatch(self.proc.pidfd)

    def detach(self) -> None:
        """Unregister every descriptor (idempotent); they are closed by `Process.close()`."""
        for fd in self.open:
            self._reactor.unwatch(fd)
        self.open.clear()
        self.forget_exit()
        self._close_stdin()


def _grow(fd: int) -> None:
    try:
        fcntl.fcntl(fd, _F_SETPIPE_SZ, _BIG)
    except OSError:
        pass  # over the per-user pipe budget (pipe-user-pages-soft): the default size still works
