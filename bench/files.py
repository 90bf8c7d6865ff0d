"""Benchmark the file tools against the obvious baselines, in one run; prints a table.

Usage: .venv/bin/python bench/files.py [--quick]

Each row runs in a fresh child process so peak RSS (ru_maxrss) belongs to that row alone.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

QUICK = "--quick" in sys.argv
BIG_BYTES = (100 if QUICK else 1024) << 20
TREE_FILES = 2_000 if QUICK else 20_000
LIST_ENTRIES = 10_000 if QUICK else 100_000


def _best(fn: Any, n: int = 3) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def make_big(path: Path) -> None:
    """A ~1 GB text file of numbered lines (about 1,000 bytes every 10 lines)."""
    if path.exists() and path.stat().st_size >= BIG_BYTES:
        return
    line = "x" * 90
    with open(path, "w") as fh:
        written, n = 0, 0
        while written < BIG_BYTES:
            block = "".join(f"{i:09d} {line}\n" for i in range(n, n + 10_000))
            fh.write(block)
            written += len(block)
            n += 10_000


def row_read_tool(big: str) -> dict[str, Any]:
    from toolhall.tools import files

    tb = files.toolbox(workspace=os.path.dirname(big))
    args = {"path": os.path.basename(big), "offset": 1_000_000, "limit": 51}
    secs = _best(lambda: tb.call_sync("read_file", args), 2)
    out = tb.call_sync("read_file", args).output
    assert out.startswith("1000000\t"), out[:80]
    return {"secs": secs}


def row_read_naive(big: str) -> dict[str, Any]:
    t = time.perf_counter()
    lines = Path(big).read_text().splitlines()[999_999:1_000_050]
    assert len(lines) == 51
    return {"secs": time.perf_counter() - t}


def row_edit_tool(path: str) -> dict[str, Any]:
    from toolhall.tools import files

    tb = files.toolbox(workspace=os.path.dirname(path))
    name = os.path.basename(path)
    state = {"i": 0}

    def once() -> None:
        i = state["i"]
        result = tb.call_sync("edit_file", {"path": name, "old_str": f"MARK{i}\n", "new_str": f"MARK{i + 1}\n"})
        assert result.ok, result.output
        state["i"] = i + 1

    return {"secs": _best(once, 5)}


def row_edit_naive(path: str) -> dict[str, Any]:
    state = {"i": 100}
    Path(path).write_text(Path(path).read_text().replace("MARK5\n", "MARK100\n"))

    def once() -> None:
        i = state["i"]
        text = Path(path).read_text()
        new = text.replace(f"MARK{i}\n", f"MARK{i + 1}\n", 1)
        tmp = path + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        state["i"] = i + 1

    return {"secs": _best(once, 5)}


def row_search_tool(root: str) -> dict[str, Any]:
    from toolhall.tools import files

    tb = files.toolbox(workspace=root)
    args = {"pattern": "needle_[0-9]+", "limit": 200}
    tb.call_sync("search_files", args)
    secs = _best(lambda: tb.call_sync("search_files", args), 5)
    lines = tb.call_sync("search_files", args).output.count("\n") + 1
    return {"secs": secs, "lines": lines}


def row_search_python(root: str) -> dict[str, Any]:
    from toolhall.tools import files

    tb = files.toolbox(workspace=root, use_ripgrep=False)
    args = {"pattern": "needle_[0-9]+", "limit": 200}
    return {"secs": _best(lambda: tb.call_sync("search_files", args), 3)}


def row_search_rg(root: str) -> dict[str, Any]:
    from toolhall.tools.search import find_ripgrep

    rg = find_ripgrep()
    assert rg is not None
    cmd = [rg, "-n", "needle_[0-9]+", "."]
    return {"secs": _best(lambda: subprocess.run(cmd, cwd=root, capture_output=True, check=False), 5)}


def row_list_tool(root: str) -> dict[str, Any]:
    from toolhall.tools import files

    tb = files.toolbox(workspace=root, list_limit=LIST_ENTRIES * 2)
    out = tb.call_sync("list_files", {"limit": LIST_ENTRIES * 2}).output
    n = out.count("\n") + 1
    return {"secs": _best(lambda: tb.call_sync("list_files", {"limit": LIST_ENTRIES * 2}), 3), "entries": n}


def row_list_naive(root: str) -> dict[str, Any]:
    def once() -> None:
        sorted((str(p.relative_to(root)), p.stat().st_size) for p in Path(root).rglob("*"))

    return {"secs": _best(once, 3)}


def row_open(root: str) -> dict[str, Any]:
    from toolhall import Workspace

    ws = Workspace(root)
    rel = "sub/f.txt"
    n = 20_000
    t = time.perf_counter()
    for _ in range(n):
        os.close(ws.open(rel, os.O_RDONLY))
    confined = (time.perf_counter() - t) / n
    full = os.path.join(root, rel)
    t = time.perf_counter()
    for _ in range(n):
        os.close(os.open(full, os.O_RDONLY))
    plain = (time.perf_counter() - t) / n
    ws._use_openat2 = False  # the walking fallback, for the record
    t = time.perf_counter()
    for _ in range(n):
        os.close(ws.open(rel, os.O_RDONLY))
    walk = (time.perf_counter() - t) / n
    return {"confined_us": confined * 1e6, "plain_us": plain * 1e6, "walk_us": walk * 1e6}


def child(name: str, arg: str) -> None:
    result = globals()[f"row_{name}"](arg)
    result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def run(name: str, arg: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child", name, arg], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def build_tree(root: Path, count: int) -> None:
    rnd = random.Random(7)
    for i in range(count):
        d = root / f"d{i % 50:02d}" / f"e{i % 400:03d}"
        d.mkdir(parents=True, exist_ok=True)
        body = "".join(f"line {j} some ordinary text here\n" for j in range(40))
        if rnd.random() < 0.005:
            body += f"needle_{i}\n"
        (d / f"f{i}.py").write_text(body)


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="toolhall-bench-"))
    try:
        rows = []
        bigdir = base / "big"
        bigdir.mkdir()
        make_big(bigdir / "big.txt")
        size_mb = (bigdir / "big.txt").stat().st_size >> 20
        tool, naive = run("read_tool", str(bigdir / "big.txt")), run("read_naive", str(bigdir / "big.txt"))
        rows.append((f"read_file lines 1,000,000-1,000,050 of {size_mb} MB", tool, "read_text().splitlines()", naive))
        (bigdir / "big.txt").unlink()

        edit = base / "edit" / "ten.txt"
        edit.parent.mkdir()
        text = "".join(f"ordinary line number {i} with some text\n" for i in range(250_000))
        edit.write_text(text[: len(text) // 2] + "MARK0\n" + text[len(text) // 2 :])
        tool, naive = run("edit_tool", str(edit)), run("edit_naive", str(edit))
        rows.append((f"edit_file in a {edit.stat().st_size >> 20} MB file", tool, "read+replace+atomic write", naive))

        tree = base / "tree"
        build_tree(tree, TREE_FILES)
        tool, rg, py = run("search_tool", str(tree)), run("search_rg", str(tree)), run("search_python", str(tree))
        rows.append((f"search_files over {TREE_FILES:,} files", tool, "rg -n directly", rg))
        rows.append((f"search_files, no rg ({TREE_FILES:,} files)", py, "rg -n directly", rg))

        lst = base / "list"
        for i in range(LIST_ENTRIES):
            d = lst / f"d{i % 100:02d}"
            if i < 100:
                d.mkdir(parents=True)
            (d / f"f{i}").touch()
        tool, naive = run("list_tool", str(lst)), run("list_naive", str(lst))
        rows.append((f"list_files of {LIST_ENTRIES:,} entries", tool, "Path.rglob + stat, sorted", naive))

        (tree / "sub").mkdir()
        (tree / "sub" / "f.txt").write_text("x")
        op = run("open", str(tree))
        print_table(rows, op)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def print_table(rows: list[tuple[str, dict[str, Any], str, dict[str, Any]]], op: dict[str, Any]) -> None:
    head = f"{'case':<48} {'toolhall':>10} {'RSS MB':>7}   {'baseline':<27} {'time':>9} {'RSS MB':>7} {'ratio':>6}"
    print(head)
    print("-" * len(head))
    for label, tool, base_label, base in rows:
        ratio = tool["secs"] / base["secs"]
        print(
            f"{label:<48} {tool['secs'] * 1000:>8.1f}ms {tool['rss_mb']:>7.0f}   {base_label:<27} "
            f"{base['secs'] * 1000:>7.1f}ms {base['rss_mb']:>7.0f} {ratio:>5.2f}x"
        )
    print(
        f"{'Workspace.open (openat2) per open':<48} {op['confined_us']:>8.2f}us"
        f"{'':>11}{'os.open, no confinement':<27} {op['plain_us']:>7.2f}us"
        f"   overhead {op['confined_us'] - op['plain_us']:.2f}us; walk fallback {op['walk_us']:.2f}us"
    )


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
