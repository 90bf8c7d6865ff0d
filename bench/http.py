"""http_request throughput against a local server, next to a plain `httpx.AsyncClient` in the same run.

The server runs in its own process on 127.0.0.1 (a minimal keep-alive HTTP/1.1 responder, so the client
side dominates). Rows: a plain client (the baseline), a plain client over the guarded transport (the cost
of the SSRF guard alone), and the tool through `Toolbox.call` (guard + validation + cookies + body
handling + result). Each row is the best of a few rounds; sequential and 8-way concurrent.

Run: `.venv/bin/python bench/http.py` (loopback only; about 20 s).
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named like the standard library's `http` package; running it puts bench/ first on the
# path, which would shadow that package for httpx. Drop bench/ from the path before importing anything.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent / "src"))

import asyncio  # noqa: E402
import multiprocessing  # noqa: E402
import multiprocessing.connection  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402

import httpx  # noqa: E402

from toolhall.tools import http  # noqa: E402
from toolhall.tools._http_transport import GuardedTransport  # noqa: E402
from toolhall.tools._ssrf import AddressGuard  # noqa: E402

BODY = b'{"ok": true, "items": [1, 2, 3], "name": "toolhall bench"}'
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
REQUESTS = 1500
ROUNDS = 5


class _Responder(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:  # requests carry no body here
            _, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            self.transport.write(RESPONSE)  # type: ignore[attr-defined]


def _serve(port_out: multiprocessing.connection.Connection) -> None:
    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(_Responder, "127.0.0.1", 0)
        port_out.send(server.sockets[0].getsockname()[1])
        await asyncio.sleep(120)  # bounded: the bench stops it long before

    asyncio.run(main())


async def _measure(send: Callable[[], Awaitable[None]], concurrency: int) -> tuple[float, float]:
    """(requests per second, client CPU µs per request) for REQUESTS requests, `concurrency` at a time."""
    per_worker = REQUESTS // concurrency

    async def worker() -> None:
        for _ in range(per_worker):
            await send()

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    n = per_worker * concurrency
    return n / (time.perf_counter() - wall), (time.process_time() - cpu) / n * 1e6


async def bench(url: str, port: int) -> list[tuple[str, int, float, float]]:
    rows: list[tuple[str, int, float, float]] = []
    guard = AddressGuard(allow=[f"127.0.0.1:{port}"])
    async with (
        httpx.AsyncClient(trust_env=False) as plain,
        httpx.AsyncClient(transport=GuardedTransport(guard), trust_env=False) as guarded,
    ):
        tb = http.toolbox(allow_hosts=[f"127.0.0.1:{port}"])

        async def via_plain() -> None:
            response = await plain.get(url)
            response.json()

        async def via_guarded() -> None:
            response = await guarded.get(url)
            response.json()

        async def via_tool() -> None:
            result = await tb.call("http_request", {"url": url})
            assert result.ok, result.error

        for send in (via_plain, via_guarded, via_tool):  # warm up pools, validators, caches
            for _ in range(50):
                await send()
        clients = (
            ("httpx.AsyncClient", via_plain),
            ("httpx + GuardedTransport", via_guarded),
            ("http_request tool", via_tool),
        )
        for concurrency in (1, 8):
            rate = dict.fromkeys((name for name, _ in clients), 0.0)
            cpu = dict.fromkeys((name for name, _ in clients), float("inf"))
            for _ in range(ROUNDS):  # interleaved rounds, so drift on a shared machine hits every row alike
                for name, send in clients:
                    r, c = await _measure(send, concurrency)
                    rate[name], cpu[name] = max(rate[name], r), min(cpu[name], c)
            rows.extend((name, concurrency, rate[name], cpu[name]) for name, _ in clients)
    return rows


def main() -> None:
    """Start the server process, run the rows, print the table."""
    receive, send = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.Process(target=_serve, args=(send,), daemon=True)
    process.start()
    try:
        port = receive.recv()
        rows = asyncio.run(bench(f"http://127.0.0.1:{port}/item", port))
    finally:
        process.terminate()
        process.join(5)
    base = {c: (r, cpu) for name, c, r, cpu in rows if name == "httpx.AsyncClient"}
    print(
        f"http_request vs httpx.AsyncClient: {REQUESTS} GETs per row on 127.0.0.1, best of {ROUNDS} interleaved rounds"
    )
    print(f"{'client':<26}{'conc':>5}{'req/s':>8}{'wall x':>8}{'CPU µs/req':>12}{'CPU x':>7}")
    for name, concurrency, rate, cpu in rows:
        base_rate, base_cpu = base[concurrency]
        print(f"{name:<26}{concurrency:>5}{rate:>8.0f}{base_rate / rate:>7.2f}x{cpu:>12.0f}{cpu / base_cpu:>6.2f}x")
    print("wall x: time per request relative to plain httpx (noisy on a shared 2-core machine);")
    print("CPU x: this process's CPU per request relative to plain httpx (the server runs in another process).")


if __name__ == "__main__":
    main()
