"""The only module that starts processes: spawn, stream bounded output, and kill the whole tree.

`run()` is the one-shot API (the shell tool); `spawn()` returns a `Process` handle for long-lived children
(worker sessions) with `read_chunks()`, `wait()` and `kill_tree()`. Everything is event-loop driven on
Linux primitives: a pidfd tells when the leader exits and non-blocking pipes carry output, so 200 commands
in flight cost no threads.

Tree kill does not trust process groups (a `setsid` grandchild leaves them): it walks `/proc` for every
descendant of the leader, SIGKILLs them (leader last, so a subreaper launcher keeps collecting orphans
until the end), repeats until nothing is left, and waits on pidfds until each is really gone. Orphans
that were reparented away from the tree are only caught when a PID namespace or subreaper sits on top,
which is what the isolation backends provide.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field

import anyio

from ._pump import HeadTail, Pump

__all__ = ["Completed", "HeadTail", "Process", "descendants", "run", "run_sync", "spawn"]

_F_SETPIPE_SZ = 1031
_CHUNK = 1 << 20


@dataclass(frozen=True, kw_only=True, slots=True)
class Completed:
    """What a finished (or killed) command left behind."""

    exit_code: int | None
    """Shell convention: 128+N when a signal N ended it; None when we killed it (timeout, limit, cancel)."""
    signal: str | None
    """The name of the signal that ended the command, when one did."""
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    """True when either stream lost its middle to the cap, or reading stopped at `max_read_bytes`."""
    timed_out: bool
    killed_by: str | None
    """`"timeout"`, `"output_limit"` or None."""
    duration_ms: float
    kill_ms: float | None
    """From the kill decision to the whole tree being gone, when we had to kill."""


def descendants(root: int) -> list[int]:
    """Every live (non-zombie) descendant of `root`, found by walking `/proc` (parents before children)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(entry))
    out: list[int] = []
    todo = [root]
    while todo:
        kids = children.get(todo.pop(0), [])
        out += kids
        todo += kids
    return out


@dataclass(kw_only=True, eq=False)
class Process:
    """A spawned child in its own session, with non-blocking pipes and a pidfd."""

    popen: subprocess.Popen[bytes]
    pidfd: int
    stdout: int
    stderr: int
    stdin: int | None
    _closed: bool = field(default=False, repr=False)

    @property
    def pid(self) -> int:
        """The leader's process id."""
        return self.popen.pid

    async def exited(self) -> None:
        """Wait for the leader to exit, without reaping it (its pid and group stay reserved)."""
        await anyio.wait_readable(self.pidfd)

    async def wait(self) -> int:
        """Wait for the leader to exit and reap it; returns `Popen.returncode` (negative for a signal)."""
        await self.exited()
        return self.popen.wait()

    async def read_chunks(self, fd: int) -> AsyncIterator[bytes]:
        """Yield chunks from `fd` (self.stdout or self.stderr) until end of file."""
        while True:
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            if not chunk:
                return
            yield chunk

    async def kill_tree(self, *, deadline: float = 5.0) -> float:
        """SIGKILL the leader and every descendant (setsid ones too); wait until all are gone.

        Returns:
            Milliseconds from the first signal to the last process being gone.
        """
        start = time.perf_counter()
        pidfds: list[int] = []
        try:
            for _ in range(200):  # rounds: a process may fork between our scan and our kill
                left = descendants(self.pid)
                if not left:
                    break
                pidfds += _signal_all(left)
            pidfds += _signal_all([self.pid])
            self.kill_group()  # same-group orphans already reparented away from the tree
            with anyio.move_on_after(deadline):
                for fd in pidfds:
                    await anyio.wait_readable(fd)
        finally:
            for fd in pidfds:
                os.close(fd)
        return (time.perf_counter() - start) * 1000

    def kill_group(self) -> None:
        """SIGKILL the leader's process group (call before reaping the leader, so the id is still ours)."""
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)

    async def group_gone(self, deadline: float) -> bool:
        """After `kill_group` and reaping: wait (until `deadline`, loop time) for the group to empty.

        A SIGKILLed process is gone only once the kernel has run it to its end, which on a busy machine
        takes a few ms; without this wait a background child could still show in `ps` when the result
        comes back. Probing with signal 0 is safe after the reap: a pid is not reused while a group of
        that id has members, and SIGKILLed members cannot fork new ones. Normally one syscall.
        """
        loop = asyncio.get_running_loop()
        while True:
            try:
                os.killpg(self.pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:  # a member changed its credentials (setuid program): cannot watch it
                return False
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.002)

    def close(self) -> None:
        """Reap the leader if it is gone and close every descriptor we hold (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for fd in (self.pidfd, self.stdout, self.stderr, self.stdin):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        with contextlib.suppress(OSError):
            if self.popen.poll() is None:  # still running: never leave it behind
                self.popen.kill()
                self.popen.wait(5)


def _signal_all(pids: Sequence[int]) -> list[int]:
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
    return fds


def _pipe(size: int | None) -> tuple[int, int]:
    r, w = os.pipe2(os.O_CLOEXEC)
    if size is not None:
        with contextlib.suppress(OSError):  # a bigger pipe means fewer wake-ups for chatty commands
            fcntl.fcntl(r, _F_SETPIPE_SZ, size)
    return r, w


def spawn(argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
          stdin: bool = False, pass_fds: Sequence[int] = (), pipe_size: int | None = _CHUNK) -> Process:
    """Start `argv` (no shell) in a new session with piped output.

    Args:
        argv: The program and its arguments; the program is looked up on `env["PATH"]`.
        cwd: Working directory for the child.
        env: The complete environment (nothing is inherited when given).
        stdin: Give the child a pipe to write to (`Process.stdin`); otherwise it reads /dev/null.
        pass_fds: Extra descriptors the child inherits.
        pipe_size: Capacity of the output pipes, or None for the kernel's default (`run()` grows a
            pipe only once a command proves chatty).

    Raises:
        OSError: The program cannot be started (not found, not executable, argument list too long).
    """
    out_r, out_w = _pipe(pipe_size)
    err_r, err_w = _pipe(pipe_size)
    in_r, in_w = os.pipe2(os.O_CLOEXEC) if stdin else (None, None)
    try:
        popen = subprocess.Popen(
            list(argv), stdin=in_r if in_r is not None else _devnull(), stdout=out_w, stderr=err_w,
            cwd=cwd, env=dict(env) if env is not None else None, start_new_session=True,
            pass_fds=tuple(pass_fds), close_fds=True,
        )
    except BaseException:
        for fd in (out_r, err_r, in_w):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in (out_w, err_w, in_r):
            if fd is not None:
                os.close(fd)
    proc = Process(popen=popen, pidfd=-1, stdout=out_r, stderr=err_r, stdin=in_w)
    try:
        for fd in (out_r, err_r, in_w):
            if fd is not None:  # our ends only, and no other status flag is set: one fcntl each
                fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK)
        proc.pidfd = os.pidfd_open(popen.pid)
    except BaseException:
        proc.close()  # kills and reaps the child: nothing may run without a handle on it
        raise
    return proc


@functools.cache
def _devnull_for(pid: int) -> int:
    return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)


def _devnull() -> int:
    """A /dev/null descriptor kept open for every child's stdin (one per process: fork-safe by pid)."""
    return _devnull_for(os.getpid())


