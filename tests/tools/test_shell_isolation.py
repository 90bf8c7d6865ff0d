"""Confinement and tree kill proven for real, separately for each backend (bwrap, then Landlock + seccomp)."""

from __future__ import annotations

import gc
import os
import random
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolhall import Toolbox, ToolResult
from toolhall.tools import shell
from toolhall.tools._isolation import describe_isolation, detect

from ._shell_support import backend_fixture, our_children, pids_with, require_backend

pytestmark = pytest.mark.filterwarnings("ignore:GitWildMatchPattern:DeprecationWarning")

CONFINED = ["bwrap", "landlock"]


backend = backend_fixture(CONFINED)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def canary() -> Iterator[Path]:
    """A secret file in the invoking user's home, removed afterwards."""
    path = Path.home() / f".toolhall-canary-{uuid.uuid4().hex}"
    path.write_text("CANARY-SECRET\n")
    try:
        yield path
    finally:
        path.unlink()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on loopback that a sandboxed command should not reach."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    try:
        yield sock
    finally:
        sock.close()


def make(ws: Path, backend: str, **options: Any) -> Toolbox:
    return shell.toolbox(ws, isolation=backend, allow_unconfined=backend == "none", **options)  # type: ignore[arg-type]


async def run(tb: Toolbox, argv: list[str], **args: Any) -> ToolResult:
    return await tb.call("run_command", {"argv": argv, **args})


def marker() -> str:
    """A `sleep` argument no other process on the machine has, to find our processes by id in /proc."""
    return f"{random.randint(100000, 999999)}.{random.randint(100000, 999999)}"


@pytest.mark.anyio
async def test_cannot_write_outside_the_workspace(ws: Path, backend: str) -> None:
    """Writes to a sibling folder, to ../, to /usr and to the host /tmp all fail; nothing appears outside."""
    outside = ws.parent / "outside"
    outside.mkdir()
    host_tmp = Path("/tmp") / f"toolhall-escape-{uuid.uuid4().hex}"  # noqa: S108 - must stay absent
    script = (f"echo x > {outside}/f; echo x > ../escape; echo x > /usr/escape; echo x > {host_tmp}; "
              "echo x > inside")
    result = await run(make(ws, backend), ["sh", "-c", script])
    assert (ws / "inside").exists()
    assert list(outside.iterdir()) == []
    assert not (ws.parent / "escape").exists() and not Path("/usr/escape").exists()
    assert not host_tmp.exists()
    assert "cannot create /usr/escape" in result.data["stderr"]


@pytest.mark.anyio
async def test_cannot_read_a_canary_in_the_users_home(ws: Path, backend: str, canary: Path) -> None:
    """A secret file in the invoking user's home is not readable, nor is /etc/shadow."""
    result = await run(make(ws, backend), ["sh", "-c", f"cat {canary}; cat /etc/shadow; ls {Path.home()}"])
    assert "CANARY-SECRET" not in result.data["stdout"]
    assert "root:" not in result.data["stdout"]
    assert canary.name not in result.data["stdout"]


@pytest.mark.anyio
async def test_private_tmp_is_writable_and_not_the_hosts(ws: Path, backend: str) -> None:
    """TMPDIR/HOME are a private writable folder; files put there do not show up in the host /tmp."""
    name = f"toolhall-private-{uuid.uuid4().hex}"
    result = await run(make(ws, backend), ["sh", "-c", f'echo hi > "$TMPDIR/{name}" && cat "$HOME/{name}"'])
    assert result.data["stdout"] == "hi\n"
    assert not (Path("/tmp") / name).exists()  # noqa: S108


CONNECT = "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3); print('CONNECTED')"


@pytest.mark.anyio
async def test_no_connection_to_loopback_when_network_is_off(ws: Path, backend: str,
                                                             listener: socket.socket) -> None:
    """A listening socket on loopback is unreachable without network; with network=True it is reached."""
    port = str(listener.getsockname()[1])
    off = await run(make(ws, backend), ["python3", "-c", CONNECT, port])
    assert "CONNECTED" not in off.data["stdout"] and off.data["exit_code"] != 0
    with pytest.raises(BlockingIOError):
        listener.accept()
    on = await run(make(ws, backend, network=True), ["python3", "-c", CONNECT, port])
    assert on.data["stdout"] == "CONNECTED\n", on.data["stderr"]
    assert on.data["network"] is True


@pytest.mark.anyio
async def test_no_setsid_survivor_after_the_command_exits(ws: Path, backend: str) -> None:
    """Background children, including ones that called setsid and ignore SIGTERM, die with the command."""
    mark = marker()
    script = f"trap '' TERM; setsid sh -c \"trap '' TERM; sleep {mark}\" & sleep {mark} & echo started"
    result = await run(make(ws, backend), ["sh", "-c", script])
    assert result.data["stdout"] == "started\n"
    assert pids_with(mark) == []


