"""Helpers shared by the shell and process-runner tests: backend selection and process-table checks."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from toolhall.tools._isolation import detect


def require_backend(name: str) -> None:
    """Skip when a backend is missing locally; under CI (which installs bubblewrap) that is a failure."""
    if name == "none":
        return
    caps = detect()
    if caps[name]["available"] and caps["seccomp"]["available"]:
        return
    message = f"isolation backend {name} unavailable: {caps[name]}"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def backend_fixture(names: Sequence[str]) -> Any:
    """A `backend` fixture over `names`, each skipped (or failed under CI) where this machine lacks it."""

    @pytest.fixture(params=list(names))
    def backend(request: pytest.FixtureRequest) -> str:
        require_backend(request.param)
        return str(request.param)

    return backend


def _stat_fields(pid: str) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def our_children() -> list[str]:
    """Processes whose parent is this test process (a left-over child or zombie shows up here)."""
    me = str(os.getpid())
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat_fields(entry)) is not None and fields[1] == me:
            out.append(f"{entry}:{fields[0]}")
    return out


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie counts as gone)."""
    fields = _stat_fields(str(pid))
    return fields is not None and fields[0] not in ("Z", "X")


def pids_with(mark: str) -> list[int]:
    """Processes whose command line contains `mark`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if mark.encode() in cmdline:
                found.append(int(entry))
    return found
