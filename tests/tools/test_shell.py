"""run_command / run_shell behaviour through the public toolbox, on every backend this machine offers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from toolhall import ConfigError, Toolbox, ToolResult
from toolhall.tools import shell

from ._shell_support import backend_fixture, require_backend

# Workspace still builds its globs with pathspec's deprecated "gitwildmatch" name (files engineer's module).
pytestmark = pytest.mark.filterwarnings("ignore:GitWildMatchPattern:DeprecationWarning")

BACKENDS = ["bwrap", "landlock", "none"]


backend = backend_fixture(BACKENDS)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    return root


def make(ws: Path, backend: str = "bwrap", **options: Any) -> Toolbox:
    require_backend(backend)
    return shell.toolbox(ws, isolation=backend, allow_unconfined=backend == "none", **options)  # type: ignore[arg-type]


async def run(tb: Toolbox, argv: list[str], **args: Any) -> ToolResult:
    return await tb.call("run_command", {"argv": argv, **args})


@pytest.mark.anyio
async def test_output_and_exit_code_come_back_separately(ws: Path, backend: str) -> None:
    """stdout and stderr are kept apart, a non-zero exit is an ok result, and isolation is named."""
    tb = make(ws, backend)
    result = await run(tb, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert result.ok, result.error
    assert result.data["exit_code"] == 3
    assert result.data["stdout"] == "out\n"
    assert result.data["stderr"] == "err\n"
    assert result.data["timed_out"] is False and result.data["truncated"] is False
    assert result.data["isolation"] == (backend if backend != "none" else "none (unconfined)")
    assert result.data["duration_ms"] > 0


@pytest.mark.anyio
async def test_cwd_is_the_workspace_folder_and_writes_land_there(ws: Path, backend: str) -> None:
    """Commands run in the requested workspace folder and may write inside the workspace."""
    tb = make(ws, backend)
    result = await run(tb, ["sh", "-c", "pwd; echo made > f.txt"], cwd="sub")
    assert result.data["stdout"].strip() == str(ws / "sub")
    assert (ws / "sub" / "f.txt").read_text() == "made\n"


@pytest.mark.anyio
async def test_shell_metacharacters_in_arguments_are_plain_text(ws: Path, backend: str) -> None:
    """run_command has no shell: `$(id)`, backticks, `;`, `&&`, `|` and `>` are printed, not run."""
    tb = make(ws, backend)
    words = ["$(id)", "`id`", "; touch pwned", "&& touch pwned", "| touch pwned", "> pwned"]
    result = await run(tb, ["echo", *words])
    assert result.data["stdout"] == " ".join(words) + "\n"
    assert not (ws / "pwned").exists()


@pytest.mark.anyio
async def test_environment_is_scrubbed_and_caller_additions_arrive(ws: Path, backend: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret in the host's environment does not leak; PATH is the safe one; env= adds variables."""
    monkeypatch.setenv("TOOLHALL_TEST_SECRET", "hunter2")
    tb = make(ws, backend, env={"FROM_HOST": "h"})
    result = await run(tb, ["env"], env={"FROM_CALL": "c"})
    lines = set(result.data["stdout"].splitlines())
    assert "FROM_HOST=h" in lines and "FROM_CALL=c" in lines
    assert f"PATH={shell.SAFE_PATH}" in lines
    assert "hunter2" not in result.data["stdout"]
    assert not any(line.startswith("HOME=/root") for line in lines)


@pytest.mark.anyio
async def test_files_left_in_tmpdir_never_reach_the_next_command(ws: Path, backend: str) -> None:
    """Each command gets an empty private TMPDIR, even though empty ones are reused between commands."""
    tb = make(ws, backend)
    first = await run(tb, ["sh", "-c", 'echo secret > "$TMPDIR/left"; echo "$TMPDIR"'])
    again = await run(tb, ["sh", "-c", 'ls -A "$TMPDIR"; echo "$TMPDIR"'])
    assert first.ok and again.ok
    assert "left" not in again.data["stdout"]
    assert again.data["stdout"].splitlines()[-1].startswith("/")
    if backend != "bwrap":  # bwrap's /tmp is a tmpfs of its own; the others live in the host's /tmp
        assert not Path(first.data["stdout"].strip()).exists()