@pytest.mark.anyio
async def test_timeout_kills_the_whole_tree_with_setsid_grandchildren(ws: Path, backend: str) -> None:
    """At the deadline, the command and every descendant (setsid, SIGTERM-ignoring) are gone."""
    mark = marker()
    script = (f"trap '' TERM; setsid sh -c \"trap '' TERM; sleep {mark}\" & "
              f"sh -c \"sleep {mark}\" & echo ready; wait")
    with anyio.fail_after(15):
        result = await run(make(ws, backend), ["sh", "-c", script], timeout=1)
    assert result.error is not None and result.error.code == "timeout"
    assert "ready" in result.error.message
    assert pids_with(mark) == []
    assert our_children() == []


@pytest.mark.anyio
async def test_cancelling_the_call_kills_the_tree(ws: Path, backend: str) -> None:
    """When the caller cancels, the tree is killed before the cancellation completes."""
    mark = marker()
    tb = make(ws, backend)
    with anyio.move_on_after(1):
        await run(tb, ["sh", "-c", f"setsid sleep {mark} & sleep {mark}; wait"])
    assert pids_with(mark) == []
    assert our_children() == []


@pytest.mark.anyio
async def test_no_descriptor_or_zombie_is_left_behind(ws: Path, backend: str) -> None:
    """Runs that finish, time out and flood output leave this process with the same descriptors."""
    tb = make(ws, backend, max_read_bytes=1 << 20)
    await run(tb, ["true"])  # warm caches (seccomp program, detection, this loop's epoll) before counting
    gc.collect()  # earlier tests' event loops close their epoll when collected, not on a schedule
    before = sorted(os.listdir("/proc/self/fd"))
    for _ in range(3):
        await run(tb, ["echo", "x"])
        await run(tb, ["sleep", "5"], timeout=0.2)
        await run(tb, ["yes"])
        await run(tb, ["cat"], stdin="data")
    assert sorted(os.listdir("/proc/self/fd")) == before
    assert our_children() == []


@pytest.mark.anyio
async def test_the_sandbox_cannot_signal_the_host(ws: Path, backend: str) -> None:
    """`kill -9` aimed at the launching process or at -1 leaves this test process alive and unharmed."""
    result = await run(make(ws, backend), ["sh", "-c", f"kill -9 {os.getpid()}; kill -9 -1; echo done"])
    assert result.ok  # we are still here to read it


@pytest.mark.anyio
async def test_broken_pipe_ends_a_writer_as_usual(ws: Path, backend: str) -> None:
    """SIGPIPE has its default action inside (Python's ignored signals do not leak into commands)."""
    result = await run(make(ws, backend), ["sh", "-c", "yes | head -n 2; echo ${PIPESTATUS:-done}"])
    assert result.data["stdout"] == "y\ny\ndone\n" and result.data["stderr"] == ""


@pytest.mark.anyio
async def test_rlimits_are_enforced(ws: Path, backend: str) -> None:
    """File size, open files and address space limits hold inside the sandbox."""
    tb = make(ws, backend, rlimits={"file_size": 1 << 20, "open_files": 64, "address_space": 1 << 30})
    big = await run(tb, ["sh", "-c", "head -c 5000000 /dev/zero > big"])
    assert big.data["exit_code"] == 128 + 25 and (ws / "big").stat().st_size == 1 << 20  # SIGXFSZ
    nofile = await run(tb, ["sh", "-c", "ulimit -n"])
    assert nofile.data["stdout"].strip() == "64"
    mem = await run(tb, ["python3", "-c", "b = bytearray(3 << 30)"])
    assert "MemoryError" in mem.data["stderr"]
    assert big.data["limits"]["file_size"] == 1 << 20


@pytest.mark.anyio
async def test_cpu_limit_stops_a_busy_loop(ws: Path, backend: str) -> None:
    """A CPU-seconds limit ends a busy loop long before its wall-clock timeout."""
    tb = make(ws, backend, rlimits={"cpu": 1})
    with anyio.fail_after(20):
        result = await run(tb, ["sh", "-c", "while :; do :; done"], timeout=30)
    assert result.ok and result.data["signal"] in ("SIGKILL", "SIGXCPU")


@pytest.mark.anyio
async def test_unenforceable_process_limit_is_reported(ws: Path, backend: str) -> None:
    """RLIMIT_NPROC means nothing for root: the result lists it as unenforced rather than pretending."""
    result = await run(make(ws, backend, rlimits={"processes": 100}), ["true"])
    expected = ["processes"] if os.geteuid() == 0 else []
    assert result.data["unenforced_limits"] == expected


@pytest.mark.anyio
async def test_nested_namespaces_and_ptrace_are_refused(ws: Path, backend: str) -> None:
    """seccomp refuses new user namespaces and ptrace inside the sandbox."""
    result = await run(make(ws, backend), ["sh", "-c", "unshare -U true && echo USERNS; unshare -n true && echo NETNS"])
    assert "USERNS" not in result.data["stdout"] and "NETNS" not in result.data["stdout"]


def test_describe_isolation_reports_every_primitive() -> None:
    """The doctor report names the chosen backend, its tree-kill method and each probe."""
    report = describe_isolation()
    assert report["backend"] in ("bwrap", "landlock", "none")
    assert {"bwrap", "landlock", "seccomp", "pid_namespace", "tree_kill"} <= set(report)
    assert report["landlock"]["abi"] == detect()["landlock"]["abi"]


