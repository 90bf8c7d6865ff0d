"""`toolhall serve`: the MCP server over stdio or streamable HTTP (what `make run` starts)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from ._app import load_app, load_toolbox, open_toolbox
from ._options import ConfigOption, RoleOption, WorkspaceOption
from ._render import fail

__all__ = ["register"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve(
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio.")] = False,
    host: Annotated[str | None, typer.Option("--host", help="Address to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option("--port", help="Port to bind (default 8765).")] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Bearer token clients must send (default: $TOOLHALL_TOKEN, else .toolhall/token, made once).",
        ),
    ] = None,
    toolbox_ref: Annotated[
        str | None,
        typer.Option("--toolbox", help="Serve MODULE:NAME (a Toolbox, or a function returning one) instead."),
    ] = None,
    role: RoleOption = None,
    config: ConfigOption = None,
    workspace: WorkspaceOption = None,
) -> None:
    """Serve the standard toolbox for this folder over MCP; every call goes through a logged session.

    Example: toolhall serve --http --port 8765   (or: toolhall serve --toolbox mypkg.tools:toolbox)
    """
    from .._session import Session
    from ..mcp._approval import ElicitingApprover
    from ..mcp.server import new_token, serve_http, serve_stdio
    from ..policy import QueueApprover

    app = load_app(config, workspace)
    cfg = app.config.serve
    bind = host or cfg.host
    bind_port = cfg.port if port is None else port
    secret = token or os.environ.get("TOOLHALL_TOKEN") or cfg.token
    if http and bind not in _LOOPBACK and not secret:
        raise fail(f"refusing to bind {bind} (not loopback) without a token", code=2, hint="pass --token")
    secret = secret or _saved_token(Path(app.workspace.root) / ".toolhall" / "token", new_token)

    custom = load_toolbox(toolbox_ref) if toolbox_ref else None

    async def run() -> None:
        async with open_toolbox(app, base=custom) as toolbox:
            store = app.log_store()
            console_on = http and cfg.console
            queue = (
                QueueApprover(store, timeout=cfg.approval_timeout) if console_on or cfg.approval == "queue" else None
            )
            if cfg.approval == "queue" and queue is not None:
                approver: Any = queue
            else:
                approver = ElicitingApprover(fallback=queue if cfg.approval == "elicit" and queue else "deny")
            session = Session(
                toolbox,
                workspace=app.workspace,
                policy=app.policy(),
                approver=approver,
                log=store,
                role=role or cfg.role or app.config.role,
                max_output_chars=app.config.limits.max_output_chars,
                default_timeout=app.config.limits.timeout,
            )
            try:
                if not http:
                    await serve_stdio(session)
                    return
                address = bind if ":" not in bind else f"[{bind}]"
                url = f"http://{address}:{bind_port}/mcp"
                routes: list[Any] = []
                if console_on:
                    from ..console import console_routes

                    routes = console_routes(store, token=secret, host=bind, approval_timeout=cfg.approval_timeout)
                print(f"toolhall serving {len(session.schemas('mcp'))} tools for {app.workspace.root}", file=sys.stderr)
                print(f"  MCP endpoint: {url}", file=sys.stderr)
                print(f"  token:        {secret}", file=sys.stderr)
                if console_on:
                    print(f"  console:      http://{address}:{bind_port}/?token={secret}", file=sys.stderr)
                print(
                    f"  add it:       claude mcp add --transport http toolhall {url} "
                    f'--header "Authorization: Bearer {secret}"',
                    file=sys.stderr,
                    flush=True,
                )
                await serve_http(session, host=bind, port=bind_port, token=secret, routes=routes)
            finally:
                await session.aclose()

    anyio.run(run)


def _saved_token(path: Path, make: Callable[[], str]) -> str:
    """The token kept in the workspace's state folder (made on first start), so clients keep working."""
    try:
        saved = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        saved = ""
    if saved:
        return saved
    token = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    tmp.replace(path)
    return token


def register(app: typer.Typer) -> None:
    """Add `serve`."""
    app.command("serve")(serve)
