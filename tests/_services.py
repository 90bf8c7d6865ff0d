"""Reach the real servers the tests use: skip with a reason on a user's machine, fail under CI."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

import pytest

PG_DSN = os.environ.get("TOOLHALL_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("TOOLHALL_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: these tests must run, not skip)")
    pytest.skip(reason)


def _reachable(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or default_port), timeout=2):
            return True
    except OSError:
        return False


def require_postgres() -> str:
    """The DSN of a PostgreSQL server that answers, or skip (fail under CI)."""
    if not _reachable(PG_DSN, 5432):
        _unavailable(f"no PostgreSQL server answers at {PG_DSN} (set TOOLHALL_TEST_PG_DSN)")
    return PG_DSN


def require_mysql() -> str:
    """The URL of a MySQL/MariaDB server that answers, or skip (fail under CI)."""
    if not _reachable(MYSQL_URL, 3306):
        _unavailable(f"no MySQL/MariaDB server answers at {MYSQL_URL} (set TOOLHALL_TEST_MYSQL_URL)")
    return MYSQL_URL
