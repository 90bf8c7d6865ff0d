"""Call overhead, schema export, call_many and import time: toolhall against the floors and its peers, in one run.

Run: `.venv/bin/python bench/call_overhead.py` for toolhall and the floors, or
`bench/.venv-peers/bin/python bench/call_overhead.py` to add pydantic-ai, langchain-core, the OpenAI Agents SDK
and the MCP SDK (set up as `bench/README.md` says). A peer that is not installed prints "not installed".
Every figure is a median over interleaved rounds; ratios compare numbers taken in this same run.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds scripts named like standard modules (http.py, sql.py): put it last on sys.path, or a peer's
# `import http` would load bench/http.py.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH] + [str(_BENCH)]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import functools  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable, Sequence  # noqa: E402
from typing import Any, cast  # noqa: E402

import anyio  # noqa: E402
import anyio.to_thread  # noqa: E402
from _common import (  # noqa: E402
    PEERS,
    AsyncCase,
    Peer,
    StallTicker,
    describe_machine,
    import_ms,
    interleaved_us,
    print_table,
    version_of,
)
from pydantic import TypeAdapter  # noqa: E402
from pydantic_core import SchemaValidator, core_schema  # noqa: E402

from toolhall import Tool, Toolbox, ToolCall, tool  # noqa: E402

ARGS = '{"a": 1, "b": 2}'
TIMEOUT = 30.0


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def add_sync(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def nap(i: int) -> int:
    """Sleep 10 ms."""
    await asyncio.sleep(0.01)
    return i


def nap_sync(i: int) -> int:
    """Sleep 10 ms in a thread."""
    time.sleep(0.01)
    return i


# A precompiled validator straight to keyword arguments: the least any validating dispatcher must do.
VALIDATOR = SchemaValidator(
    core_schema.typed_dict_schema(
        {
            "a": core_schema.typed_dict_field(core_schema.int_schema()),
            "b": core_schema.typed_dict_field(core_schema.int_schema()),
        }
    )
)


def fmt_us(value: float | None) -> str:
    """µs with a precision that suits the magnitude."""
    if value is None:
        return "not installed"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def fmt_ratio(value: float | None, base: float) -> str:
    """`value / base` as "1.23x"."""
    return "" if value is None else f"{value / base:.2f}x"


def verdict(ok: bool) -> str:
    """MET or MISSED, for the target lines."""
    return "MET" if ok else "MISSED"


async def checked(case: AsyncCase, label: str) -> AsyncCase:
    """The case, after one call proves it dispatches correctly (a benchmark of failing calls measures nothing)."""
    result = await case()
    ok = getattr(result, "ok", True) and not getattr(result, "is_error", False)
    if not ok or "3" not in repr(result):
        raise SystemExit(f"{label}: unexpected result {result!r}")
    return case


# -- 1. µs per call -------------------------------------------------------------------------------
async def async_cases(peers: Sequence[Peer]) -> tuple[dict[str, AsyncCase], list[str]]:
    """Floors, toolhall and peers dispatching `add` (an `async def` tool) from JSON text."""
    tb = Toolbox([Tool.from_function(add, timeout=TIMEOUT)])

    async def plain() -> Any:
        return await add(**json.loads(ARGS))

    async def validated() -> Any:
        return await add(**VALIDATOR.validate_json(ARGS))

    async def with_timeout() -> Any:
        async with asyncio.timeout(TIMEOUT):
            return await add(**VALIDATOR.validate_json(ARGS))

    async def toolhall_call() -> Any:
        return await tb.call("add", ARGS)

    cases: dict[str, AsyncCase] = {
        "floor: add(**json.loads(s))": plain,
        "floor: pydantic-core validator + call": validated,
        "floor: validator + asyncio.timeout": with_timeout,
        "toolhall Toolbox.call": toolhall_call,
    }
    missing = []
    for peer in peers:
        dispatch = await peer.dispatcher([add, add_sync])
        if dispatch is None:
            missing.append(peer.call_label)
            continue
        cases[peer.call_label] = functools.partial(dispatch, "add", ARGS)
    return {k: await checked(v, k) for k, v in cases.items()}, missing


async def sync_cases(peers: Sequence[Peer]) -> tuple[dict[str, AsyncCase], list[str]]:
    """Floors, toolhall (threaded and inline) and peers dispatching `add_sync` (a `def` tool)."""
    tb = Toolbox(
        [Tool.from_function(add_sync, timeout=TIMEOUT), Tool.from_function(add_sync, name="add_inline", inline=True)]
    )

    async def plain() -> Any:
        return add_sync(**json.loads(ARGS))

    async def validated() -> Any:
        return add_sync(**VALIDATOR.validate_json(ARGS))

    async def with_timeout() -> Any:
        async with asyncio.timeout(TIMEOUT):
            return add_sync(**VALIDATOR.validate_json(ARGS))

    async def thread_hop() -> Any:
        async with asyncio.timeout(TIMEOUT):
            return await anyio.to_thread.run_sync(functools.partial(add_sync, **VALIDATOR.validate_json(ARGS)))

    cases: dict[str, AsyncCase] = {
        "floor: add(**json.loads(s))": plain,
        "floor: pydantic-core validator + call": validated,
        "floor: validator + asyncio.timeout": with_timeout,
        "floor: + anyio thread hop": thread_hop,
        "toolhall Toolbox.call": functools.partial(tb.call, "add_sync", ARGS),
        "toolhall Toolbox.call, inline=True": functools.partial(tb.call, "add_inline", ARGS),
    }
    missing = []
    for peer in peers:
        dispatch = await peer.dispatcher([add, add_sync])
        if dispatch is None:
            missing.append(peer.call_label)
            continue
        cases[peer.call_label] = functools.partial(dispatch, "add_sync", ARGS)
    return {k: await checked(v, k) for k, v in cases.items()}, missing


def overhead_rows(results: dict[str, float], missing: list[str], base: float) -> list[list[str]]:
    """Table rows: case, µs per call, ratio to `base`."""
    rows = [[name, fmt_us(us), fmt_ratio(us, base)] for name, us in results.items()]
    return rows + [[name, fmt_us(None), ""] for name in missing]


async def bench_overhead(peers: Sequence[Peer], rounds: int) -> None:
    """Section 1: µs per call for `async def` and `def` tools."""
    cases, missing = await async_cases(peers)
    # CPU time: everything here runs on the event loop, and other processes' load must not count.
    results = await interleaved_us(cases, rounds=rounds, clock=time.process_time)
    base = results["floor: validator + asyncio.timeout"]
    print_table(
        "1a. async def add(a: int, b: int), dispatched from JSON text (CPU µs per call, median)",
        ["case", "µs/call", "x floor+timeout"],
        overhead_rows(results, missing, base),
    )
    ours = results["toolhall Toolbox.call"]
    print(
        f"target: under 10 µs and under 2x floor+timeout: {ours:.2f} µs, {ours / base:.2f}x -> "
        f"{verdict(ours < 10 and ours < 2 * base)}"
    )

    cases, missing = await sync_cases(peers)
    results = await interleaved_us(cases, rounds=rounds)
    base = results["floor: + anyio thread hop"]
    print_table(
        "1b. def add(a: int, b: int), dispatched from JSON text (wall µs per call, median)",
        ["case", "µs/call", "x thread-hop floor"],
        overhead_rows(results, missing, base),
    )
    ours = results["toolhall Toolbox.call"]
    print(f"target: within 1.2x of the thread-hop floor: {ours / base:.2f}x -> {verdict(ours <= 1.2 * base)}")


# -- 2. schema export -----------------------------------------------------------------------------
_TEMPLATE = '''
def search_{i}(query: str, limit: int = 10, score: float = 0.5, tags: list[str] | None = None,
               mode: Literal["fast", "full"] = "fast") -> str:
    """Search item set {i}.

    Args:
        query: What to look for.
        limit: How many results at most.
        score: The minimum score.
        tags: Only items carrying one of these tags.
        mode: How hard to look.
    """
    return query
'''


def fresh_functions(count: int = 200) -> list[Callable[..., Any]]:
    """`count` new five-parameter functions (new objects every time, so nothing is cached on them)."""
    namespace: dict[str, Any] = {"Literal": __import__("typing").Literal}
    source = "\n".join(_TEMPLATE.format(i=i) for i in range(count))
    # dont_inherit: this module's `from __future__ import annotations` must not turn the hints into strings.
    exec(compile(source, "<bench tools>", "exec", dont_inherit=True), namespace)
    return [namespace[f"search_{i}"] for i in range(count)]


def toolhall_export(funcs: Sequence[Callable[..., Any]]) -> list[dict[str, Any]]:
    """Register the functions as tools and export them for OpenAI (validators stay unbuilt until a call)."""
    return Toolbox([tool(f) for f in funcs]).schemas("openai")


def floor_export(funcs: Sequence[Callable[..., Any]]) -> list[dict[str, Any]]:
    """The pydantic floor: a TypeAdapter per function and its JSON schema."""
    return [
        {
            "type": "function",
            "function": {
                "name": f.__name__,
                "description": f.__doc__,
                "parameters": TypeAdapter(cast(Any, f)).json_schema(),
            },
        }
        for f in funcs
    ]


async def timed_ms(fn: Callable[[], Awaitable[Any]]) -> float:
    """Wall ms of one awaited run, checking it produced 200 tools."""
    gc.collect()
    start = time.perf_counter()
    out = await fn()
    elapsed = (time.perf_counter() - start) * 1000
    if len(out) != 200:
        raise SystemExit(f"export produced {len(out)} tools, not 200")
    return elapsed


async def bench_export(peers: Sequence[Peer], rounds: int) -> None:
    """Section 2: cold export of 200 tools, warm export from the cache."""
    exporters: dict[str, Callable[[Sequence[Callable[..., Any]]], Awaitable[list[dict[str, Any]]]]] = {
        "floor: TypeAdapter(fn).json_schema() x200": lambda fs: asyncio.sleep(0, floor_export(fs)),
        "toolhall register + schemas('openai')": lambda fs: asyncio.sleep(0, toolhall_export(fs)),
    }
    missing = []
    peer_labels = set()
    for peer in peers:
        if peer.available():
            exporters[peer.export_label] = peer.export_openai
            peer_labels.add(peer.export_label)
        else:
            missing.append(peer.export_label)
    samples: dict[str, list[float]] = {name: [] for name in exporters}
    for r in range(rounds + 1):  # round 0 warms imports and pydantic's own caches; it is not counted
        for name, export in exporters.items():
            funcs = fresh_functions()
            elapsed = await timed_ms(functools.partial(export, funcs))
            if r:
                samples[name].append(elapsed)
    cold = {name: statistics.median(v) for name, v in samples.items()}
    base = cold["floor: TypeAdapter(fn).json_schema() x200"]
    rows = [[name, f"{ms:.0f}", fmt_ratio(ms, base)] for name, ms in cold.items()]
    rows += [[name, "not installed", ""] for name in missing]
    print_table(
        "2a. cold: build 200 five-parameter tools and export to OpenAI (ms, median)", ["case", "ms", "x floor"], rows
    )
    ours = cold["toolhall register + schemas('openai')"]
    beaten = all(ours < ms for name, ms in cold.items() if name in peer_labels)
    print(
        f"target: at most the floor and faster than every peer: {ours / base:.2f}x, "
        f"faster than peers: {'yes' if beaten else 'no'} -> {verdict(ours <= base and beaten)}"
    )
    await bench_warm_export(rounds)


async def bench_warm_export(rounds: int) -> None:
    """Section 2b: warm export of the whole list, and that each export returns fresh top-level dicts."""
    tb = Toolbox([tool(f) for f in fresh_functions()])
    first = tb.schemas("openai")
    first[0]["cache_control"] = {"type": "ephemeral"}
    first[0]["function"]["name"] = "changed"
    again = tb.schemas("openai")
    fresh = "cache_control" not in again[0] and again[0]["function"]["name"] == "search_0"

    async def warm() -> Any:
        return tb.schemas("openai")

    us = (await interleaved_us({"warm": warm}, rounds=rounds, clock=time.process_time))["warm"]
    print_table(
        "2b. warm: schemas('openai') of the same 200 tools (CPU µs per export, median)",
        ["case", "µs", "fresh top-level dicts"],
        [["toolhall schemas('openai'), cached", fmt_us(us), "yes" if fresh else "NO"]],
    )
    print(f"target: under 100 µs, fresh dicts: {us:.1f} µs -> {verdict(us < 100 and fresh)}")
    await bench_first_call(tb)


async def bench_first_call(tb: Toolbox) -> None:
    """Section 2c: what the cold export deferred: each tool's validator is built by its first call."""
    first: list[float] = []
    later: list[float] = []
    for name in tb.names():
        for samples in (first, later):
            start = time.process_time()
            result = await tb.call(name, '{"query": "x", "limit": "5"}')
            samples.append((time.process_time() - start) * 1e6)
            if not result.ok:
                raise SystemExit(f"{name}: {result.output}")
    print_table(
        "2c. the deferred cost: calling each of those 200 tools (def, so a thread hop each; CPU µs, median)",
        ["case", "µs"],
        [["first call (builds the tool's validator)", fmt_us(statistics.median(first))],
         ["second call", fmt_us(statistics.median(later))]],
    )  # fmt: skip