@pytest.mark.anyio
async def test_stdin_is_fed_and_absent_stdin_never_hangs(ws: Path, backend: str) -> None:
    """`cat` gets the given stdin; without stdin it reads end-of-file at once."""
    tb = make(ws, backend)
    assert (await run(tb, ["cat"], stdin="abc\n")).data["stdout"] == "abc\n"
    with anyio.fail_after(10):
        result = await run(tb, ["cat"])
    assert result.data["exit_code"] == 0 and result.data["stdout"] == ""


@pytest.mark.anyio
async def test_timeout_is_a_timeout_error_carrying_partial_output(ws: Path, backend: str) -> None:
    """The command is killed at its deadline; the error message and data hold what it printed."""
    tb = make(ws, backend)
    with anyio.fail_after(10):
        result = await run(tb, ["sh", "-c", "echo started; sleep 30"], timeout=0.5)
    assert not result.ok and result.error is not None
    assert result.error.code == "timeout"
    assert "started" in result.error.message
    assert result.data["timed_out"] is True and result.data["stdout"] == "started\n"
    assert result.duration_ms < 5000


@pytest.mark.anyio
async def test_self_inflicted_signal_is_reported(ws: Path, backend: str) -> None:
    """A command killing itself with SIGSEGV is a normal result naming the signal (exit code 128+11)."""
    tb = make(ws, backend)
    result = await run(tb, ["sh", "-c", "kill -SEGV $$"])
    assert result.ok
    assert result.data["exit_code"] == 139 and result.data["signal"] == "SIGSEGV"


@pytest.mark.anyio
async def test_long_output_keeps_head_and_tail_with_the_middle_marked(ws: Path, backend: str) -> None:
    """Each stream is capped separately; the first and last lines survive, the middle is marked."""
    tb = make(ws, backend, max_output_bytes=200)
    result = await run(tb, ["sh", "-c", "echo FIRST; seq 1 20000; echo LAST; echo e >&2"])
    out = result.data["stdout"]
    assert out.startswith("FIRST\n") and out.endswith("LAST\n")
    assert "bytes omitted" in out and len(out) < 300
    assert result.data["truncated"] is True and result.data["stderr"] == "e\n"
    assert result.data["stdout_bytes"] > 100_000


@pytest.mark.anyio
async def test_unbounded_output_is_killed_at_the_read_limit(ws: Path, backend: str) -> None:
    """`yes` cannot run forever: past max_read_bytes it is killed and the result says why."""
    tb = make(ws, backend, max_read_bytes=4 << 20)
    with anyio.fail_after(20):
        result = await run(tb, ["yes"], timeout=60)
    assert not result.ok and result.error is not None
    assert result.error.details == {"reason": "output_limit"}
    assert result.data["stdout"].startswith("y\ny\n") and result.data["truncated"] is True


@pytest.mark.anyio
async def test_binary_output_is_returned_safely(ws: Path) -> None:
    """Bytes that are not UTF-8 come back with replacement characters, not an exception."""
    tb = make(ws)
    result = await run(tb, ["printf", "\\377\\376ok"])
    assert result.ok and result.data["stdout"] == "\ufffd\ufffdok"


@pytest.mark.anyio
async def test_a_gigabyte_on_stdout_finishes_with_a_clear_result(ws: Path) -> None:
    """1 GB of output is read up to the limit, then killed: bounded memory, no hang."""
    tb = make(ws)
    with anyio.fail_after(30):
        result = await run(tb, ["head", "-c", str(1 << 30), "/dev/zero"])
    assert result.error is not None and result.error.details == {"reason": "output_limit"}
    assert len(result.data["stdout"]) < 64_000


@pytest.mark.anyio
async def test_run_shell_runs_pipelines_and_is_off_by_default(ws: Path) -> None:
    """run_shell exists only when enabled, and then runs a real shell pipeline."""
    assert "run_shell" not in make(ws)
    tb = make(ws, shell=True)
    result = await tb.call("run_shell", {"command": "echo a && echo b | tr b c"})
    assert result.data["stdout"] == "a\nc\n"


@pytest.mark.anyio
async def test_run_shell_refuses_a_line_it_cannot_split(ws: Path) -> None:
    """An unbalanced quote cannot be checked by policy, so it is refused before running."""
    tb = make(ws, shell=True)
    result = await tb.call("run_shell", {"command": "echo 'unterminated; touch x"})
    assert result.error is not None and result.error.code == "invalid_input"
    assert not (ws / "x").exists()


