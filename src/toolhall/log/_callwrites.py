"""How call rows reach a SQL store: an INSERT for a call's first row, a narrow UPDATE for the rest, in groups.

A call's row is written a few times (`running`, then its final status; `pending` first when it waits for
approval). Only the first write inserts the whole row; later ones update the columns that change (status,
output, error, timing), so a commit carries less and touches no index but the id lookup.

Durable writes from one event loop are gathered for one loop turn and committed together on the loop's own
thread when the store can do that without waiting (SQLite's write lock is free); otherwise the whole group
goes to the writer thread as one hand-off. Lazy writes (a call's final row) wait in the writer's queue and
ride along with the next commit, or are committed by the writer thread after a short linger.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._record import CallRecord
from ._rows import CallRow, RowCodec
from ._writer import FuturesWaker, GroupCommitWriter, ThreadWaker, report_failure, report_recovery, resolve_futures

__all__ = ["INLINE_GROUP_ROWS", "INLINE_OUTPUT_CHARS", "CallWrites", "Op", "RowPlan", "plan_rows"]

Op = tuple[bool, CallRow]
"""One queued write: (insert the whole row?, the record or live entry)."""

INLINE_OUTPUT_CHARS = 64 * 1024
"""Final rows with more output than this are redacted and written by the writer thread, off the event loop."""

INLINE_GROUP_ROWS = 256
"""The most durable rows of one loop turn committed on the loop's thread; a bigger group goes to the writer."""

_OPEN = frozenset({"pending", "running"})
_FORGET_AFTER = 100_000  # open calls remembered; beyond, an update falls back to a full upsert (still right)


@dataclass(slots=True)
class RowPlan:
    """One commit's rows: whole rows to upsert, and narrow updates (with their whole rows as a fallback)."""

    inserts: list[tuple[Any, ...]]
    updates: list[tuple[Any, ...]]
    update_records: list[CallRow]

    def fallback(self, codec: RowCodec) -> list[tuple[Any, ...]]:
        """Whole rows for the updates, for when some of their rows are missing (written by nobody)."""
        return [codec.call_row(record) for record in self.update_records]


def plan_rows(ops: Sequence[Op], codec: RowCodec) -> RowPlan:
    """Coalesce a batch's writes per call (the latest record wins; an insert stays an insert) and encode them."""
    latest: dict[str, list[Any]] = {}
    for insert, record in ops:
        seen = latest.get(record.id)
        if seen is None:
            latest[record.id] = [insert, record]
        else:
            seen[0] = seen[0] or insert
            seen[1] = record
    inserts, updates, update_records = [], [], []
    for insert, record in latest.values():
        if insert:
            inserts.append(codec.call_row(record))
        else:
            updates.append(codec.finish_row(record))
            update_records.append(record)
    return RowPlan(inserts, updates, update_records)


def _same_row(first: CallRow, record: CallRow) -> bool:
    """Whether `record` only changes what a narrow update writes (the columns fixed at the start are equal)."""
    return record is first or (
        record.input is first.input
        and record.tool == first.tool
        and record.started_at == first.started_at
        and record.session_id == first.session_id
        and record.parent_id == first.parent_id
        and record.worker == first.worker
        and record.role == first.role
        and record.tool_version == first.tool_version
        and record.subjects == first.subjects
    )


def _inline_ok(op: Op) -> bool:
    output = op[1].output
    return output is None or len(output) <= INLINE_OUTPUT_CHARS


