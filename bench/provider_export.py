"""Provider export and parse cost over the shared corpora: µs per tool, cold (no Toolbox cache).

Run: `.venv/bin/python bench/provider_export.py` (needs /work/shared/corpora or TOOLHALL_CORPORA).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.providers import _corpus  # noqa: E402

from toolhall import Tool, Toolbox  # noqa: E402
from toolhall.providers import FORMATS, export  # noqa: E402
from toolhall.providers import openai as oai  # noqa: E402


def _echo(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def _best(fn: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    """Print one table: load, export per format (strict and not), parse."""
    defs = _corpus.distinct()
    start = time.perf_counter()
    tools = [Tool.from_schema(d.name, d.description, d.schema, _echo, output_schema=d.output) for d in defs]
    load = time.perf_counter() - start
    n = len(tools)
    print(f"{n} distinct corpus tools (Python {sys.version.split()[0]})")
    print(f"{'step':<34}{'total ms':>10}{'µs/tool':>10}")
    print(f"{'from_schema (normalise)':<34}{load * 1e3:>10.1f}{load / n * 1e6:>10.1f}")
    for fmt in FORMATS:
        for strict in (False, True):
            t = _best(lambda fmt=fmt, strict=strict: [export([x], fmt, strict=strict) for x in tools])
            print(f"{'export ' + fmt + (' strict' if strict else ''):<34}{t * 1e3:>10.1f}{t / n * 1e6:>10.1f}")
    by_name = list({t.name: t for t in tools}.values())
    box = Toolbox(by_name)
    exported = [e["function"]["name"] for e in box.schemas("openai")]
    response = {"choices": [{"message": {"tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        for i, name in enumerate(exported)]}}]}
    t = _best(lambda: oai.parse_tool_calls(response, toolbox=box))
    print(f"{'openai parse_tool_calls (toolbox)':<34}{t * 1e3:>10.1f}{t / len(exported) * 1e6:>10.1f}")
    warm = statistics.median(_best(lambda: box.schemas("openai"), 1) for _ in range(20))
    print(f"{'Toolbox.schemas openai, warm':<34}{warm * 1e3:>10.2f}{warm / len(by_name) * 1e6:>10.2f}")


if __name__ == "__main__":
    main()