# -- 3. call_many -----------------------------------------------------------------------------------
Batch = Callable[[], Awaitable[Any]]


def bounded_gather(dispatch: Callable[[str, str], Awaitable[Any]], name: str, count: int, concurrency: int) -> Batch:
    """How a user runs many calls through a peer: gather under a semaphore."""

    async def run() -> Any:
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> Any:
            async with gate:
                return await dispatch(name, f'{{"i": {i}}}')

        return await asyncio.gather(*(one(i) for i in range(count)))

    return run


def many_cases(name: str, count: int, concurrency: int) -> dict[str, Batch]:
    """Floor and toolhall batches of `count` calls of tool `name` at `concurrency`."""
    tb = Toolbox([tool(nap), tool(nap_sync)])
    calls = [ToolCall(name, f'{{"i": {i}}}') for i in range(count)]

    async def ours() -> Any:
        results = await tb.call_many(calls, concurrency=concurrency)
        if not all(r.ok for r in results):
            raise SystemExit(f"call_many failed: {[r.output for r in results if not r.ok][:3]}")
        return results

    async def floor_async() -> Any:
        return await asyncio.gather(*(nap(**json.loads(c.arguments)) for c in calls))  # type: ignore[arg-type]

    async def floor_sync() -> Any:
        limiter = anyio.CapacityLimiter(concurrency)
        return await asyncio.gather(
            *(anyio.to_thread.run_sync(functools.partial(nap_sync, i), limiter=limiter) for i in range(count))
        )

    floor = (
        ("floor: gather of bare coroutines", floor_async)
        if name == "nap"
        else (f"floor: anyio threads, limiter={concurrency}", floor_sync)
    )
    return {floor[0]: floor[1], "toolhall call_many": ours}