class CallWrites:
    """The `write` side of a SQL store; the store supplies `_write_plan` and `_commit_inline`."""

    _codec: RowCodec
    _writer: GroupCommitWriter[Op]
    _inline = False  # whether `_commit_inline` may commit on the caller's thread (SQLite on disk)

    def _init_writes(self, name: str, maintain: Callable[[], None]) -> None:
        self._open: dict[str, CallRow] = {}  # calls whose row this process inserted, not yet final
        self._batches: dict[asyncio.AbstractEventLoop, tuple[list[Op], list[asyncio.Future[None]]]] = {}
        self._writer = GroupCommitWriter(self._commit_ops, name=name, maintain=maintain)

    # -- hooks -------------------------------------------------------------------------------------
    def _write_plan(self, plan: RowPlan) -> None:
        """Commit a plan in one transaction (on the writer thread; may wait for locks)."""
        raise NotImplementedError

    def _commit_inline(self, ops: list[Op]) -> bool:
        """Commit ops on the caller's thread if that cannot block; False to use the writer thread."""
        return False

    # -- writing -----------------------------------------------------------------------------------
    async def write(self, record: CallRecord, *, durable: bool = False) -> None:
        """Insert or replace the call's row; with `durable`, return once it is committed.

        Never raises for a store failure (that is reported once to the `toolhall.log` logger).
        """
        await self.write_row(record, durable=durable)

    async def write_row(self, record: CallRow, *, durable: bool = False) -> None:
        """`write` for a session's live entry of a call (no `CallRecord` built per write)."""
        op = self._op(record)
        if not durable:
            self._submit(op, None)
            return
        alone = len(self._open) <= 1
        # A lone call commits at once on its own thread (no thread hop, no loop turn).
        if alone and self._try_inline([op]):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # trio, or no loop: one hand-off to the writer thread per row
            loop = None
        if loop is None or (alone and not self._inline):  # nobody to share a commit with: no loop turn
            waker = ThreadWaker()
            if self._submit(op, waker):
                await waker.wait()
            return
        batch = self._batches.get(loop)
        if batch is None:
            batch = self._batches[loop] = ([], [])
            # Every call that reaches its durable write in this loop turn joins the same commit.
            loop.call_soon(self._flush_batch, loop)
        future = loop.create_future()
        batch[0].append(op)
        batch[1].append(future)
        await future

    def _op(self, record: CallRow) -> Op:
        open_rows = self._open
        first = open_rows.get(record.id)
        if record.status in _OPEN:
            if first is not None and _same_row(first, record):
                return False, record
            if len(open_rows) >= _FORGET_AFTER:  # calls that never finished (a crash in a caller)
                open_rows.clear()
            open_rows[record.id] = record
            return True, record
        if first is not None:
            del open_rows[record.id]
            return not _same_row(first, record), record
        return True, record

    def _flush_batch(self, loop: asyncio.AbstractEventLoop) -> None:
        ops, futures = self._batches.pop(loop)
        if self._try_inline(ops):
            resolve_futures(futures)
            return
        try:
            self._writer.submit_many(ops, FuturesWaker(loop, futures))
        except RuntimeError as exc:  # closed store: the calls go on, unlogged
            report_failure(self, "write after close", exc)
            resolve_futures(futures)

    def _try_inline(self, ops: list[Op]) -> bool:
        """Commit ops (after the lingering ones) on this thread, if the store can without waiting.

        A big group goes to the writer thread instead: committed inline it would stall the event loop for
        its whole length (~15 µs a row), while SQLite on the writer thread lets the loop run between rows.
        """
        if not self._inline or len(ops) > INLINE_GROUP_ROWS:
            return False
        return self._writer.run_inline(lambda rows: self._commit_inline([*rows, *ops]), _inline_ok)

    def _submit(self, op: Op, waker: ThreadWaker | None) -> bool:
        try:
            self._writer.submit(op, waker)
        except RuntimeError as exc:  # closed store: the call goes on, unlogged
            report_failure(self, "write after close", exc)
            return False
        return True

    def _commit_ops(self, ops: Sequence[Op]) -> None:
        try:
            self._write_plan(plan_rows(ops, self._codec))
        except Exception as exc:  # noqa: BLE001 - a failing store never fails a call
            report_failure(self, f"writing {len(ops)} call row(s)", exc)
        else:
            report_recovery(self)

    def flush(self) -> None:
        """Block until every queued row is committed."""
        self._writer.flush()
