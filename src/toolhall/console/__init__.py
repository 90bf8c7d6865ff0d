"""The console: a web page on the MCP HTTP server to watch tool calls live and answer approval requests.

`toolhall serve --http` serves it at `/` on the same port and behind the same token as `/mcp`; open the
`/?token=...` link it prints. Sessions put calls that need a person's answer in the store's approval
queue through a `QueueApprover`; the console shows them and answers there, so a console attached to a
PostgreSQL store answers requests from every process that writes to it.

Example:
    ```python
    from toolhall import Session, SqliteLog
    from toolhall.console import QueueApprover, console_routes
    from toolhall.mcp.server import serve_http

    log = SqliteLog(".toolhall/state.db")
    session = Session(toolbox, log=log, approver=QueueApprover(log, timeout=300))
    await serve_http(session, token=token, routes=console_routes(log, token=token, approval_timeout=300))
    ```
"""

from __future__ import annotations

from ..policy._approval import QueueApprover as QueueApprover
from ._app import console_routes as console_routes
from ._events import CallFeed as CallFeed

__all__ = ["CallFeed", "QueueApprover", "console_routes"]