async def run_batches(batches: dict[str, Batch], rounds: int) -> dict[str, tuple[float, float]]:
    """Median wall ms and worst loop stall (ms) of each batch, interleaved."""
    walls: dict[str, list[float]] = {name: [] for name in batches}
    stalls: dict[str, float] = dict.fromkeys(batches, 0.0)
    for r in range(rounds + 1):  # round 0 warms threads and validators; not counted
        for name, batch in batches.items():
            gc.collect()
            async with StallTicker() as ticker:
                start = time.perf_counter()
                await batch()
                wall = (time.perf_counter() - start) * 1000
            if r:
                walls[name].append(wall)
                stalls[name] = max(stalls[name], ticker.max_stall_ms)
    return {name: (statistics.median(walls[name]), stalls[name]) for name in batches}


async def bench_many(peers: Sequence[Peer], rounds: int) -> None:
    """Section 3: 1,000 async calls at concurrency 1000; 200 sync calls at concurrency 50."""
    # The stall target is the sync case's: sync tools must never block the loop. Starting 1,000 async calls at
    # once holds the loop for a while by nature (the bare-coroutine floor shows how long).
    for name, count, concurrency, target, stall_target in (
        ("nap", 1000, 1000, 35.0, None),
        ("nap_sync", 200, 50, 50.0, 5.0),
    ):
        batches = many_cases(name, count, concurrency)
        missing = []
        for peer in peers:
            dispatch = await peer.dispatcher([nap, nap_sync])
            if dispatch is None:
                missing.append(peer.call_label)
            else:
                batches[peer.call_label] = bounded_gather(dispatch, name, count, concurrency)
        results = await run_batches(batches, rounds)
        rows = [[label, f"{wall:.1f}", f"{stall:.1f}"] for label, (wall, stall) in results.items()]
        rows += [[label, "not installed", ""] for label in missing]
        kind = "async def" if name == "nap" else "def"
        print_table(
            f"3. call_many: {count} calls of a {kind} tool sleeping 10 ms, concurrency={concurrency}",
            ["case", "wall ms", "max loop stall ms"],
            rows,
        )
        wall, stall = results["toolhall call_many"]
        if stall_target is None:
            print(f"target: under {target:g} ms wall: {wall:.1f} ms -> {verdict(wall < target)}")
        else:
            print(
                f"target: under {target:g} ms wall, loop stall under {stall_target:g} ms: {wall:.1f} ms, "
                f"{stall:.1f} ms -> {verdict(wall < target and stall < stall_target)}"
            )


