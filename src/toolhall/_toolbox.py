"""`Toolbox`: an ordered registry of tools that exports their schemas and dispatches calls."""

from __future__ import annotations

import asyncio
import concurrent.futures
import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import anyio

from ._context import ToolContext
from ._invoke import ValidatedCall, error_result, execute, new_call_id, validate
from ._result import ToolCall, ToolResult
from ._tool import Tool

__all__ = ["CallLike", "Toolbox", "as_call", "run_sync"]

CallLike = ToolCall | tuple[str, Any] | Mapping[str, Any] | str
"""What `call_many` accepts: a `ToolCall`, a `(name, arguments)` pair, a `{"name", "arguments"}` dict."""

_ALIAS_FORMATS = ("openai", "gemini", "mcp")


def as_call(item: CallLike, arguments: Any = None) -> ToolCall:
    """Any accepted spelling of a call as a `ToolCall`."""
    if isinstance(item, ToolCall):
        return item
    if isinstance(item, str):
        return ToolCall(item, arguments)
    if isinstance(item, tuple):
        name, args = item
        return ToolCall(name, args)
    if isinstance(item, Mapping):
        return ToolCall(item["name"], item.get("arguments"), item.get("id"))
    raise TypeError(f"a call must be a ToolCall, a (name, arguments) pair or a dict, got {type(item).__name__}")


