"""Reading, hashing and parsing source files, in worker processes when there are many.

Extraction is CPU-bound Python (tree-sitter's parse holds the GIL too), so threads do not help: a full
build splits the files into one share per CPU, parses one share here and hands the others to worker
processes, fresh interpreters running `_BOOT` started through `_proc` rather than `multiprocessing`:
"fork" is unsafe in a process with threads (the tool runner, the database engine), and "spawn" and
"forkserver" re-run the caller's `__main__` script in every child, which an unguarded script would turn
into running its own side effects again. A worker reads the files itself (only paths go out, marshalled
facts come back through a private temporary folder) and skips the parse when the content hash equals the
one already indexed. A worker that fails is not fatal: its share is parsed here instead.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ._graph_parse import FileFacts, extract_python

__all__ = ["ReadJob", "ReadOutcome", "default_workers", "read_files"]

ReadJob = tuple[str, str | None]
"""(relative path, sha already indexed for it or None)."""
ReadOutcome = tuple[str, str | None, FileFacts | None]
"""(relative path, sha or None when unreadable, facts or None when unreadable or unchanged)."""

MIN_FILES_PER_WORKER = 50
"""Below this many files per process, starting a worker (about 0.3 s) costs more than it saves."""


def default_workers() -> int:
    """One worker per CPU this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - platforms without sched_getaffinity
        return max(1, os.cpu_count() or 1)


def read_one(root: Path, job: ReadJob) -> ReadOutcome:
    """Read, hash and (when the content is new) parse one file."""
    path, known = job
    try:
        data = (root / path).read_bytes()
    except OSError:
        return path, None, None
    sha = hashlib.sha256(data).hexdigest()
    if sha == known:
        return path, sha, None
    return path, sha, extract_python(data)


def _serial(root: Path, jobs: Sequence[ReadJob], cancelled: Callable[[], bool] | None) -> Iterator[ReadOutcome]:
    for job in jobs:
        if cancelled is not None and cancelled():
            return
        yield read_one(root, job)


def read_files(
    root: Path,
    jobs: Sequence[ReadJob],
    *,
    workers: int,
    cancelled: Callable[[], bool] | None = None,
    min_per_worker: int = MIN_FILES_PER_WORKER,
) -> Iterator[ReadOutcome]:
    """Outcomes for every job (stops early when `cancelled()` turns True).

    Args:
        root: The workspace root the paths are relative to.
        jobs: The files to read, each with the sha already indexed (the parse is skipped when it matches).
        workers: Processes to use at most, this one included; 1 reads everything here.
        cancelled: Polled between files and while waiting for workers; True stops early.
        min_per_worker: Fewer files than this per process are all read here.
    """
    workers = min(workers, len(jobs) // max(1, min_per_worker))
    if workers <= 1 or not sys.executable:
        yield from _serial(root, jobs, cancelled)
        return
    shares = _shares(root, jobs, workers)
    with tempfile.TemporaryDirectory(prefix="toolhall-parse-") as scratch:
        children = [_Worker(root, share, Path(scratch) / str(number)) for number, share in enumerate(shares[1:])]
        try:
            yield from _serial(root, shares[0], cancelled)
            for child in children:
                yield from child.outcomes(cancelled)
        finally:
            for child in children:
                child.close()


class _Worker:
    """One worker process parsing a share of the files."""

    def __init__(self, root: Path, jobs: Sequence[ReadJob], base: Path) -> None:
        from ._proc import spawn

        self.root, self.jobs = root, list(jobs)
        self.out = base.with_suffix(".out")
        job_file = base.with_suffix(".jobs")
        job_file.write_bytes(marshal.dumps((str(root), self.jobs)))
        # toolhall comes from this very folder (see _BOOT); tree-sitter from wherever this process found it.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        tools = Path(__file__).parent
        argv = [sys.executable, "-c", _BOOT, str(tools.parent), str(tools), str(job_file), str(self.out)]
        try:
            self.proc: Any = spawn(argv, env=env)
        except OSError:
            self.proc = None

    def outcomes(self, cancelled: Callable[[], bool] | None) -> Iterator[ReadOutcome]:
        """The worker's outcomes once it exits; its share is read here when it failed."""
        if self.proc is not None:
            while self.proc.popen.poll() is None:
                if cancelled is not None and cancelled():
                    return
                time.sleep(0.01)
            if self.proc.popen.returncode == 0:
                try:
                    found: list[ReadOutcome] = marshal.loads(self.out.read_bytes())  # noqa: S302 - our own worker wrote it
                except (OSError, EOFError, ValueError, TypeError):
                    found = []
                if len(found) == len(self.jobs):
                    yield from found
                    return
        yield from _serial(self.root, self.jobs, cancelled)

    def close(self) -> None:
        """Stop the worker if it still runs and release its descriptors."""
        if self.proc is not None:
            self.proc.close()


def _shares(root: Path, jobs: Sequence[ReadJob], count: int) -> list[list[ReadJob]]:
    """`count` shares of similar total size (dealt biggest first, each file to the lightest share)."""

    def size(job: ReadJob) -> int:
        try:
            return (root / job[0]).stat().st_size
        except OSError:
            return 0

    shares: list[list[ReadJob]] = [[] for _ in range(count)]
    totals = [0] * count
    for job, weight in sorted(((j, size(j)) for j in jobs), key=lambda item: -item[1]):
        lightest = totals.index(min(totals))
        shares[lightest].append(job)
        totals[lightest] += weight
    return shares


# The worker needs this module and the parser only. Importing them through the real packages would run
# `toolhall.tools/__init__`, which loads the whole tool layer (about 0.25 s per worker); bare package
# stand-ins pointing at the same folders load just the two modules.
_BOOT = """\
import sys, types
for name, path in (("toolhall", sys.argv[1]), ("toolhall.tools", sys.argv[2])):
    package = types.ModuleType(name)
    package.__path__ = [path]
    sys.modules[name] = package
from toolhall.tools._graph_read import _main
sys.exit(_main(sys.argv[3:]))
"""


def _main(argv: list[str]) -> int:
    """Worker entry point: read the job file, write the marshalled outcomes (atomically) to OUT."""
    job_file, out = Path(argv[0]), Path(argv[1])
    root, jobs = marshal.loads(job_file.read_bytes())  # noqa: S302 - our parent wrote it, in a private folder
    outcomes = [read_one(Path(root), (path, known)) for path, known in jobs]
    partial = out.with_suffix(".part")
    partial.write_bytes(marshal.dumps(outcomes))
    partial.replace(out)
    return 0
