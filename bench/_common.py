"""Helpers shared by the bench scripts: interleaved timing, an event-loop stall ticker, import timing, tables.

Not a benchmark itself (`make bench` runs it too; it prints nothing).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from inspect import iscoroutinefunction
from types import ModuleType, TracebackType
from typing import Any

__all__ = [
    "PEERS",
    "AsyncCase",
    "Dispatch",
    "Peer",
    "StallTicker",
    "describe_machine",
    "import_ms",
    "interleaved_us",
    "optional",
    "print_table",
    "version_of",
]

AsyncCase = Callable[[], Awaitable[Any]]
"""One dispatch of the thing measured, as a zero-argument coroutine function."""


def optional(module: str) -> ModuleType | None:
    """The module, or None when it (or one of its dependencies) is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def version_of(distribution: str) -> str:
    """The installed version of a distribution, or "not installed"."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def describe_machine() -> str:
    """One line saying what the numbers were measured on (load matters on a shared 2-core box)."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"Python {sys.version.split()[0]} on {os.cpu_count()} CPUs, load average {load}"


_YIELD_EVERY = 64


Clock = Callable[[], float]


async def _batch_us(case: AsyncCase, calls: int, clock: Clock) -> float:
    """µs per call over `calls` calls.

    The loop gets a turn every 64 calls, as it does between real tool calls: otherwise every call's cancelled
    `asyncio.timeout` handle stays on the loop's timer heap, and the growing heap (and the garbage collector
    walking it) would be what gets measured. The turn costs every case the same ~0.1 µs per call.
    """
    start = clock()
    for i in range(calls):
        await case()
        if not i % _YIELD_EVERY:
            await asyncio.sleep(0)
    return (clock() - start) / calls * 1e6


async def _calibrate(case: AsyncCase, budget_s: float) -> int:
    """How many calls fill about `budget_s` seconds (at least 10)."""
    await case()  # the first call may build lazy state (validators); never time it
    calls = 10
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            await case()
        elapsed = time.perf_counter() - start
        if elapsed >= budget_s / 4 or calls >= 1_000_000:
            return max(10, int(calls * budget_s / max(elapsed, 1e-9)))
        calls *= 4


async def interleaved_us(
    cases: dict[str, AsyncCase], *, rounds: int, budget_s: float = 0.02, clock: Clock = time.perf_counter
) -> dict[str, float]:
    """Median µs per call of each case, timed in interleaved rounds so machine noise hits every case alike.

    `clock=time.process_time` counts this process's CPU time only, which other processes' load on a shared
    machine cannot inflate; it suits work on the event loop, not waits for threads.
    """
    sizes = {name: await _calibrate(case, budget_s) for name, case in cases.items()}
    samples: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for r in range(rounds):
        # Rotate the starting case so no case always runs right after the same neighbour.
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(await _batch_us(cases[name], sizes[name], clock))
    return {name: statistics.median(values) for name, values in samples.items()}


class StallTicker:
    """Measures the event loop's worst stall: a task that asks to wake every `interval` and records lateness."""

    def __init__(self, interval: float = 0.001) -> None:
        self.interval = interval
        self.max_stall_ms = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(self.interval)
            late = (time.perf_counter() - start - self.interval) * 1000
            self.max_stall_ms = max(self.max_stall_ms, late)

    async def __aenter__(self) -> StallTicker:
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0)  # let the ticker start before the work does
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass


_IMPORT_PROBE = "import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"


def import_ms(statements: Sequence[str], *, runs: int = 7, python: str = sys.executable) -> dict[str, float | None]:
    """Median ms each import statement takes in fresh interpreters (interleaved runs; None when it fails).

    Interpreter start-up is left out: each child times only its own import statement.
    """
    samples: dict[str, list[float]] = {stmt: [] for stmt in statements}
    failed: set[str] = set()
    for _ in range(runs):
        for stmt in statements:
            if stmt in failed:
                continue
            proc = subprocess.run(
                [python, "-c", _IMPORT_PROBE.format(stmt=stmt)], capture_output=True, text=True, check=False
            )
            if proc.returncode != 0:
                failed.add(stmt)
                continue
            samples[stmt].append(float(proc.stdout.strip().splitlines()[-1]) * 1000)
    return {stmt: statistics.median(v) if v and stmt not in failed else None for stmt, v in samples.items()}


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print an aligned plain-text table (first column left-aligned, the rest right-aligned)."""
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        first, *rest = cells
        return "  ".join(
            [str(first).ljust(widths[0]), *(str(c).rjust(w) for c, w in zip(rest, widths[1:], strict=True))]
        )

    print(f"\n{title}")
    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


# -- peers ------------------------------------------------------------------------------------------
# Each peer is used the way its own runner dispatches a model's tool call, from the name and the JSON text.
# Peers are imported only here, lazily, and only exist in bench/.venv-peers (see bench/README.md).

Dispatch = Callable[[str, str], Awaitable[Any]]
"""Dispatch one call: (tool name, arguments as JSON text) -> the peer's own result."""
Funcs = Sequence[Callable[..., Any]]
Exported = list[dict[str, Any]]


def _openai_entry(name: str, description: str | None, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description or "", "parameters": parameters}}