def run_sync(coro_fn: Callable[[], Any]) -> Any:
    """Run a coroutine to completion from sync code, even when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_fn())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(coro_fn())).result()


class Toolbox:
    """An ordered set of tools, by name: register, combine, filter, export and call them.

    Example:
        ```python
        tb = Toolbox([add, greet], name="basics")
        tb.schemas("anthropic")
        result = await tb.call("add", '{"a": 1, "b": 2}')  # result.output == "3"
        ```
    """

    __slots__ = ("_aliases", "_exports", "_tools", "default_timeout", "name")

    def __init__(
        self,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        name: str | None = None,
        *,
        default_timeout: float | None = None,
    ) -> None:
        self.name = name
        self.default_timeout = default_timeout
        self._tools: dict[str, Tool] = {}
        self._aliases: dict[str, str] | None = None
        self._exports: dict[tuple[str, bool], list[dict[str, Any]]] = {}
        self.register(*tools)

    # -- registry ---------------------------------------------------------------------------------
    def register(self, *tools: Tool | Callable[..., Any]) -> None:
        """Add tools (or plain functions, wrapped with `Tool.from_function`); a tool with the same name is replaced."""
        for item in tools:
            t = item if isinstance(item, Tool) else Tool.from_function(item)
            self._tools.pop(t.name, None)
            self._tools[t.name] = t
        self._changed()

    def unregister(self, name: str) -> bool:
        """Remove a tool by name; returns whether it was there."""
        found = self._tools.pop(name, None) is not None
        if found:
            self._changed()
        return found

    def _changed(self) -> None:
        self._aliases = None
        self._exports.clear()

    def get(self, name: str) -> Tool | None:
        """The tool with this name, or with this exported (provider-legal) name; None when absent."""
        found = self._tools.get(name)
        if found is not None:
            return found
        real = self._alias_map().get(name)
        return self._tools.get(real) if real is not None else None

    def _alias_map(self) -> dict[str, str]:
        if self._aliases is None:
            from .providers import exported_names

            aliases: dict[str, str] = {}
            tools = list(self._tools.values())
            for fmt in _ALIAS_FORMATS:
                for real, exported in exported_names(tools, fmt).items():  # type: ignore[arg-type]
                    if exported != real and exported not in self._tools:
                        aliases.setdefault(exported, real)
            self._aliases = aliases
        return self._aliases

    def __getitem__(self, name: str) -> Tool:
        found = self.get(name)
        if found is None:
            raise KeyError(f"no tool named {name!r} in {self._label()}; tools: {', '.join(self._tools) or 'none'}")
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __repr__(self) -> str:
        return f"Toolbox(name={self.name!r}, tools={list(self._tools)!r})"

    def _label(self) -> str:
        return f"toolbox {self.name!r}" if self.name else "the toolbox"

    def names(self) -> list[str]:
        """Tool names, in registration order."""
        return list(self._tools)

    # -- derived toolboxes ------------------------------------------------------------------------
    def _derive(self, tools: Iterable[Tool], name: str | None = None) -> Toolbox:
        return Toolbox(tools, name=name if name is not None else self.name, default_timeout=self.default_timeout)

    def merge(self, other: Toolbox) -> Toolbox:
        """A new toolbox with both sets of tools; on a shared name the right side wins."""
        merged = self._derive(self._tools.values())
        merged.register(*other._tools.values())
        return merged

    def __or__(self, other: Toolbox) -> Toolbox:
        if not isinstance(other, Toolbox):
            return NotImplemented
        return self.merge(other)

    def filter(
        self,
        role: str | None = None,
        tags: Iterable[str] | None = None,
        predicate: Callable[[Tool], bool] | None = None,
    ) -> Toolbox:
        """A new toolbox with the tools visible to `role`, carrying any of `tags`, and passing `predicate`."""
        wanted = frozenset(tags) if tags is not None else None
        kept = [
            t
            for t in self._tools.values()
            if (role is None or not t.roles or role in t.roles)
            and (wanted is None or t.tags & wanted)
            and (predicate is None or predicate(t))
        ]
        return self._derive(kept)

    def for_role(self, role: str) -> Toolbox:
        """A new toolbox with the tools `role` may use (tools without roles are for everyone)."""
        return self.filter(role=role)

    def prefixed(self, prefix: str) -> Toolbox:
        """A new toolbox whose tool names start with `prefix` (`prefixed("fs_")`: `read_file` → `fs_read_file`)."""
        return self._derive(t.replace(name=prefix + t.name) for t in self._tools.values())

    # -- export -----------------------------------------------------------------------------------
    def schemas(self, format: str = "openai", *, strict: bool = False) -> list[dict[str, Any]]:  # noqa: A002
        """Every tool's definition in a provider's format, in registration order.

        Formats: `openai` (chat completions), `openai-responses`, `anthropic`, `gemini`, `mcp`, `json`.
        Each call returns fresh top-level dicts (nested schema dicts may be shared with the cache).
        """
        key = (format, strict)
        cached = self._exports.get(key)
        if cached is None:
            from .providers import export

            cached = export(list(self._tools.values()), format, strict=strict)  # type: ignore[arg-type]
            self._exports[key] = cached
        return [_fresh(entry) for entry in cached]

    # -- calls ------------------------------------------------------------------------------------
    def lookup(self, name: str) -> Tool | ToolResult:
        """The tool a call names, or a `not_found` result that suggests close names."""
        found = self._tools.get(name)
        if found is None and isinstance(name, str):
            try:
                found = self.get(name)
            except Exception:  # noqa: BLE001 - a lookup must end in a result, whatever the alias tables do
                found = None
        if found is not None:
            return found
        close = difflib.get_close_matches(str(name), self._tools, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; available: {', '.join(self._tools) or 'none'}"
        return error_result("not_found", f"no tool named {name!r}{hint}", tool_name=str(name), call_id=None)

    async def call(
        self,
        name_or_call: str | ToolCall,
        arguments: str | dict[str, Any] | None = None,
        *,
        context: ToolContext | None = None,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> ToolResult:
        """Validate and run one call; never raises (only the caller's own cancellation propagates)."""
        if isinstance(name_or_call, ToolCall):
            name, arguments, call_id = name_or_call.name, name_or_call.arguments, name_or_call.id
        else:
            name, call_id = name_or_call, None
        found: Tool | ToolResult | None = self._tools.get(name) if type(name) is str else None  # the hot path
        if found is None:
            found = self.lookup(name)
        if isinstance(found, ToolResult):
            return found
        validated = validate(found, arguments, call_id or new_call_id())
        if not isinstance(validated, ValidatedCall):
            return validated
        if context is None and found.context_param is not None:
            context = ToolContext(call_id=validated.call_id, caller=self._nested)
        return await execute(validated, context, timeout=found.timeout or self.default_timeout, limiter=limiter)

    async def _nested(self, name: str | ToolCall, arguments: Any = None, *, parent_id: str | None = None) -> ToolResult:
        return await self.call(name, arguments)

    def call_sync(
        self,
        name_or_call: str | ToolCall,
        arguments: str | dict[str, Any] | None = None,
        *,
        context: ToolContext | None = None,
    ) -> ToolResult:
        """`call` from synchronous code."""
        result: ToolResult = run_sync(lambda: self.call(name_or_call, arguments, context=context))
        return result

    async def call_many(self, calls: Sequence[CallLike], concurrency: int = 8) -> list[ToolResult]:
        """Run calls concurrently (at most `concurrency` at once; sync tools get as many threads), in order."""
        return await gather_calls(self.call, calls, concurrency)


async def gather_calls(call: Callable[..., Any], calls: Sequence[CallLike], concurrency: int) -> list[ToolResult]:
    """Run `call` over `calls` with bounded concurrency, keeping order (shared by Toolbox and Session)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    limiter = anyio.CapacityLimiter(concurrency)
    results: list[ToolResult | None] = [None] * len(calls)
    pending: list[tuple[int, ToolCall]] = []
    for index, item in enumerate(calls):
        try:
            pending.append((index, as_call(item)))
        except (TypeError, KeyError, ValueError) as exc:
            results[index] = error_result("invalid_input", f"not a tool call: {exc}", tool_name="", call_id=None)
    if len(pending) <= concurrency:
        # Everything may run at once: no gate and no wrapper coroutine per call (a tenth of a call's cost).
        done = await asyncio.gather(*(call(tool_call, limiter=limiter) for _, tool_call in pending))
        for (index, _), result in zip(pending, done, strict=True):
            results[index] = result
    else:
        # `concurrency` workers take the calls in order: a finished call's worker starts the next one at
        # once, with no semaphore hand-off through the event loop.
        queue = iter(pending)

        async def worker() -> None:
            for index, tool_call in queue:
                results[index] = await call(tool_call, limiter=limiter)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return [result for result in results if result is not None]  # every slot is filled by now


def _fresh(entry: dict[str, Any]) -> dict[str, Any]:
    copy = dict(entry)
    inner = copy.get("function")
    if isinstance(inner, dict):
        copy["function"] = dict(inner)
    return copy
