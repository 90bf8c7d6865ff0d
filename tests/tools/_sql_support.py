"""Helpers shared by the SQL tool tests: calls through the toolbox, and statements sent straight to a backend
(past the guard) to prove that the database itself keeps read-only mode."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from toolhall import Toolbox, ToolCallError
from toolhall.tools import sql
from toolhall.tools._sql_base import Backend, Outcome, RunRequest, parse_url
from toolhall.tools._sql_guard import analyse


def query(tb: Toolbox, text: str, **args: Any) -> Any:
    """`sql_query` through the public API."""
    return tb.call_sync("sql_query", {"sql": text, **args})


def assert_denied_and_unchanged(url: str, text: str, *, admin_url: str, check: str, rows: list[list[Any]]) -> None:
    """`text` is denied in read-only mode at `url`, and `check` (run by the admin) still returns `rows`."""
    result = query(sql.toolbox(url=url), text)
    assert not result.ok and result.error.code == "denied", result.error
    assert query(sql.toolbox(url=admin_url), check).data["rows"] == rows


@contextmanager
def read_only_backend(url: str) -> Iterator[Backend]:
    """The backend for `url` in read-only mode, closed afterwards."""
    from toolhall.tools.sql import _backend

    backend = _backend(url, "read_only")
    try:
        yield backend
    finally:
        backend.close()


def run_direct(backend: Backend, text: str) -> list[Outcome]:
    """Run `text` on the backend in read-only mode, skipping the guard (which would refuse a write)."""
    request = RunRequest(statements=analyse(text, backend.dialect).statements, params=None, max_rows=10,
                         timeout=5, read_only=True)
    return asyncio.run(backend.run(request))


def refusal(backend: Backend, text: str) -> ToolCallError:
    """The error the database itself gives for `text` sent past the guard (fails the test if it ran)."""
    try:
        run_direct(backend, text)
    except ToolCallError as error:
        return error
    raise AssertionError(f"the database ran {text!r} in read-only mode")


__all__ = ["assert_denied_and_unchanged", "parse_url", "query", "read_only_backend", "refusal", "run_direct"]
