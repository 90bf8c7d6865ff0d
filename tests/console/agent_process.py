"""An agent in its own process: one call that needs approval, answered through the shared store.

Usage: python agent_process.py sqlite|postgres TARGET SESSION_ID
"""

from __future__ import annotations

import asyncio
import json
import sys

from toolhall import PostgresLog, Session, SqliteLog, Toolbox, tool
from toolhall.console import QueueApprover


@tool(subject="path")
def write_note(path: str, content: str) -> str:
    """Write a note.

    Args:
        path: where.
        content: what.
    """
    return f"wrote {path}"


async def main(kind: str, target: str, session_id: str) -> None:
    """Make the call and print its outcome as one JSON line."""
    store = SqliteLog(target) if kind == "sqlite" else PostgresLog(target)
    session = Session(
        Toolbox([write_note]), log=store, approver=QueueApprover(store, timeout=20), session_id=session_id
    )
    result = await session.call("write_note", {"path": "from-another-process.md", "content": "hi"})
    await session.aclose()
    store.close()
    error = result.error.message if result.error else None
    print(json.dumps({"ok": result.ok, "call_id": result.call_id, "output": result.output, "error": error}))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
