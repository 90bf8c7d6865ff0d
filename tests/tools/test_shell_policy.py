"""End-to-end policy bypass attempts on run_shell / run_command through `Session(..., policy=Policy(...))`."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolhall import Policy, Session
from toolhall.tools import shell

pytestmark = pytest.mark.filterwarnings("ignore:GitWildMatchPattern:DeprecationWarning")

ALLOW_GIT_STATUS = ["run_shell(git status)", "run_shell(git status *)", "run_command(git status*)"]

BYPASSES = [
    "git status; touch pwned",
    "git status;touch pwned",
    "git status && touch pwned",
    "git status || touch pwned",
    "git status | touch pwned",
    "git status |& touch pwned",
    "git status & touch pwned",
    "git status\ntouch pwned",
    "git status\r\ntouch pwned",
    "git status \\\n; touch pwned",
    "git status $(touch pwned)",
    "git status `touch pwned`",
    'git status "$(touch pwned)"',
    "git status ${x:-$(touch pwned)}",
    "git status $((0 + $(touch pwned)))",
    "git status <(touch pwned)",
    "git status <<EOF\n$(touch pwned)\nEOF",
    "(touch pwned); git status",
    "{ touch pwned; }; git status",
    "git status; eval 'touch pwned'",
    "git status; sh -c 'touch pwned'",
    "f() { touch pwned; }; git status; f",
    "git status; echo 'unbalanced",
    "git status # harmless\ntouch pwned",
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def session(ws: Path, **rules: list[str]) -> Session:
    return Session(shell.toolbox(ws, shell=True), policy=Policy(**rules))


@pytest.mark.anyio
async def test_the_allowed_command_itself_runs(ws: Path) -> None:
    """Control: the exact allowed command runs without asking (so the bypass tests can fail)."""
    result = await session(ws, allow=ALLOW_GIT_STATUS).call("run_shell", {"command": "git status --short"})
    assert result.ok, result.error
    assert result.data["exit_code"] == 128  # not a repository: git itself ran


@pytest.mark.anyio
@pytest.mark.parametrize("command", BYPASSES)
async def test_an_allow_rule_for_one_command_does_not_cover_a_second(ws: Path, command: str) -> None:
    """`run_shell(git status *)` does not allow lists, pipelines, substitutions or groups running more."""
    result = await session(ws, allow=ALLOW_GIT_STATUS).call("run_shell", {"command": command})
    assert result.error is not None, result.data
    assert result.error.code == "approval_required"
    assert not (ws / "pwned").exists()


@pytest.mark.anyio
@pytest.mark.parametrize("command", ["echo hi; rm -rf sub", "echo $(rm -rf sub)", "echo `rm -rf sub`",
                                     "echo hi &&rm -rf sub", "if true; then rm -rf sub; fi"])
async def test_a_deny_rule_matches_any_command_of_the_line(ws: Path, command: str) -> None:
    """A deny rule wins when any simple command matches, even under an allow-everything rule."""
    (ws / "sub").mkdir()
    result = await session(ws, allow=["run_shell(**)"], deny=["run_shell(rm *)"]).call(
        "run_shell", {"command": command})
    assert result.error is not None and result.error.code == "denied"
    assert (ws / "sub").is_dir()


@pytest.mark.anyio
async def test_run_command_arguments_are_one_quoted_subject(ws: Path) -> None:
    """For run_command the subject is the quoted argv, so `;` inside an argument cannot end the match early."""
    s = session(ws, allow=["run_command(echo safe)"])
    assert (await s.call("run_command", {"argv": ["echo", "safe"]})).ok
    sneaky = await s.call("run_command", {"argv": ["echo", "safe; touch pwned"]})
    assert sneaky.error is not None and sneaky.error.code == "approval_required"
    assert not (ws / "pwned").exists()