@pytest.mark.anyio
async def test_bwrap_keeps_git_hooks_and_state_read_only(ws: Path) -> None:
    """Under bwrap, existing .git/hooks, .git/config and .toolhall cannot be rewritten by a command."""
    require_backend("bwrap")
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".toolhall").mkdir()
    script = ("echo evil > .git/hooks/pre-commit; echo evil >> .git/config; echo evil > .toolhall/x; "
              "echo ok > .git/HEAD")
    result = await run(make(ws, "bwrap"), ["sh", "-c", script])
    assert result.data["read_only"] == [".toolhall", ".git/hooks", ".git/config"]
    assert result.data["fixed_dirs"] == []
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / ".toolhall" / "x").exists()
    assert (ws / ".git" / "HEAD").read_text() == "ok\n"  # the rest of .git stays writable for git itself


def git_like_workspace(ws: Path) -> None:
    """A workspace holding a .git (hooks, config, HEAD, objects), .toolhall, a folder and a top file."""
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "objects").mkdir()
    (ws / ".git" / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\n")
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / ".toolhall").mkdir()
    (ws / "src").mkdir()
    (ws / "top.txt").write_text("top\n")


ATTACKS = ("echo evil > .git/hooks/pre-commit; echo evil >> .git/hooks/pre-commit.sample; "
           "ln -s /bin/sh .git/hooks/post-checkout; echo evil >> .git/config; mv .git/config .git/c2; "
           "rm -rf .git/hooks; mv .git/hooks .git/h; mv .git .g; echo evil > .toolhall/x; rm -rf .toolhall; ")


@pytest.mark.anyio
async def test_landlock_keeps_git_hooks_config_and_state_read_only(ws: Path) -> None:
    """Under Landlock, hooks, .git/config and .toolhall survive every write, rename and delete attempt."""
    require_backend("landlock")
    git_like_workspace(ws)
    script = ATTACKS + ("echo ok > .git/HEAD; echo o > .git/objects/o; echo ok >> top.txt; mkdir src/d; "
                        "echo ok > src/d/new.txt; mv src/d src/e")
    result = await run(make(ws, "landlock"), ["sh", "-c", script])
    assert sorted(p.name for p in (ws / ".git" / "hooks").iterdir()) == ["pre-commit.sample"]
    assert (ws / ".git" / "hooks" / "pre-commit.sample").read_text() == "#!/bin/sh\n"
    assert (ws / ".git" / "config").read_text() == "[core]\n" and not (ws / ".git" / "c2").exists()
    assert list((ws / ".toolhall").iterdir()) == [] and not (ws / ".g").exists()
    # Everything else stays writable, inside .git (for git's objects and refs) and out.
    assert (ws / ".git" / "HEAD").read_text() == "ok\n" and (ws / ".git" / "objects" / "o").exists()
    assert (ws / "top.txt").read_text() == "top\nok\n" and (ws / "src" / "e" / "new.txt").exists()
    assert result.data["read_only"] == [".git/config", ".git/hooks", ".toolhall"]
    assert result.data["fixed_dirs"] == [".", ".git"]


@pytest.mark.anyio
async def test_landlock_protection_costs_new_entries_in_the_root_and_in_git(ws: Path) -> None:
    """The price, as the result reports it: no new top-level entry and no lock file directly in .git."""
    require_backend("landlock")
    git_like_workspace(ws)
    result = await run(make(ws, "landlock"), ["sh", "-c", "touch new.txt; touch .git/index.lock; echo done"])
    assert result.data["stdout"] == "done\n" and "Permission denied" in result.data["stderr"]
    assert not (ws / "new.txt").exists() and not (ws / ".git" / "index.lock").exists()


@pytest.mark.anyio
async def test_landlock_workspace_without_git_or_state_is_writable_as_a_whole(ws: Path) -> None:
    """With nothing to protect, the root is one writable grant: new top-level files are fine."""
    require_backend("landlock")
    result = await run(make(ws, "landlock"), ["sh", "-c", "touch new.txt && mkdir d && mv d e"])
    assert result.ok and result.data["exit_code"] == 0
    assert (ws / "new.txt").exists() and (ws / "e").is_dir()
    assert result.data["read_only"] == [] and result.data["fixed_dirs"] == []


@pytest.mark.anyio
async def test_landlock_grants_never_follow_a_top_level_symlink(ws: Path, tmp_path: Path) -> None:
    """A top-level link to a folder outside gets no grant of its own, so writing through it fails."""
    require_backend("landlock")
    git_like_workspace(ws)
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "out").symlink_to(outside)
    (ws / "git-config-link").symlink_to(ws / ".git" / "config")
    result = await run(make(ws, "landlock"), ["sh", "-c", "echo x > out/f; echo evil >> git-config-link"])
    assert list(outside.iterdir()) == []
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert result.data["stderr"].count("Permission denied") == 2