async def run(argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
              stdin: bytes | None = None, timeout: float | None = None, max_output_bytes: int = 65536,
              max_read_bytes: int = 64 << 20, pass_fds: Sequence[int] = (), drain_grace: float = 0.5) -> Completed:
    """Run a command to completion with bounded output and a deadline; never leaves a process behind.

    When the leader exits, whatever it left running in the background is killed too. On timeout,
    output limit or cancellation, the whole tree is killed and the output so far is kept.

    Args:
        argv: Program and arguments (no shell).
        cwd: Working directory.
        env: Complete environment.
        stdin: Bytes to feed on standard input; None gives /dev/null (a reader never hangs).
        timeout: Seconds before the tree is killed; None for no deadline.
        max_output_bytes: Bytes kept per stream (head and tail halves; the middle is marked).
        max_read_bytes: Total bytes read from both streams before the command is killed.
        pass_fds: Extra descriptors for the child.
        drain_grace: Seconds to keep reading the pipes after the tree is gone.

    Raises:
        OSError: The command could not be started.
    """
    start = time.perf_counter()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout if timeout else None
    proc = spawn(argv, cwd=cwd, env=env, stdin=stdin is not None, pass_fds=pass_fds, pipe_size=None)
    pump = Pump(proc, HeadTail(max_output_bytes), HeadTail(max_output_bytes), max_read_bytes, stdin)
    returncode: int | None = None
    kill_ms: float | None = None
    try:
        if await pump.until(frozenset({"exit", "output_limit"}), deadline) == "exit":
            # Background children of a finished command do not outlive it. No /proc walk is needed
            # here: the leader is gone, so its orphans were already handed to a PID namespace init or
            # subreaper (which kill them as they exit) or to the host's init (out of reach); what is
            # left in the leader's process group is killed.
            proc.kill_group()
            returncode = proc.popen.wait()
            await proc.group_gone(loop.time() + drain_grace)
        else:  # deadline or output limit; the pipes keep being read while the tree dies
            pump.forget_exit()
            kill_ms = await proc.kill_tree()
        await pump.until(frozenset({"eof"}), loop.time() + drain_grace)  # escaped writers may linger
    finally:
        pump.detach()
        if returncode is None and kill_ms is None:  # cancelled from outside: never leave the tree behind
            with anyio.CancelScope(shield=True):
                await proc.kill_tree()
        proc.close()
    killed_by = "output_limit" if pump.limit_hit else "timeout" if returncode is None else None
    return _completed(pump, returncode, killed_by, start, kill_ms)


def _completed(pump: Pump, rc: int | None, killed_by: str | None, start: float,
               kill_ms: float | None) -> Completed:
    out, err = pump.bufs[pump.proc.stdout], pump.bufs[pump.proc.stderr]
    sig = None
    if rc is not None and rc < 0:
        sig, rc = -rc, 128 - rc
    return Completed(
        exit_code=rc, signal=signal.Signals(sig).name if sig else None,
        stdout=out.render(), stderr=err.render(), stdout_bytes=out.total,
        stderr_bytes=err.total, truncated=out.truncated or err.truncated or pump.limit_hit,
        timed_out=killed_by == "timeout", killed_by=killed_by,
        duration_ms=(time.perf_counter() - start) * 1000, kill_ms=kill_ms,
    )


def run_sync(argv: Sequence[str], **kwargs: object) -> Completed:
    """`run()` from synchronous code (not from inside a running event loop); same arguments."""
    return anyio.run(lambda: run(argv, **kwargs))  # type: ignore[arg-type]
