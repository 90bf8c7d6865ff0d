"""Re-serving imported MCP tools behind toolhall's policy and log (the gateway)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolhall import Policy, Session
from toolhall.mcp.client import MCPToolbox
from toolhall.testing import MemoryLog

pytestmark = pytest.mark.anyio

SERVER = [sys.executable, str(Path(__file__).with_name("fixture_server.py"))]


async def test_untrusted_annotations_never_relax_policy() -> None:
    """A server's read-only claim does not let its tool skip approval, unless the server is trusted."""
    async with MCPToolbox(command=SERVER) as untrusted:
        session = Session(untrusted, policy=Policy(), log=MemoryLog())
        refused = await session.call("delete_everything")
        assert refused.error is not None and refused.error.code == "approval_required"
    async with MCPToolbox(command=SERVER, trusted=True) as trusted:
        session = Session(trusted, policy=Policy(), log=MemoryLog())
        assert (await session.call("delete_everything")).output == "gone"


async def test_imported_calls_are_logged_like_local_ones() -> None:
    """Calls to imported tools get log rows with their status and full output."""
    log = MemoryLog()
    async with MCPToolbox(command=SERVER, prefix="up_") as remote:
        session = Session(remote, policy=Policy(allow=["up_echo"]), log=log)
        assert (await session.call("up_echo", {"text": "logged"})).ok
    [record] = log.calls()
    assert (record.tool, record.status, record.output) == ("up_echo", "ok", "logged")


def test_toolhall_toml_servers_are_listed_and_callable(tmp_path: Path) -> None:
    """`[[mcp.servers]]` in toolhall.toml: the CLI lists the imported tools and calls them through a session."""
    config = tmp_path / "toolhall.toml"
    config.write_text(
        "[tools.codegraph]\nenabled = false\n\n"
        '[policy]\nallow = ["git_echo"]\n\n'
        f'[[mcp.servers]]\nname = "fixture"\ncommand = {json.dumps(SERVER)}\nprefix = "git_"\n',
        encoding="utf-8",
    )
    toolhall = [sys.executable, "-m", "toolhall"]
    listed = subprocess.run([*toolhall, "list", "--json"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, check=False)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    names = {entry["name"] for entry in json.loads(listed.stdout)}
    assert {"git_echo", "git_delete_everything", "read_file"} <= names
    called = subprocess.run([*toolhall, "call", "git_echo", '{"text": "through the gateway"}', "--json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["output"] == "through the gateway"
