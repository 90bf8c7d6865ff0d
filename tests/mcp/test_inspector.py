"""The MCP Inspector's CLI mode (`npx @modelcontextprotocol/inspector --cli`) against `toolhall serve`.

Skips when npx is missing; skips locally (fails under `CI=true`) when the package cannot be fetched.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ._serving import INSPECTOR, Served, npx_or_skip, run_bounded, serve_env, serve_http, unavailable

_FETCH_FAILURE = re.compile(r"npm (error|ERR!)|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|E404|network", re.I)


def inspect(cwd: Path, *args: str, target: list[str]) -> tuple[int, dict[str, Any], str]:
    """Run the Inspector CLI once (JSON output); returns (exit code, parsed stdout, all output)."""
    npx = npx_or_skip()
    env = serve_env(npm_config_yes="true", npm_config_update_notifier="false")
    command = [npx, "-y", INSPECTOR, "--cli", "--format", "json", "-q", *args, "--", *target]
    code, output = run_bounded(command, timeout=180, env=env, cwd=cwd)
    line = next((x for x in output.splitlines() if x.startswith("{")), None)
    if line is None:
        if _FETCH_FAILURE.search(output) or code == -9:
            unavailable(f"the MCP Inspector could not be run (exit {code}): {output[-600:]}")
        raise AssertionError(f"no JSON from the Inspector (exit {code}): {output[-1500:]}")
    return code, json.loads(line), output


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A folder with a file to read."""
    (tmp_path / "notes.txt").write_text("hello inspector\n")
    return tmp_path


def stdio_target(workspace: Path) -> list[str]:
    """`toolhall serve` over stdio, as the Inspector should spawn it."""
    return [sys.executable, "-m", "toolhall", "serve", "--workspace", str(workspace)]


def test_stdio_tools_list_passes_the_strict_schema_lint(workspace: Path) -> None:
    """tools/list over stdio gives the standard tools, and `--strict` finds no error-severity schema problem."""
    code, listed, output = inspect(workspace, "--method", "tools/list", "--strict", target=stdio_target(workspace))
    names = {t["name"] for t in listed["result"]["tools"]}
    assert {"read_file", "write_file", "list_files", "search_files"} <= names
    assert code == 0, output[-1500:]
    assert re.search(r"\b0 errors\b", output), output[-1500:]


def test_stdio_tools_call_reads_a_file(workspace: Path) -> None:
    """tools/call over stdio runs read_file with `--tool-arg` and returns its text."""
    code, called, output = inspect(
        workspace, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=notes.txt",
        target=stdio_target(workspace),
    )  # fmt: skip
    assert code == 0, output[-1500:]
    result = called["result"]
    assert result["isError"] is False
    assert "hello inspector" in result["content"][0]["text"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`toolhall serve --http` for the HTTP tests of this module."""
    npx_or_skip()
    workspace = tmp_path_factory.mktemp("inspector-http")
    (workspace / "notes.txt").write_text("hello over http\n")
    with serve_http(workspace, token="inspector-t0ken") as running:
        yield running


def test_http_tools_call_with_the_token_header(served: Served, tmp_path: Path) -> None:
    """Over streamable HTTP with `--header "Authorization: Bearer …"`, tools/call works."""
    code, called, output = inspect(
        tmp_path, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=notes.txt",
        "--header", f"Authorization: Bearer {served.token}", target=[served.url],
    )  # fmt: skip
    assert code == 0, output[-1500:]
    assert "hello over http" in called["result"]["content"][0]["text"]


def test_http_without_the_token_is_refused(served: Served, tmp_path: Path) -> None:
    """Without the token the Inspector gets no tools: the 401 sends it to (non-interactive) OAuth and it stops."""
    code, answer, _ = inspect(tmp_path, "--method", "tools/list", target=[served.url])
    assert code != 0
    assert "result" not in answer and answer["error"]["code"] == "auth_required"
