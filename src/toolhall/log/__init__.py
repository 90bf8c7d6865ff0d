"""Durable call logs: the `LogStore` protocol, `CallRecord`, and the SQLite and PostgreSQL stores."""

from __future__ import annotations

from ._postgres import PostgresLog as PostgresLog
from ._protocol import LogStore as LogStore
from ._record import ApprovalDecision as ApprovalDecision
from ._record import ApprovalScope as ApprovalScope
from ._record import CallRecord as CallRecord
from ._record import CallStatus as CallStatus
from ._record import PendingApproval as PendingApproval
from ._sqlite import SqliteLog as SqliteLog

__all__ = [
    "ApprovalDecision",
    "ApprovalScope",
    "CallRecord",
    "CallStatus",
    "LogStore",
    "PendingApproval",
    "PostgresLog",
    "SqliteLog",
]
