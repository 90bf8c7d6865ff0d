"""_proc.run: the one process runner (shell and search use it) streams, bounds, times out and cleans up."""

from __future__ import annotations

import asyncio
import gc
import os
import time
from pathlib import Path

import anyio
import pytest

from toolhall.tools import _proc

from ._shell_support import alive, our_children

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def watched_fds() -> int:
    """Descriptors the running event loop watches (a leaked reader or writer shows up here)."""
    return len(asyncio.get_running_loop()._selector.get_map())  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_exit_code_and_both_streams_come_back() -> None:
    """stdout and stderr are read separately and the exit code is the command's."""
    done = await _proc.run(["sh", "-c", "echo out; echo err >&2; exit 3"], env=ENV)
    assert (done.stdout, done.stderr, done.exit_code, done.killed_by) == ("out\n", "err\n", 3, None)


@pytest.mark.anyio
async def test_large_stdin_and_large_output_flow_together_without_deadlock() -> None:
    """4 MB through `cat` both ways at once: stdin is fed as the command drains it, output is counted."""
    data = os.urandom(2 << 20).hex().encode()
    with anyio.fail_after(20):
        done = await _proc.run(["cat"], env=ENV, stdin=data, max_output_bytes=1000)
    assert done.exit_code == 0 and done.stdout_bytes == len(data) and done.truncated
    assert done.stdout.startswith(data[:500].decode()) and done.stdout.endswith(data[-500:].decode())


@pytest.mark.anyio
async def test_stdin_a_command_ignores_does_not_hang_it() -> None:
    """A command that exits without reading its 1 MB stdin finishes at once (EPIPE is swallowed)."""
    with anyio.fail_after(10):
        done = await _proc.run(["true"], env=ENV, stdin=b"x" * (1 << 20))
    assert done.exit_code == 0


@pytest.mark.anyio
async def test_a_background_child_holding_the_pipes_is_killed_when_the_leader_exits() -> None:
    """The leader's output comes back within the drain grace and its `sleep` does not survive it."""
    start = time.perf_counter()
    done = await _proc.run(["sh", "-c", "sleep 60 & echo $!"], env=ENV, drain_grace=0.5)
    assert time.perf_counter() - start < 5
    assert done.exit_code == 0 and not alive(int(done.stdout))


@pytest.mark.anyio
async def test_timeout_kills_the_tree_including_a_setsid_child() -> None:
    """At the deadline every descendant (one that left the session too) is killed; partial output stays."""
    script = "setsid sleep 60 & echo $!; sleep 60"
    done = await _proc.run(["sh", "-c", script], env=ENV, timeout=0.3)
    assert done.timed_out and done.killed_by == "timeout" and done.exit_code is None
    assert done.kill_ms is not None and not alive(int(done.stdout))


@pytest.mark.anyio
async def test_output_limit_kills_an_endless_writer() -> None:
    """`yes` is killed once max_read_bytes have been read; head and tail are kept."""
    with anyio.fail_after(20):
        done = await _proc.run(["yes"], env=ENV, max_read_bytes=1 << 20, max_output_bytes=100)
    assert done.killed_by == "output_limit" and done.truncated and not done.timed_out
    assert done.stdout_bytes >= 1 << 20 and done.stdout.startswith("y\ny\n")


@pytest.mark.anyio
async def test_cancellation_from_outside_kills_the_tree(tmp_path: Path) -> None:
    """A caller's cancel scope ending the run leaves no process (setsid ones included) behind."""
    pidfile = tmp_path / "pid"
    with anyio.move_on_after(0.5):
        await _proc.run(["sh", "-c", f"setsid sleep 60 & echo $! > {pidfile}; sleep 60"], env=ENV)
    assert not alive(int(pidfile.read_text()))
    assert our_children() == []


@pytest.mark.anyio
async def test_no_descriptor_watch_or_zombie_is_left_behind() -> None:
    """Finished, timed-out, flooding, fed and cancelled runs leave the same fds and loop watches."""
    await _proc.run(["true"], env=ENV)
    gc.collect()  # earlier tests' event loops close their epoll when collected, not on a schedule
    fds, watches = sorted(os.listdir("/proc/self/fd")), watched_fds()
    for _ in range(3):
        await _proc.run(["echo", "x"], env=ENV)
        await _proc.run(["sleep", "5"], env=ENV, timeout=0.1)
        await _proc.run(["yes"], env=ENV, max_read_bytes=1 << 18)
        await _proc.run(["cat"], env=ENV, stdin=b"data")
        with anyio.move_on_after(0.1):
            await _proc.run(["sleep", "5"], env=ENV, stdin=b"")
    assert sorted(os.listdir("/proc/self/fd")) == fds
    assert watched_fds() == watches
    assert our_children() == []


@pytest.mark.anyio
async def test_a_program_that_cannot_start_raises_oserror_and_leaks_nothing() -> None:
    """A missing program is an OSError from spawn, with no descriptor left open."""
    await _proc.run(["true"], env=ENV)  # the shared /dev/null and the loop's epoll are opened once
    gc.collect()
    fds = sorted(os.listdir("/proc/self/fd"))
    with pytest.raises(FileNotFoundError):
        await _proc.run(["definitely-not-a-program-5"], env=ENV)
    assert sorted(os.listdir("/proc/self/fd")) == fds


def test_each_event_loops_epoll_is_closed_with_the_loop() -> None:
    """Runs under several short-lived loops (as `call_sync` makes) leave no descriptor behind."""

    async def one() -> None:
        await _proc.run(["true"], env=ENV)

    asyncio.run(one())  # the shared /dev/null descriptor is opened once per process
    gc.collect()
    fds = sorted(os.listdir("/proc/self/fd"))
    for _ in range(3):
        asyncio.run(one())
    gc.collect()
    assert sorted(os.listdir("/proc/self/fd")) == fds
