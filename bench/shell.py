"""Shell tool benchmark: per-command overhead, concurrent throughput, and deadline-to-tree-gone latency.

Run: `.venv/bin/python bench/shell.py` (prints a table; no assertion, numbers vary with the machine).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import anyio

from toolhall import Toolbox
from toolhall.tools import shell
from toolhall.tools._isolation import describe_isolation

warnings.filterwarnings("ignore", category=DeprecationWarning)
NO_LIMITS: dict[str, int | None] = {key: None for key in shell.DEFAULT_RLIMITS}
ROUNDS = 300


def true_ms() -> float:
    start = time.perf_counter()
    subprocess.run(["true"], check=True)
    return (time.perf_counter() - start) * 1000


async def per_call_ms(tb: Toolbox, rounds: int = ROUNDS) -> tuple[float, float, float]:
    """Median ms of run_command(["true"]), of subprocess.run(["true"]), and of their per-pair ratio.

    The two are sampled alternately, so a load swing on this shared machine hits both alike.
    """
    for _ in range(5):
        await tb.call("run_command", {"argv": ["true"]})
        true_ms()
    ours, base, ratios = [], [], []
    for _ in range(rounds):
        start = time.perf_counter()
        result = await tb.call("run_command", {"argv": ["true"]})
        ours.append((time.perf_counter() - start) * 1000)
        assert result.ok, result.error
        base.append(true_ms())
        ratios.append(ours[-1] / base[-1])
    return statistics.median(ours), statistics.median(base), statistics.median(ratios)


async def concurrent(tb: Toolbox, n: int = 200) -> tuple[float, int]:
    ok = 0

    async def one(i: int) -> None:
        nonlocal ok
        result = await tb.call("run_command", {"argv": ["echo", str(i)]})
        ok += result.ok and result.data["stdout"] == f"{i}\n"

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)
    return time.perf_counter() - start, ok


async def kill_latency(tb: Toolbox, rounds: int = 10) -> tuple[float, float]:
    """Median ms from the deadline to the result, and the kill itself (signal → last process gone)."""
    script = "trap '' TERM; setsid sh -c \"trap '' TERM; sleep 60\" & sleep 60 & sh -c 'sleep 60' & wait"
    timeout = 0.3
    after, kills = [], []
    for _ in range(rounds):
        result = await tb.call("run_command", {"argv": ["sh", "-c", script], "timeout": timeout})
        assert result.error is not None and result.error.code == "timeout"
        after.append(result.data["duration_ms"] - timeout * 1000)
        kills.append(result.data["kill_ms"])
    return statistics.median(after), statistics.median(kills)


async def main() -> None:
    report = describe_isolation()
    print(f"isolation on this machine: {report['backend']} (tree kill: {report['tree_kill']}); "
          f"landlock ABI {report['landlock']['abi']}")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        configs: list[tuple[str, dict[str, Any]]] = [
            ("none, no rlimits", {"isolation": "none", "allow_unconfined": True, "rlimits": NO_LIMITS}),
            ("none + rlimits (prlimit)", {"isolation": "none", "allow_unconfined": True}),
            ("bwrap + seccomp + rlimits", {"isolation": "bwrap"}),
            ("landlock + seccomp + rlimits", {"isolation": "landlock"}),
        ]
        print(f"\n{'configuration':30} {'run_command(true) ms':>21} {'subprocess.run ms':>18} {'ratio':>6} "
              f"{'200 x echo s':>13} {'cmds/s':>8} {'deadline->result ms':>20} {'kill ms':>8}")
        for label, options in configs:
            tb = shell.toolbox(ws, **options)
            # Confined commands cost tens of ms each: fewer rounds keep the whole bench around a minute.
            ms, base, ratio = await per_call_ms(tb, ROUNDS if options["isolation"] == "none" else ROUNDS // 5)
            elapsed, ok = await concurrent(tb)
            after, kill = await kill_latency(tb)
            print(f"{label:30} {ms:21.2f} {base:18.2f} {ratio:6.2f} {elapsed:13.2f} {ok / elapsed:8.0f} "
                  f"{after:20.1f} {kill:8.1f}")
    print("\nratio: median of run_command(true) / subprocess.run(true), sampled alternately in this run.")
    print("\nkill ms: from the first SIGKILL to the last process of the tree (setsid, SIGTERM-ignoring) gone.")
    print("deadline->result ms: from the command's deadline to the timeout result being returned.")


if __name__ == "__main__":
    sys.exit(anyio.run(main))
