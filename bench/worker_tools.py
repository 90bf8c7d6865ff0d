"""Worker toolboxes: per-call cost of memory, artifacts, decisions and chain tools, and of resolution.

Run: `.venv/bin/python bench/worker_tools.py`. Prints one table (median and p95 per call, in ms).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from toolhall import Toolbox, ToolContext, WorkerSpec, resolve_toolset, tool  # noqa: E402
from toolhall.tools import artifacts, chains, decisions, memory  # noqa: E402

FRONTMATTER = (
    "---\n# comment\ntitle: \"Plan {n}\"  # quoted\nstatus: draft\ntags: [a, b]\nowners:\n  - alice\n"
    "date: 2026-11-22\n---\n# Body {n}\n\n" + "text line\n" * 50
)


def measure(fn: Callable[[int], Any], n: int) -> tuple[float, float]:
    """Median and p95 milliseconds of `fn(i)` over n runs."""
    times = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def check(result: Any) -> None:
    """Fail loudly: a benchmark of failing calls measures nothing."""
    if not result.ok:
        raise SystemExit(f"call failed: {result.output}")


def main() -> None:
    """Run each case and print the table."""
    tmp = Path(tempfile.mkdtemp())
    ctx = ToolContext(worker="bench", session_id="s")
    mem = memory.toolbox(root=tmp / "mem", project="p", worker="bench")
    art = artifacts.toolbox(project=tmp)
    dec = decisions.toolbox(root=tmp / ".toolhall", meeting="bench")
    for n in range(200):
        (tmp / ".lore" / "docs").mkdir(parents=True, exist_ok=True)
        (tmp / ".lore" / "docs" / f"p{n:03}.md").write_text(FRONTMATTER.replace("{n}", str(n)))
    for n in range(50):
        chains.new_task(tmp, "CH", f"T-{n:02}", f"Task {n}")
    ch = chains.toolbox(project=tmp)

    @tool
    def domain_tool() -> str:
        """A domain tool."""
        return "x"

    cases: list[tuple[str, Callable[[int], Any], int]] = [
        ("memory write_memory", lambda i: check(mem.call_sync(
            "write_memory", {"scope": "worker", "path": f"n/{i % 20}.md", "content": "x" * 200}, context=ctx)), 300),
        ("memory read_memory (file)", lambda i: check(mem.call_sync(
            "read_memory", {"scope": "worker", "path": f"n/{i % 20}.md"}, context=ctx)), 300),
        ("memory edit_memory", lambda i: check(mem.call_sync(
            "edit_memory", {"scope": "worker", "path": "n/1.md", "old_str": "x" * 200, "new_str": "x" * 200},
            context=ctx)), 200),
        ("artifacts read_artifact", lambda i: check(art.call_sync(
            "read_artifact", {"path": f"docs/p{i % 200:03}.md"})), 200),
        ("artifacts write_artifact (keep fm)", lambda i: check(art.call_sync(
            "write_artifact", {"path": f"docs/p{i % 200:03}.md", "content": "# New\n"})), 200),
        ("artifacts update_artifact_meta", lambda i: check(art.call_sync(
            "update_artifact_meta", {"path": f"docs/p{i % 200:03}.md", "changes": {"status": f"s{i}"}})), 200),
        ("artifacts list_artifacts (200 files)", lambda i: check(art.call_sync("list_artifacts", {})), 10),
        ("decisions record_decision", lambda i: check(dec.call_sync(
            "record_decision", {"question": f"q{i}", "decision": "d", "reasoning": "r" * 500}, context=ctx)), 500),
        ("chains chain:status (50 tasks)", lambda i: check(ch.call_sync("chain:status", {"chain_id": "CH"})), 20),
        ("chains task:start (50 tasks)", lambda i: check(ch.call_sync(
            "task:start", {"chain_id": "CH", "task_id": f"T-{i:02}"}, context=ctx)), 50),
        ("resolve_toolset (base + 1 domain)", lambda i: resolve_toolset(
            WorkerSpec("w", domain_toolboxes=["d"]), {"d": Toolbox([domain_tool])}, project=tmp,
            memory_root=tmp / "mem", entry_points=False), 100),
    ]
    rows = [(name, *measure(fn, n), n) for name, fn, n in cases]
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'median ms':>9}  {'p95 ms':>8}  {'runs':>5}")
    for name, median, p95, n in rows:
        print(f"{name:<{width}}  {median:>9.3f}  {p95:>8.3f}  {n:>5}")


if __name__ == "__main__":
    main()
