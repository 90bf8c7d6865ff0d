"""A child process for the reliability tests: many logged Session calls against one store."""

from __future__ import annotations

import asyncio
import os
import sys

from toolhall import Policy, PostgresLog, Session, SqliteLog, Toolbox, ToolContext, tool


def main() -> None:
    kind, target, count, marks = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    fd = os.open(marks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if marks != "-" else -1

    @tool(read_only=True, inline=True)
    def mark(n: int, ctx: ToolContext) -> int:
        if fd >= 0:  # the handler runs only after the call's row is durable
            os.write(fd, (ctx.call_id + "\n").encode())
        return n

    log: SqliteLog | PostgresLog
    if kind == "sqlite":
        log = SqliteLog(target)
    else:
        log = PostgresLog(target)
    session = Session(Toolbox([mark]), log=log, policy=Policy(), session_id=f"proc-{os.getpid()}")

    async def run() -> int:
        results = await session.call_many([("mark", {"n": i}) for i in range(count)], concurrency=16)
        return sum(1 for r in results if not r.ok)

    failed = asyncio.run(run())
    session.close()
    log.close()
    print(f"failed={failed}", flush=True)


if __name__ == "__main__":
    main()