# --- bad input --------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        ({"argv": []}, "invalid_input", "argv"),
        ({"argv": "ls; rm -rf ~"}, "invalid_input", "argv"),
        ({"argv": ["echo", "a\x00b"]}, "invalid_input", "argv[1] contains a NUL byte"),
        ({"argv": ["echo", "x" * (1 << 20)]}, "invalid_input", "argv[1] is 1048576 bytes"),
        ({"argv": ["definitely-not-a-program"]}, "execution_error", "command not found"),
        ({"argv": ["./sub"]}, "execution_error", "is a folder, not a program"),
        ({"argv": ["./data.txt"]}, "execution_error", "not executable"),
        ({"argv": ["ls"], "cwd": "../.."}, "denied", "outside the workspace"),
        ({"argv": ["ls"], "cwd": "/"}, "denied", "outside the workspace"),
        ({"argv": ["ls"], "cwd": "data.txt"}, "invalid_input", "not a folder"),
        ({"argv": ["true"], "timeout": 0}, "invalid_input", "timeout"),
        ({"argv": ["true"], "timeout": -1}, "invalid_input", "timeout"),
        ({"argv": ["true"], "timeout": 10**9}, "invalid_input", "timeout"),
        ({"argv": ["env"], "env": {"LD_PRELOAD": "/x.so"}}, "invalid_input", "LD_PRELOAD may not be set"),
        ({"argv": ["env"], "env": {"PATH": "."}}, "invalid_input", "PATH may not be set"),
        ({"argv": ["env"], "env": {"A B": "x"}}, "invalid_input", "not a valid name"),
        ({"argv": ["/opt/elsewhere/tool"]}, "execution_error", "does not exist inside the sandbox"),
    ],
)
async def test_bad_input_gets_a_clear_error(ws: Path, args: dict[str, Any], code: str, needle: str) -> None:
    """Each bad input is refused with the right code and a message naming what was wrong."""
    (ws / "data.txt").write_text("not a program")
    tb = make(ws)
    with anyio.fail_after(10):
        result = await tb.call("run_command", args)
    assert not result.ok and result.error is not None, result.data
    assert result.error.code == code
    assert needle in result.error.message


@pytest.mark.anyio
async def test_workspace_program_runs_and_a_planted_ls_does_not_shadow_the_system_one(ws: Path) -> None:
    """`./script` runs from the workspace, while a bare `ls` is the system one even if ws/ls exists."""
    script = ws / "ls"
    script.write_text("#!/bin/sh\necho planted\n")
    script.chmod(0o755)
    tb = make(ws)
    assert (await run(tb, ["./ls"])).data["stdout"] == "planted\n"
    assert "planted" not in (await run(tb, ["ls"])).data["stdout"]


def test_factory_rejects_bad_options(ws: Path) -> None:
    """Bad factory options raise ConfigError naming the option."""
    with pytest.raises(ConfigError, match="allow_unconfined"):
        shell.toolbox(ws, isolation="none")
    with pytest.raises(ConfigError, match="isolation="):
        shell.toolbox(ws, isolation="docker")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="rlimits key 'memory'"):
        shell.toolbox(ws, rlimits={"memory": 1})
    with pytest.raises(ConfigError, match="timeout"):
        shell.toolbox(ws, timeout=0)
    with pytest.raises(ConfigError, match="LD_PRELOAD"):
        shell.toolbox(ws, env={"LD_PRELOAD": "x"})


@pytest.mark.anyio
async def test_without_isolation_commands_are_refused_unless_unconfined_is_allowed(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a machine with no backend, calls are denied with the reason; the opt-in says so in every result."""
    from toolhall.tools import _isolation

    monkeypatch.setattr(_isolation, "best_backend", lambda: "none")
    refused = await run(shell.toolbox(ws), ["true"])
    assert refused.error is not None and refused.error.code == "denied"
    assert "allow_unconfined=True" in refused.error.message
    allowed = await run(shell.toolbox(ws, allow_unconfined=True), ["true"])
    assert allowed.ok and allowed.data["isolation"] == "none (unconfined)"


def test_tool_timeout_is_above_the_command_timeout(ws: Path) -> None:
    """The invocation layer's timeout sits above the largest command timeout, so the command dies first."""
    tb = make(ws, max_timeout=100)
    tool = tb["run_command"]
    assert tool.timeout is not None and tool.timeout > 100
    assert tool.input_schema["properties"]["timeout"]["maximum"] == 100