# -- 4. import time ---------------------------------------------------------------------------------
def bench_import(peers: Sequence[Peer], runs: int) -> None:
    """Section 4: import time in fresh interpreters."""
    ours = ["import pydantic", "import toolhall", "from toolhall import Toolbox, tool"]
    statements = ours + [peer.import_statement for peer in peers]
    times = import_ms(statements, runs=runs)
    base = times["import pydantic"] or 1.0
    rows = []
    for stmt in statements:
        ms = times[stmt]
        rows.append([stmt, "not installed" if ms is None else f"{ms:.1f}", fmt_ratio(ms, base)])
    print_table(
        f"4. import time in a fresh interpreter (ms, median of {runs})", ["statement", "ms", "x pydantic"], rows
    )
    ms = times["import toolhall"] or 0.0
    print(f"target: import toolhall under 1.5x import pydantic: {ms / base:.2f}x -> {verdict(ms < 1.5 * base)}")


SECTIONS = ("overhead", "export", "many", "import")


async def main_async(args: argparse.Namespace) -> None:
    """Run the chosen sections."""
    peers = [p for p in PEERS if not args.no_peers]
    if "overhead" in args.sections:
        await bench_overhead(peers, args.rounds)
    if "export" in args.sections:
        await bench_export(peers, max(3, args.rounds // 4))
    if "many" in args.sections:
        await bench_many(peers, max(3, args.rounds // 4))


def main() -> None:
    """Parse options, print what this runs on, run the sections."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("sections", nargs="*", default=list(SECTIONS), help="any of: " + ", ".join(SECTIONS))
    parser.add_argument("--rounds", type=int, default=21, help="interleaved rounds per measurement (default 21)")
    parser.add_argument("--no-peers", action="store_true", help="skip the peers even where installed")
    args = parser.parse_args()
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    print(describe_machine())
    versions = ", ".join(
        f"{dist} {version_of(dist)}"
        for dist in ("toolhall", "pydantic", "pydantic-ai-slim", "langchain-core", "openai-agents", "mcp")
    )
    print(versions)
    asyncio.run(main_async(args))
    if "import" in args.sections:
        bench_import([] if args.no_peers else PEERS, runs=max(5, args.rounds // 2))


if __name__ == "__main__":
    main()
