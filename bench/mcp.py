"""MCP serving: tools/call round trips per second over stdio and streamable HTTP, toolhall vs the SDK's own
`MCPServer` serving the same trivial tool in the same run; idle memory of `toolhall serve`; start-up time of
`toolhall serve` to its first response.

Run: `.venv/bin/python bench/mcp.py` (prints tables; no assertion, numbers vary with the machine and its load).
Both servers are driven by the official `mcp` Python client (2025-11-25 handshake, as today's clients do).
toolhall's numbers include what `toolhall serve` always does: the Session (policy, durable SQLite log row).
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is bench/mcp.py and bench/ holds http.py: with bench/ first on sys.path (as for any script),
# `import mcp` and `import http` would find those. Drop it, import the packages, then add it back at the end.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import AbstractAsyncContextManager, AsyncExitStack, contextmanager  # noqa: E402
from typing import Any  # noqa: E402

import httpx  # noqa: E402
import httpx2  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

sys.path.append(str(HERE))
from _common import describe_machine, print_table  # noqa: E402

TOOLS_DIR = HERE / "_mcp"

CALLS = {"stdio": 200, "http": 100}
ROUNDS = 5
TOKEN = "bench-token"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLHALL_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TOOLS_DIR), env.get("PYTHONPATH", "")) if p)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _toolhall(workspace: Path, *args: str, toolbox: bool = True) -> list[str]:
    extra = ["--toolbox", "mcp_bench_tools:toolbox"] if toolbox else []
    return [sys.executable, "-m", "toolhall", "serve", "--workspace", str(workspace), *extra, *args]


def _sdk(*args: str) -> list[str]:
    return [sys.executable, str(TOOLS_DIR / "mcp_bench_tools.py"), *args]


# -- round trips -------------------------------------------------------------------------------------------


async def _interleaved_rates(
    connects: dict[str, Callable[[], AbstractAsyncContextManager[Any]]], calls: int
) -> dict[str, list[float]]:
    """Calls per second for each server, rounds alternating between them (a shared 2-core box's load then
    weighs on both alike)."""
    rates: dict[str, list[float]] = {name: [] for name in connects}
    async with AsyncExitStack() as stack:
        clients = {name: await stack.enter_async_context(Client(c(), mode="legacy")) for name, c in connects.items()}
        for client in clients.values():
            for i in range(20):  # warm-up: first-call costs, caches
                await client.call_tool("add", {"a": i, "b": 1})
        for _ in range(ROUNDS):
            for name, client in clients.items():
                start = time.perf_counter()
                for i in range(calls):
                    result = await client.call_tool("add", {"a": i, "b": 1})
                    assert not result.is_error, result
                rates[name].append(calls / (time.perf_counter() - start))
    return rates


def _stdio(command: list[str], cwd: Path) -> Callable[[], Any]:
    return lambda: StdioServerParameters(command=command[0], args=command[1:], cwd=cwd, env=_env())


@contextmanager
def _http_server(command: list[str], cwd: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(command, cwd=cwd, env=_env(), stdin=subprocess.DEVNULL,  # noqa: S603
                               stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
    try:
        try:
            _first_http_response(port, time.monotonic() + 60, process)
        except RuntimeError:
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace")[-3000:])
            raise
        yield process
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def _first_http_response(port: int, deadline: float, process: subprocess.Popen[bytes]) -> None:
    # Poll with bare connects (cheap), not a new HTTP client per try: on 2 cores the poller's own CPU would
    # slow the server it is timing.
    while True:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before answering")
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on port {port}")
        time.sleep(0.005)
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(timeout=30, trust_env=False) as http:
        response = http.post(f"http://127.0.0.1:{port}/mcp", json=INIT, headers=headers)
    if response.status_code != 200:
        raise RuntimeError(f"initialize on port {port}: HTTP {response.status_code} {response.text[:200]}")


def _http_client(port: int) -> Callable[[], Any]:
    def connect() -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
        return streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)

    return connect


def round_trips(workspace: Path) -> list[list[str]]:
    """Sequential tools/call round trips per second, toolhall and MCPServer interleaved, per transport."""
    rows = []
    stdio = {"toolhall": _stdio(_toolhall(workspace), workspace), "MCPServer": _stdio(_sdk("stdio"), workspace)}
    results = {("stdio", k): v for k, v in asyncio.run(_interleaved_rates(stdio, CALLS["stdio"])).items()}
    ports = {"toolhall": _free_port(), "MCPServer": _free_port()}
    commands = {
        "toolhall": _toolhall(workspace, "--http", "--port", str(ports["toolhall"]), "--token", TOKEN),
        "MCPServer": _sdk("http", str(ports["MCPServer"])),
    }
    with (
        _http_server(commands["toolhall"], workspace, ports["toolhall"]),
        _http_server(commands["MCPServer"], workspace, ports["MCPServer"]),
    ):
        http = {name: _http_client(port) for name, port in ports.items()}
        results |= {("http", k): v for k, v in asyncio.run(_interleaved_rates(http, CALLS["http"])).items()}
    for (transport, who), rates in results.items():
        median = statistics.median(rates)
        rows.append([f"{transport:5} {who}", f"{median:.0f}", f"{max(rates):.0f}", f"{1000 / median:.2f}"])
    return rows


# -- start-up and memory -----------------------------------------------------------------------------------


def _stdio_first_response_s(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=_env(), stdin=subprocess.PIPE,  # noqa: S603
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(INIT).encode() + b"\n")
    process.stdin.flush()
    line = process.stdout.readline()
    elapsed = time.perf_counter() - start
    assert b'"result"' in line, line
    process.stdin.close()
    process.wait(timeout=10)
    return elapsed


def _http_first_response_s(command: list[str], cwd: Path, port: int) -> float:
    start = time.perf_counter()
    with _http_server(command, cwd, port):
        return time.perf_counter() - start


def startup(workspace: Path, repeats: int = 5) -> list[list[str]]:
    """Process start to the first `initialize` answer, median and best of `repeats`."""
    cases: dict[str, Callable[[], float]] = {
        "toolhall serve (standard tools), stdio": lambda: _stdio_first_response_s(
            _toolhall(workspace, toolbox=False), workspace
        ),
        "toolhall serve --toolbox (1 tool), stdio": lambda: _stdio_first_response_s(_toolhall(workspace), workspace),
        "MCPServer (1 tool), stdio": lambda: _stdio_first_response_s(_sdk("stdio"), workspace),
    }

    def http(command: Callable[[int], list[str]]) -> Callable[[], float]:
        def run() -> float:
            port = _free_port()
            return _http_first_response_s(command(port), workspace, port)

        return run

    cases["toolhall serve --http (standard tools)"] = http(
        lambda p: _toolhall(workspace, "--http", "--port", str(p), "--token", TOKEN, toolbox=False)
    )
    cases["MCPServer (1 tool), http"] = http(lambda p: _sdk("http", str(p)))
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):  # interleaved, so the machine's load weighs on every case alike
        for name, case in cases.items():
            times[name].append(case())
    return [[name, f"{statistics.median(t) * 1000:.0f}", f"{min(t) * 1000:.0f}"] for name, t in times.items()]


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def idle_memory(workspace: Path) -> list[list[str]]:
    """RSS of an idle HTTP server after start-up and one initialize (the standard toolbox, and the peer)."""
    rows = []
    commands: dict[str, Callable[[int], list[str]]] = {
        "toolhall serve --http (standard tools)": lambda p: _toolhall(
            workspace, "--http", "--port", str(p), "--token", TOKEN, toolbox=False
        ),
        "toolhall serve --http --toolbox (1 tool)": lambda p: _toolhall(
            workspace, "--http", "--port", str(p), "--token", TOKEN
        ),
        "MCPServer (1 tool), http": lambda p: _sdk("http", str(p)),
    }
    for name, command in commands.items():
        port = _free_port()
        with _http_server(command(port), workspace, port) as process:
            time.sleep(1.0)
            rows.append([name, f"{_rss_mib(process.pid):.1f}"])
    return rows


def main() -> None:
    """Print the three tables."""
    print(describe_machine())
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        print_table(
            f"tools/call round trips, sequential, one client per server, rounds interleaved "
            f"({CALLS['stdio']} stdio / {CALLS['http']} HTTP calls "
            f"x {ROUNDS} rounds)",
            ["server", "calls/s (median)", "calls/s (best)", "ms/call"],
            round_trips(workspace),
        )
        print_table("start-up to first response (process spawn → initialize answered)", ["server", "median ms",
                    "best ms"], startup(workspace))  # fmt: skip
        print_table("idle memory", ["server", "RSS MiB"], idle_memory(workspace))


if __name__ == "__main__":
    main()