def _peer(module: str) -> Any:
    """A peer's module, untyped: the peers are not installed where mypy runs."""
    return importlib.import_module(module)


def _pydantic_ai_context() -> Any:
    test_model = _peer("pydantic_ai.models.test").TestModel()
    return _peer("pydantic_ai").RunContext(deps=None, model=test_model, usage=_peer("pydantic_ai.usage").RunUsage())


async def _pydantic_ai_make(fns: Funcs) -> Dispatch:
    toolset = _peer("pydantic_ai.toolsets").FunctionToolset(list(fns))
    manager = await _peer("pydantic_ai.tool_manager").ToolManager(toolset).for_run_step(_pydantic_ai_context())
    tool_call_part = _peer("pydantic_ai.messages").ToolCallPart

    async def dispatch(name: str, args: str) -> Any:
        return await manager.handle_call(tool_call_part(name, args, tool_call_id="call_1"))

    return dispatch


async def _pydantic_ai_export(fns: Funcs) -> Exported:
    tools = await _peer("pydantic_ai.toolsets").FunctionToolset(list(fns)).get_tools(_pydantic_ai_context())
    defs = [t.tool_def for t in tools.values()]
    return [_openai_entry(d.name, d.description, d.parameters_json_schema) for d in defs]


def _langchain_tools(fns: Funcs) -> dict[str, Any]:
    structured_tool = _peer("langchain_core.tools").StructuredTool
    built = [
        structured_tool.from_function(coroutine=fn) if iscoroutinefunction(fn) else structured_tool.from_function(fn)
        for fn in fns
    ]
    return {t.name: t for t in built}


async def _langchain_make(fns: Funcs) -> Dispatch:
    tools = _langchain_tools(fns)

    async def dispatch(name: str, args: str) -> Any:
        return await tools[name].ainvoke(json.loads(args))

    return dispatch


async def _langchain_export(fns: Funcs) -> Exported:
    convert = _peer("langchain_core.utils.function_calling").convert_to_openai_tool
    return [convert(t) for t in _langchain_tools(fns).values()]


async def _agents_make(fns: Funcs) -> Dispatch:
    tools = {t.name: t for t in (_peer("agents").function_tool(fn) for fn in fns)}
    tool_context = _peer("agents.tool_context").ToolContext

    async def dispatch(name: str, args: str) -> Any:
        ctx = tool_context(context=None, tool_name=name, tool_call_id="call_1", tool_arguments=args)
        return await tools[name].on_invoke_tool(ctx, args)

    return dispatch


async def _agents_export(fns: Funcs) -> Exported:
    function_tool = _peer("agents").function_tool
    return [_openai_entry(t.name, t.description, t.params_json_schema) for t in (function_tool(fn) for fn in fns)]


def _mcp_server(fns: Funcs) -> Any:
    server = _peer("mcp.server.mcpserver").MCPServer("bench")
    for fn in fns:
        server.add_tool(fn)
    return server


async def _mcp_make(fns: Funcs) -> Dispatch:
    server = _mcp_server(fns)

    async def dispatch(name: str, args: str) -> Any:
        # The JSON-RPC layer hands call_tool a parsed dict; parsing is part of the dispatch.
        return await server.call_tool(name, json.loads(args))

    return dispatch


async def _mcp_export(fns: Funcs) -> Exported:
    tools = await _mcp_server(fns).list_tools()
    return [_openai_entry(t.name, t.description, t.input_schema) for t in tools]


@dataclass(frozen=True)
class Peer:
    """A peer library, how it dispatches a call and how it builds and exports tools."""

    name: str
    module: str
    call_api: str
    export_api: str
    make: Callable[[Funcs], Awaitable[Dispatch]]
    export_openai: Callable[[Funcs], Awaitable[Exported]]

    @property
    def call_label(self) -> str:
        """The row label for dispatch measurements."""
        return f"{self.name} {self.call_api}"

    @property
    def export_label(self) -> str:
        """The row label for export measurements."""
        return f"{self.name} {self.export_api}"

    @property
    def import_statement(self) -> str:
        """What a user imports to use this peer's tools."""
        return f"import {self.module}"

    def available(self) -> bool:
        """Whether the peer is installed in this interpreter."""
        return optional(self.module) is not None

    async def dispatcher(self, fns: Funcs) -> Dispatch | None:
        """A dispatcher over these functions as tools, or None when the peer is not installed."""
        return await self.make(fns) if self.available() else None


PEERS = (
    Peer("OpenAI Agents", "agents", "FunctionTool.on_invoke_tool", "function_tool x200", _agents_make, _agents_export),
    Peer(
        "pydantic-ai",
        "pydantic_ai",
        "ToolManager.handle_call",
        "FunctionToolset.get_tools",
        _pydantic_ai_make,
        _pydantic_ai_export,
    ),
    Peer(
        "MCP SDK", "mcp.server.mcpserver", "MCPServer.call_tool", "add_tool x200 + list_tools", _mcp_make, _mcp_export
    ),
    Peer(
        "langchain-core",
        "langchain_core.tools",
        "StructuredTool.ainvoke",
        "StructuredTool x200 + convert_to_openai_tool",
        _langchain_make,
        _langchain_export,
    ),
)
"""The peers, in the order the issue's orientation numbers rank them."""
