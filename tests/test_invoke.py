"""Invoking tools: validation, timeouts, cancellation, output rendering, and never raising."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from toolhall import Image, Text, Tool, Toolbox, ToolCall, ToolCallError, ToolContext, tool
from toolhall._invoke import stray_threads

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool
async def aadd(a: int, b: int) -> int:
    """Add, async."""
    return a + b


async def test_json_string_dict_and_none_arguments() -> None:
    """Arguments arrive as JSON text, a dict, or None (lax: "3" is accepted for an int)."""
    tb = Toolbox([add, aadd, tool(name="noargs")(lambda: "ok")])
    assert (await tb.call("add", '{"a": 1, "b": 2}')).data == 3
    assert (await tb.call("aadd", {"a": "3", "b": 4})).output == "7"
    assert (await tb.call("noargs", None)).output == "ok"
    assert (await tb.call("noargs", "")).output == "ok"
    assert (await tb.call(ToolCall("add", '{"a": 1, "b": 1}', id="c1"))).call_id == "c1"


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ('{"a": 1', "invalid arguments"),
        ("[1, 2]", "object"),
        ('"text"', "object"),
        ('{"a": "x", "b": 1}', "a: Input should be a valid integer"),
        ('{"a": 1}', "b: Field required"),
        ('{"a": 1, "b": 2, "c": 3}', "c: Extra inputs are not permitted"),
    ],
)
async def test_bad_arguments_are_invalid_input(arguments: str, needle: str) -> None:
    """Malformed JSON, non-objects, wrong types, missing and extra keys are `invalid_input` naming the field."""
    result = await Toolbox([add]).call("add", arguments)
    assert not result.ok and result.error is not None
    assert result.error.code == "invalid_input"
    assert needle in result.error.message


async def test_non_mapping_arguments_are_invalid_input() -> None:
    """Arguments that are neither text, dict nor None are refused."""
    result = await Toolbox([add]).call("add", [1, 2])  # type: ignore[arg-type]
    assert result.error is not None and result.error.code == "invalid_input"


async def test_unknown_tool_is_not_found_with_suggestion() -> None:
    """An unknown name is `not_found` and suggests close names."""
    result = await Toolbox([add]).call("ad", {})
    assert result.error is not None and result.error.code == "not_found"
    assert "did you mean add" in result.error.message


async def test_handler_exception_is_execution_error() -> None:
    """An exception in a handler becomes `execution_error` and keeps the exception."""

    @tool
    def boom() -> None:
        raise ValueError("kaput")

    result = await Toolbox([boom]).call("boom")
    assert result.error is not None and result.error.code == "execution_error"
    assert result.error.message == "ValueError: kaput"
    assert isinstance(result.exception, ValueError)


async def test_tool_call_error_sets_code_details_and_data() -> None:
    """ToolCallError chooses the code, details and partial data."""

    @tool
    def picky() -> None:
        raise ToolCallError("no match", code="execution_error", details={"reason": "no_match"}, data={"x": 1})

    result = await Toolbox([picky]).call("picky")
    assert result.error is not None
    assert (result.error.code, result.error.details, result.data) == (
        "execution_error",
        {"reason": "no_match"},
        {"x": 1},
    )


async def test_async_timeout_cancels_for_real() -> None:
    """An async tool past its timeout is cancelled: its cleanup runs and the result is `timeout`."""
    cleaned = asyncio.Event()

    @tool(timeout=0.05)
    async def hang() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.set()

    started = time.perf_counter()
    result = await Toolbox([hang]).call("hang")
    assert result.error is not None and result.error.code == "timeout"
    assert time.perf_counter() - started < 1
    assert cleaned.is_set()


async def test_sync_timeout_returns_on_time_and_signals_the_thread() -> None:
    """A sync tool past its timeout returns `timeout` on time; its thread sees ctx.cancel and is accounted for."""
    finished = threading.Event()

    @tool(timeout=0.1)
    def stubborn(ctx: ToolContext) -> str:
        ctx.cancel.wait(5)
        finished.set()
        return "late"

    started = time.perf_counter()
    result = await Toolbox([stubborn]).call("stubborn")
    assert result.error is not None and result.error.code == "timeout"
    assert time.perf_counter() - started < 1
    assert finished.wait(2)
    for _ in range(100):
        if stray_threads() == 0:
            break
        await asyncio.sleep(0.01)
    assert stray_threads() == 0


async def test_caller_cancellation_propagates_after_cancelling_the_tool() -> None:
    """Cancelling the awaiting task cancels the tool and re-raises CancelledError."""
    cancelled = asyncio.Event()

    @tool
    async def hang() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = asyncio.create_task(Toolbox([hang]).call("hang"))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


async def test_outer_timeout_still_works() -> None:
    """An outer asyncio.timeout around a call fires as usual."""

    @tool
    async def hang() -> None:
        await asyncio.sleep(30)

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await Toolbox([hang]).call("hang")


async def test_handler_raising_cancelled_itself_is_a_result() -> None:
    """A handler that raises CancelledError on its own (nobody cancelled the caller) gives `cancelled`."""

    @tool
    async def quits() -> None:
        raise asyncio.CancelledError

    result = await Toolbox([quits]).call("quits")
    assert result.error is not None and result.error.code == "cancelled"


async def test_output_rendering() -> None:
    """Strings pass through; models and dicts become JSON text with JSON-safe data; images become content."""

    class Out(BaseModel):
        n: int

    tb = Toolbox(
        [
            tool(name="s")(lambda: "plain"),
            tool(name="m")(lambda: Out(n=2)),
            tool(name="b")(lambda: b"\x00\xff"),
            tool(name="img")(lambda: [Image(data=b"png", mime_type="image/png"), "caption"]),
            tool(name="weird")(lambda: {"obj": object()}),
        ]
    )
    s, m, b, img, weird = [await tb.call(name) for name in ("s", "m", "b", "img", "weird")]
    assert (s.output, s.data) == ("plain", "plain")
    assert (m.output, m.data) == ('{"n":2}', {"n": 2})
    assert b.data == "AP8="
    assert isinstance(img.content[0], Image) and img.content[1] == Text(text="caption")
    assert weird.ok and "object object" in weird.output


async def test_circular_value_still_renders() -> None:
    """A value JSON cannot hold (a cycle) still gives a result."""
    loop: list[Any] = []
    loop.append(loop)
    result = await Toolbox([tool(name="cyc")(lambda: loop)]).call("cyc")
    assert result.ok and "[...]" in result.output


async def test_from_schema_validates_and_passes_kwargs() -> None:
    """from_schema tools validate with JSON Schema and get keyword arguments."""
    t = Tool.from_schema(
        "greet",
        "Greet.",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        lambda name: f"hi {name}",
    )
    tb = Toolbox([t])
    assert (await tb.call("greet", {"name": "Ada"})).output == "hi Ada"
    bad = await tb.call("greet", {"name": 3})
    assert bad.error is not None and bad.error.code == "invalid_input"


async def test_from_model_handler_gets_model() -> None:
    """A from_model handler receives the validated model."""

    class Q(BaseModel):
        text: str

    tb = Toolbox([Tool.from_model(Q, lambda q: q.text.upper(), name="up")])
    assert (await tb.call("up", {"text": "a"})).output == "A"


async def test_call_many_keeps_order_and_isolates_failures() -> None:
    """call_many returns results in order; one failure does not affect the others."""

    @tool
    async def maybe(n: int) -> int:
        if n == 2:
            raise RuntimeError("two")
        await asyncio.sleep(0.01 * (5 - n))
        return n

    results = await Toolbox([maybe]).call_many([("maybe", {"n": i}) for i in range(5)], concurrency=5)
    assert [r.data for r in results] == [0, 1, None, 3, 4]
    assert results[2].error is not None and results[2].error.code == "execution_error"


async def test_call_many_sync_tools_get_threads_up_to_concurrency() -> None:
    """Sync tools run concurrently up to `concurrency` threads (not the default 40-thread limiter)."""

    @tool
    def nap() -> None:
        time.sleep(0.1)

    started = time.perf_counter()
    await Toolbox([nap]).call_many(["nap"] * 60, concurrency=60)
    assert time.perf_counter() - started < 2


def test_call_sync_works_with_and_without_a_loop() -> None:
    """call_sync runs from plain code, and from inside a running loop (via a helper thread)."""
    tb = Toolbox([add])
    assert tb.call_sync("add", {"a": 1, "b": 2}).data == 3

    async def inside() -> Any:
        return tb.call_sync("add", {"a": 2, "b": 2}).data

    assert asyncio.run(inside()) == 4


async def test_inline_sync_tool_runs_on_the_loop_thread() -> None:
    """`inline=True` runs a short sync tool without a thread hop."""

    @tool(inline=True)
    def where() -> str:
        return threading.current_thread().name

    assert (await Toolbox([where]).call("where")).output == threading.current_thread().name


async def test_nested_call_through_context() -> None:
    """A tool can call another through its context."""

    @tool
    async def outer(ctx: ToolContext) -> int:
        inner = await ctx.call("add", {"a": 20, "b": 22})
        return int(inner.output)

    assert (await Toolbox([outer, add]).call("outer")).data == 42


class _Weird:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


_BEHAVIOURS = {
    "ok": lambda: {"fine": True},
    "raise": lambda: 1 / 0,
    "exit": lambda: (_ for _ in ()).throw(SystemExit(3)),
    "weird": lambda: _Weird(),
    "huge": lambda: "x" * 1_000_000,
    "bytes": lambda: b"\xff\xfe",
}


def _behaving(kind: str) -> Any:
    def handler(**kwargs: Any) -> Any:
        return _BEHAVIOURS[kind]()

    return handler


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.one_of(st.sampled_from(list(_BEHAVIOURS) + ["hang"]), st.text(max_size=20)),
    arguments=st.one_of(
        st.none(),
        st.text(max_size=40),
        st.dictionaries(st.text(max_size=8), st.recursive(st.none() | st.integers() | st.text(), st.lists)),
        st.integers(),
        st.lists(st.integers()),
    ),
)
def test_nothing_ever_raises(name: str, arguments: Any) -> None:
    """Whatever the name, the arguments or the handler, a call returns a result."""
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    tools = [Tool.from_schema(kind, "", schema, _behaving(kind)) for kind in _BEHAVIOURS]

    async def hang(**kwargs: Any) -> None:
        await asyncio.sleep(10)

    tools.append(Tool.from_schema("hang", "", schema, hang, timeout=0.01))
    result = Toolbox(tools).call_sync(name, arguments)
    assert result.ok in (True, False)
    assert result.ok == (result.error is None)
    assert isinstance(result.output, str)


def test_the_fast_success_result_equals_the_constructors() -> None:
    """The hot path's ToolResult is field for field what ToolResult(ok=True, ...) builds."""
    from datetime import UTC, datetime

    from toolhall import ToolResult
    from toolhall._result import ok_result

    now = datetime.now(UTC)
    parts = (Text(text="3"),)
    fast = ok_result("3", 3, parts, 1.5, "call_1", "add", now, now)
    slow = ToolResult(ok=True, output="3", data=3, content=parts, duration_ms=1.5, call_id="call_1",
                      tool_name="add", started_at=now, ended_at=now)  # fmt: skip
    assert fast == slow and fast.error is None and fast.exception is None and fast.truncated is False
