"""The official MCP conformance suite (`@modelcontextprotocol/conformance`) against `toolhall serve --http`.

The runner has no option to send a header, so `bearer_preload.mjs` (loaded with `node --import`) adds the
token to its requests for the server's origin only; auth stays on, and a run without it is refused. Needs
Node 22 (`npx -p node@22`); skips locally when npx or the packages cannot be had, fails under `CI=true`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ._serving import CONFORMANCE, Served, npx_or_skip, run_bounded, serve_env, serve_http, unavailable
from .conformance_tools import SCENARIO_TOOLS

PRELOAD = Path(__file__).with_name("bearer_preload.mjs")
TOOLBOX = "tests.mcp.conformance_tools:toolbox"

#: Scenarios about tools, plus the transport and lifecycle ones toolhall must pass.
MUST_PASS = sorted(
    {*SCENARIO_TOOLS, "tools-list", "server-initialize", "ping", "logging-set-level", "dns-rebinding-protection",
     "server-sse-multiple-streams"}
)  # fmt: skip
#: Scenarios that do not apply: toolhall serves tools only (no resources, prompts or completions), and
#: `server-sse-polling` (pending SEP-1699) needs SSE resumability (an event store) and a `test_reconnection` tool.
NOT_APPLICABLE = sorted(
    {"resources-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
     "resources-subscribe", "resources-unsubscribe", "prompts-list", "prompts-get-simple", "prompts-get-with-args",
     "prompts-get-embedded-resource", "prompts-get-with-image", "completion-complete", "server-sse-polling"}
)  # fmt: skip


@dataclass
class SuiteRun:
    """One run of the conformance runner: checks per scenario, and what it printed."""

    checks: dict[str, list[dict[str, Any]]]
    output: str


def _conformance(served: Served, out: Path, *args: str, token: bool = True) -> tuple[int, str]:
    npx = npx_or_skip()
    env = serve_env(npm_config_yes="true", npm_config_update_notifier="false")
    if token:
        origin = served.url.rsplit("/", 1)[0]
        env.update(NODE_OPTIONS=f"--import {PRELOAD}", TOOLHALL_AUTH_ORIGIN=origin, TOOLHALL_AUTH_TOKEN=served.token)
    command = [npx, "-y", "-p", "node@22", "-p", CONFORMANCE, "conformance", "server", "--url", served.url, *args]
    return run_bounded([*command, "-o", str(out)], timeout=240, env=env, cwd=out)


def _collect(out: Path) -> dict[str, list[dict[str, Any]]]:
    checks: dict[str, list[dict[str, Any]]] = {}
    for found in sorted(out.glob("server-*/checks.json")):
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", found.parent.name.removeprefix("server-"))
        checks[scenario] = json.loads(found.read_text())
    return checks


def _require_ran(code: int, output: str, checks: dict[str, Any]) -> None:
    if not checks:
        unavailable(
            f"the conformance suite did not run (exit {code}; registry or Node 22 unavailable?): {output[-800:]}"
        )


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SuiteRun]:
    """The whole suite (active and pending) against the fixture toolbox, once for this module."""
    npx_or_skip()
    workspace = tmp_path_factory.mktemp("conformance-ws")
    out = tmp_path_factory.mktemp("conformance-out")
    with serve_http(workspace, "--toolbox", TOOLBOX, token="conformance-t0ken") as served:
        code, output = _conformance(served, out, "--suite", "all")
    checks = _collect(out)
    _require_ran(code, output, checks)
    yield SuiteRun(checks, output)


def _failures(checks: list[dict[str, Any]]) -> list[str]:
    return [f"{c['id']}: {c.get('errorMessage')}" for c in checks if c["status"] == "FAILURE"]


@pytest.mark.parametrize("scenario", MUST_PASS)
def test_scenario_passes(suite: SuiteRun, scenario: str) -> None:
    """Every tools scenario (and the lifecycle, logging and transport ones) passes every check."""
    checks = suite.checks.get(scenario)
    assert checks, f"{scenario} did not run; ran: {sorted(suite.checks)}"
    assert any(c["status"] == "SUCCESS" for c in checks), checks
    assert not _failures(checks), _failures(checks)


def test_every_scenario_tool_is_listed(suite: SuiteRun) -> None:
    """The tools the scenarios call exist (so an unknown tool's isError can never pass for a real result)."""
    listed = suite.checks["tools-list"][0]["details"]["tools"]
    assert set(SCENARIO_TOOLS.values()) <= set(listed)


def test_no_scenario_was_answered_with_an_unknown_tool(suite: SuiteRun) -> None:
    """No check saw toolhall's unknown-tool message in a scenario that must pass."""
    for scenario in MUST_PASS:
        assert "no tool named" not in json.dumps(suite.checks.get(scenario)), scenario


def test_error_scenario_returns_the_tools_own_message(suite: SuiteRun) -> None:
    """tools-call-error passed on the tool's own failure, not on some other error."""
    result = suite.checks["tools-call-error"][0]["details"]["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == "This tool intentionally returns an error for testing"


def test_dns_rebinding_is_refused_by_the_host_check_not_the_token(suite: SuiteRun) -> None:
    """With the token, a foreign Host gets 421 (the rebinding check) and a loopback Host gets 200."""
    by_id = {c["id"]: c for c in suite.checks["dns-rebinding-protection"]}
    assert by_id["localhost-host-rebinding-rejected"]["details"]["statusCode"] == 421
    assert by_id["localhost-host-valid-accepted"]["details"]["statusCode"] == 200


def test_only_resource_prompt_and_resumability_scenarios_fail(suite: SuiteRun) -> None:
    """The scenarios that fail are exactly the ones that do not apply to a tools-only server."""
    failing = sorted(s for s, checks in suite.checks.items() if _failures(checks))
    assert failing == NOT_APPLICABLE
    assert sorted(suite.checks) == sorted({*MUST_PASS, *NOT_APPLICABLE})


def test_runner_without_the_token_is_refused(suite: SuiteRun, tmp_path: Path) -> None:
    """Auth is not switched off for the suite: without the token even initialize fails with 401."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with serve_http(workspace, "--toolbox", TOOLBOX) as served:
        code, output = _conformance(served, tmp_path, "--scenario", "server-initialize", token=False)
    (checks,) = _collect(tmp_path).values()
    assert checks[0]["status"] == "FAILURE", (code, output[-500:])
    assert "a valid bearer token is required" in checks[0]["errorMessage"]
