"""Fixtures shared by the whole suite."""

from __future__ import annotations

import hypothesis  # noqa: F401 - imported before any test starts threads: see below
import pytest

# CPython 3.11's AST validator keeps its recursion depth in shared state, so two threads compiling at
# once can fail with "AST constructor recursion depth mismatch". Hypothesis's pytest plugin would
# otherwise import (and compile) hypothesis at the end of the run, while tool threads may still be busy.


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio, the loop toolhall targets."""
    return "asyncio"
