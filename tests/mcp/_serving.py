"""Running `toolhall serve` as a real subprocess for the tests that drive it with real MCP clients."""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = [
    "CONFORMANCE",
    "INSPECTOR",
    "REPO",
    "Served",
    "free_port",
    "npx_or_skip",
    "run_bounded",
    "serve_env",
    "serve_http",
    "toolhall_command",
    "unavailable",
]

REPO = Path(__file__).resolve().parents[2]
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
CONFORMANCE = "@modelcontextprotocol/conformance@0.1.16"


def toolhall_command(*args: str) -> list[str]:
    """The `toolhall` command line, run by this interpreter (the project's virtualenv)."""
    return [sys.executable, "-m", "toolhall", *args]


def serve_env(**extra: str) -> dict[str, str]:
    """The environment for a served subprocess: no stray `TOOLHALL_*` settings, the repository importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLHALL_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unavailable(reason: str) -> None:
    """Skip locally; under `CI=true` a missing external client is a failure, not a skip."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: this must run)")
    pytest.skip(reason)


def npx_or_skip() -> str:
    """The `npx` executable; skips (also under CI) when Node is not installed at all."""
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx (Node.js) is not installed")
    return npx


@dataclass
class Served:
    """A running `toolhall serve --http`."""

    process: subprocess.Popen[str]
    url: str
    token: str
    banner: list[str]
    startup_s: float
    stderr: list[str] = field(default_factory=list)


def _pump(stream: object, lines: queue.Queue[str | None]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.put(line.rstrip("\n"))
    lines.put(None)


@contextlib.contextmanager
def serve_http(workspace: Path, *args: str, token: str = "t0ken-for-tests", timeout: float = 30.0) -> Iterator[Served]:
    """`toolhall serve --http` on a free loopback port until the block ends; waits for its banner.

    An empty `token` passes no `--token`, so the server makes one up (and prints it).
    """
    port = free_port()
    given = ("--token", token) if token else ()
    command = toolhall_command("serve", "--http", "--port", str(port), *given, "--workspace", str(workspace), *args)
    started = time.perf_counter()
    process = subprocess.Popen(  # noqa: S603 - our own command line
        command, cwd=workspace, env=serve_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(process.stderr, lines), daemon=True).start()
    banner: list[str] = []
    try:
        deadline = time.monotonic() + timeout
        while not any(line.lstrip().startswith("add it:") for line in banner):
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"toolhall serve printed no banner in {timeout} s: {banner}") from None
            if line is None:
                raise AssertionError(f"toolhall serve exited ({process.wait()}): {banner}")
            banner.append(line)
        _wait_for_port(port, deadline)
        served = Served(process, f"http://127.0.0.1:{port}/mcp", token, banner, time.perf_counter() - started)
        yield served
    finally:
        _stop(process)
        while True:
            try:
                rest = lines.get(timeout=2)
            except queue.Empty:
                break
            if rest is None:
                break
            banner.append(rest)
        if process.stderr is not None:
            process.stderr.close()


def _wait_for_port(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_bounded(command: Sequence[str], *, timeout: float, env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Run a client command with a hard time limit; returns (exit code, stdout+stderr); -9 on timeout."""
    try:
        done = subprocess.run(  # noqa: S603 - fixed command lines built by the tests
            list(command), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return -9, out + f"\n(timed out after {timeout} s)"
    return done.returncode, done.stdout + done.stderr
