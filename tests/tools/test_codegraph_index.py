"""The code graph's indexing internals: parsing in worker processes and the cache a new process resumes from."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from toolhall.tools._graph_read import read_files

FIXTURE = Path(__file__).parent / "fixtures" / "graphproj"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh copy of the fixture workspace."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    return root


def test_worker_processes_give_the_same_facts_as_parsing_in_process(project: Path) -> None:
    """A share parsed by a worker process matches the serial parse, unreadable and unchanged files included."""
    from toolhall.tools._graph_read import read_one

    paths = sorted(p.relative_to(project).as_posix() for p in project.rglob("*.py"))
    known = read_one(project, (paths[0], None))[1]
    jobs = [(paths[0], known), *((p, None) for p in paths[1:]), ("missing.py", None)]
    serial = sorted(read_files(project, jobs, workers=1), key=str)
    pooled = sorted(read_files(project, jobs, workers=3, min_per_worker=1), key=str)
    assert pooled == serial
    assert (paths[0], known, None) in pooled  # same content as indexed: hashed, not parsed
    assert ("missing.py", None, None) in pooled


def test_a_worker_process_parses_its_share(project: Path, tmp_path: Path) -> None:
    """The worker really runs (no silent fallback to parsing here) and returns every job's outcome."""
    from toolhall.tools._graph_read import ReadJob, _Worker, read_one

    jobs: list[ReadJob] = [(p.relative_to(project).as_posix(), None) for p in sorted(project.rglob("*.py"))]
    worker = _Worker(project, jobs, tmp_path / "share")
    try:
        outcomes = list(worker.outcomes(None))
        assert worker.proc is not None and worker.proc.popen.returncode == 0
    finally:
        worker.close()
    assert outcomes == [read_one(project, job) for job in jobs]


def test_cancelling_stops_reading(project: Path) -> None:
    """A cancelled read yields nothing more, with or without workers."""
    jobs = [(p.relative_to(project).as_posix(), None) for p in project.rglob("*.py")]
    assert list(read_files(project, jobs, workers=1, cancelled=lambda: True)) == []
    assert list(read_files(project, jobs, workers=2, min_per_worker=1, cancelled=lambda: True)) == []


def test_a_resumed_index_reads_only_the_entries_an_update_needs(project: Path) -> None:
    """A new process reads the file list only; a change to broken.py loads broken.py and what it imports."""
    from toolhall.tools import codegraph
    from toolhall.tools._graph_service import forget

    tb = codegraph.toolbox(project)
    assert tb.call_sync("graph_index", {}).ok
    forget([project / ".toolhall" / "graph"])
    broken = project / "broken.py"
    broken.write_text(broken.read_text() + "\n\ndef later():\n    return fine()\n")
    tb = codegraph.toolbox(project)
    result = tb.call_sync("graph_index", {})
    assert result.ok, result.error
    assert (result.data["mode"], result.data["parsed"], result.data["resolved"]) == ("incremental", 1, 1)
    index = codegraph.graph_for(project).index
    assert index is not None
    loaded = sorted(path for path, record in index.files.items() if record.facts is not None)
    assert loaded == ["app/util.py", "broken.py"]  # broken.py imports slugify from app.util


def test_a_huge_change_on_a_resumed_index_rebuilds_in_full_and_stays_exact(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resumed index that switches to a bulk rebuild writes a complete cache a later process continues from."""
    from toolhall.tools import _graph_service, codegraph
    from toolhall.tools._graph_service import forget

    from .test_codegraph import dump, fresh_dump

    folder = project / ".toolhall" / "graph"
    assert codegraph.graph_for(project).update().mode == "full"
    forget([folder])
    monkeypatch.setattr(_graph_service, "_MIN_BULK_ROWS", 0)  # any delta counts as huge
    (project / "main.py").write_text((project / "main.py").read_text() + "\n\ndef later():\n    main([])\n")
    stats = codegraph.graph_for(project, full_rebuild_ratio=0.0).update()
    assert (stats.mode, stats.parsed) == ("full", 1)
    monkeypatch.undo()
    forget([folder])
    util = project / "app" / "util.py"
    util.write_text(util.read_text().replace("slugify", "slug"))
    tb = codegraph.toolbox(project, max_rows=100_000)
    result = tb.call_sync("graph_index", {})
    assert result.ok, result.error
    assert (result.data["mode"], result.data["resolved"]) == ("incremental", 4)
    copy = tmp_path / "copy"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns(".toolhall"))
    assert dump(tb) == fresh_dump(copy)


def test_a_damaged_cache_entry_makes_the_graph_rebuild(project: Path, tmp_path: Path) -> None:
    """An entry that cannot be read back is never guessed at: the update rebuilds the graph from scratch."""
    import sqlite3

    from toolhall.tools import codegraph
    from toolhall.tools._graph_service import forget

    from .test_codegraph import dump, fresh_dump

    folder = project / ".toolhall" / "graph"
    assert codegraph.graph_for(project).update().mode == "full"
    forget([folder])
    with sqlite3.connect(folder / "state.sqlite") as conn:
        conn.execute("UPDATE files SET entry = x'00' WHERE path = 'app/util.py'")
    util = project / "app" / "util.py"
    util.write_text(util.read_text() + "\n\ndef extra():\n    return 1\n")
    tb = codegraph.toolbox(project, max_rows=100_000)
    result = tb.call_sync("graph_index", {})
    assert result.ok, result.error
    assert result.data["mode"] == "full"
    copy = tmp_path / "copy"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns(".toolhall"))
    assert dump(tb) == fresh_dump(copy)
