"""Run commands in the workspace: no shell by default, confined, bounded and killable.

`run_command(argv, ...)` executes a program directly (shell metacharacters in arguments are plain text).
`run_shell(command, ...)` is an explicit `/bin/sh -c` tool, off unless `shell=True`; its policy subjects
are every simple command of the line (`a && b; $(c)` gives three), so an allow rule must cover them all.

Every command runs under the strongest confinement the machine offers (bubblewrap, else Landlock +
seccomp), with rlimits, a scrubbed environment, a private /tmp, no network unless enabled, and a deadline
after which the whole process tree is killed. Where no confinement exists the tools refuse to run unless
`allow_unconfined=True`, and then every result says `"isolation": "none"`. Results also list the
workspace paths the command could not change (`read_only`: `.git/hooks`, `.git/config`, `.toolhall`)
and, under Landlock, the folders whose entries it could not add or remove (`fixed_dirs`; see `_protect`).

Example:
    ```python
    tb = shell.toolbox(workspace="/srv/project")
    result = await tb.call("run_command", {"argv": ["pytest", "-q"], "timeout": 120})
    result.data["exit_code"], result.data["isolation"]
    ```
"""

# No `from __future__ import annotations`: the tools' parameter types use each factory's limits
# (`le=cfg.max_timeout`), which must be evaluated where the closure is defined.
import contextlib
import os
import re
import shlex
import shutil
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from .._errors import ConfigError, ToolCallError
from .._tool import Tool, tool
from .._toolbox import Toolbox
from .._workspace import Workspace
from . import _isolation, _proc, _protect
from ._cmdline import UNPARSEABLE, split_commands
from ._scratch import ScratchDirs

__all__ = ["DEFAULT_RLIMITS", "SAFE_PATH", "describe_isolation", "toolbox"]

describe_isolation = _isolation.describe_isolation

SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The PATH commands get: system folders only, never the workspace or `.`."""
DEFAULT_RLIMITS: Mapping[str, int] = {
    "cpu": 600, "address_space": 16 << 30, "file_size": 4 << 30, "open_files": 4096, "processes": 4096, "core": 0,
}
"""Per-command limits (seconds, bytes, counts); `rlimits=` entries replace these, None removes one."""
_INHERITED = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_DENIED = re.compile(
    r"^(PATH|HOME|TMPDIR|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|GCONV_PATH|LD_.*|"
    r"DYLD_.*|HOSTALIASES|LOCALDOMAIN|RES_OPTIONS|MALLOC_.*)$"
)
_MAX_ARG = 128 * 1024  # the kernel's MAX_ARG_STRLEN: one longer argument makes execve fail with E2BIG
_MAX_ARGV = 1 << 20
# Programs already found on SAFE_PATH. Only hits are remembered (one installed later is found then);
# one removed since fails at exec instead, with the system's own "No such file" message.
_FOUND: set[str] = set()
Isolation = Literal["auto", "bwrap", "landlock", "none"]


@dataclass(frozen=True, kw_only=True, slots=True)
class _Config:
    ws: Workspace
    backend: str
    usable: bool
    refusal: str
    network: bool
    timeout: float
    max_timeout: float
    max_output_bytes: int
    max_read_bytes: int
    limits: dict[str, int]
    env: dict[str, str] = field(default_factory=dict)
    scratch: ScratchDirs = field(default_factory=ScratchDirs)


def toolbox(
    workspace: Workspace | str | os.PathLike[str],
    *,
    shell: bool = False,
    isolation: Isolation = "auto",
    allow_unconfined: bool = False,
    network: bool = False,
    timeout: float | None = None,
    max_timeout: float = 1800.0,
    max_output_bytes: int = 32_000,
    max_read_bytes: int = 64 << 20,
    rlimits: Mapping[str, int | None] | None = None,
    env: Mapping[str, str] | None = None,
) -> Toolbox:
    """The shell toolbox: `run_command`, plus `run_shell` when `shell=True`.

    Args:
        workspace: The folder commands run in (a `Workspace` or a path); the only writable host path.
        shell: Also offer `run_shell` (a `/bin/sh -c` command line).
        isolation: `"auto"` (strongest available), or force `"bwrap"`, `"landlock"` or `"none"`.
        allow_unconfined: Run commands even when no confinement is available (`isolation="none"` needs it).
        network: Let commands use the network (otherwise they get none, not even loopback).
        timeout: Default seconds per command when the call gives none (120, or max_timeout if lower).
        max_timeout: The largest `timeout` a call may ask for.
        max_output_bytes: Bytes kept per stream (half head, half tail; the middle is marked).
        max_read_bytes: Total output after which the command is killed (`yes` cannot run forever).
        rlimits: Overrides for `DEFAULT_RLIMITS` (keys `cpu`, `address_space`, `file_size`, `open_files`,
            `processes`, `core`); a None value removes that limit.
        env: Extra environment variables every command gets (the host's own environment never leaks).

    Raises:
        ConfigError: A bad option, or a forced backend this machine cannot provide.
    """
    ws = Workspace.coerce(workspace)
    if timeout is None:
        timeout = min(120.0, max_timeout) if isinstance(max_timeout, int | float) else 120.0
    _check_numbers(timeout=timeout, max_timeout=max_timeout, max_output_bytes=max_output_bytes,
                   max_read_bytes=max_read_bytes)
    if timeout > max_timeout:
        raise ConfigError(f"shell timeout={timeout} is above max_timeout={max_timeout}")
    backend, usable, refusal = _choose(isolation, allow_unconfined)
    cfg = _Config(ws=ws, backend=backend, usable=usable, refusal=refusal, network=network, timeout=timeout,
                  max_timeout=max_timeout, max_output_bytes=max_output_bytes, max_read_bytes=max_read_bytes,
                  limits=_limits(rlimits), env=_check_env(env or {}, where="shell env"))
    tools = [_run_command_tool(cfg)]
    if shell:
        tools.append(_run_shell_tool(cfg))
    return Toolbox(tools, name="shell")


def _check_numbers(**values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(f"shell {name}={value!r} must be a positive number")


def _choose(isolation: str, allow_unconfined: bool) -> tuple[str, bool, str]:
    if isolation not in ("auto", "bwrap", "landlock", "none"):
        raise ConfigError(f"shell isolation={isolation!r} is not one of 'auto', 'bwrap', 'landlock', 'none'")
    if sys.platform != "linux":
        caps: dict[str, Any] = {}
        best = "none"
    else:
        caps = _isolation.detect()
        best = _isolation.best_backend()
    if isolation == "none" and not allow_unconfined:
        raise ConfigError("shell isolation='none' runs commands unconfined: also pass allow_unconfined=True")
    if isolation in ("bwrap", "landlock"):
        if not caps.get(isolation, {}).get("available") or not caps.get("seccomp", {}).get("available"):
            raise ConfigError(f"shell isolation={isolation!r} is not available here: {_why(caps)}")
        return isolation, True, ""
    backend = "none" if isolation == "none" else best
    if backend == "none" and not allow_unconfined:
        return "none", False, (
            f"no command isolation is available on this machine ({_why(caps)}); install bubblewrap, or "
            "configure the shell toolbox with allow_unconfined=True to run commands unconfined"
        )
    return backend, True, ""


def _why(caps: Mapping[str, Any]) -> str:
    if not caps:
        return f"isolation needs Linux, this is {sys.platform}"
    return (f"bwrap: {caps['bwrap']['detail']}; landlock ABI {caps['landlock']['abi']}; "
            f"seccomp {'available' if caps['seccomp']['available'] else 'unavailable (libseccomp2)'}")


def _limits(overrides: Mapping[str, int | None] | None) -> dict[str, int]:
    limits: dict[str, int | None] = dict(DEFAULT_RLIMITS)
    for key, value in (overrides or {}).items():
        if key not in _isolation.RLIMITS:
            raise ConfigError(f"shell rlimits key {key!r} is unknown; allowed: {', '.join(_isolation.RLIMITS)}")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ConfigError(f"shell rlimits[{key!r}]={value!r} must be a non-negative integer or None")
        limits[key] = value
    return {k: v for k, v in limits.items() if v is not None}


def _check_env(env: Mapping[str, str], *, where: str) -> dict[str, str]:
    for name, value in env.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise _bad(where, f"variable name {name!r} is not a valid name (letters, digits, '_')")
        if _ENV_DENIED.match(name):
            raise _bad(where, f"{name} may not be set: it changes how every program is found or loaded")
        if not isinstance(value, str) or "\x00" in value:
            raise _bad(where, f"{name} must be text without NUL bytes")
    return dict(env)


def _bad(where: str, message: str) -> Exception:
    text = f"{where}: {message}"
    return ConfigError(text) if where == "shell env" else ToolCallError(text, code="invalid_input")


# --- the tools --------------------------------------------------------------------------------------------


def _argv_subject(args: Mapping[str, Any]) -> str:
    argv = args.get("argv") or []
    return shlex.join(str(a) for a in argv)


def _shell_subject(args: Mapping[str, Any]) -> list[str]:
    return split_commands(str(args.get("command", "")))


def _run_command_tool(cfg: _Config) -> Tool:
    @tool(timeout=cfg.max_timeout + 30, subject=_argv_subject, open_world=cfg.network)
    async def run_command(argv: Annotated[list[str], Field(min_length=1)], cwd: str = ".",
                          timeout: Annotated[float, Field(gt=0, le=cfg.max_timeout)] = cfg.timeout,
                          env: dict[str, str] | None = None, stdin: str | None = None) -> dict[str, Any]:
        """Run a program with arguments (no shell: `;`, `|`, `$(...)` in arguments are plain text).

        Non-zero exit codes are normal results; read `exit_code`, `stdout` and `stderr`.

        Args:
            argv: The program and its arguments, e.g. ["pytest", "-q", "tests/"].
            cwd: The folder to run in, relative to the workspace.
            timeout: Seconds before the command and everything it started are killed.
            env: Extra environment variables for this command.
            stdin: Text to send on standard input (none by default).
        """
        return await _execute(cfg, argv, cwd=cwd, timeout=timeout, env=env, stdin=stdin)

    return run_command


def _run_shell_tool(cfg: _Config) -> Tool:
    @tool(timeout=cfg.max_timeout + 30, subject=_shell_subject, open_world=cfg.network)
    async def run_shell(command: Annotated[str, Field(min_length=1)], cwd: str = ".",
                        timeout: Annotated[float, Field(gt=0, le=cfg.max_timeout)] = cfg.timeout,
                        env: dict[str, str] | None = None, stdin: str | None = None) -> dict[str, Any]:
        """Run a command line with /bin/sh (pipes, `&&`, redirections); prefer run_command when you can.

        Args:
            command: The shell command line, e.g. "pytest -q 2>&1 | tail -n 20".
            cwd: The folder to run in, relative to the workspace.
            timeout: Seconds before the command and everything it started are killed.
            env: Extra environment variables for this command.
            stdin: Text to send on standard input (none by default).
        """
        if "\x00" in command:
            raise ToolCallError("command contains a NUL byte", code="invalid_input")
        if split_commands(command) == [UNPARSEABLE]:
            raise ToolCallError(
                "command could not be split into simple commands (unbalanced quotes, `case`, or an "
                "unsupported construct), so policy cannot check it; simplify it or use run_command",
                code="invalid_input",
            )
        return await _execute(cfg, ["/bin/sh", "-c", command], cwd=cwd, timeout=timeout, env=env, stdin=stdin)

    return run_shell


# --- running ----------------------------------------------------------------------------------------------


async def _execute(cfg: _Config, argv: Sequence[str], *, cwd: str, timeout: float,
                   env: Mapping[str, str] | None, stdin: str | None) -> dict[str, Any]:
    if not cfg.usable:
        raise ToolCallError(cfg.refusal, code="denied", details={"reason": "no_isolation"})
    _check_argv(argv)
    workdir = cfg.ws.resolve(cwd)
    if not workdir.is_dir():
        raise ToolCallError(f"cwd {cwd!r} is not a folder in the workspace", code="invalid_input")
    _check_program(cfg, argv[0], workdir)
    extra = {**cfg.env, **_check_env(env or {}, where="env")}
    grants = _protect.grants_for(cfg.backend, str(cfg.ws.root))  # per command: entries come and go
    tmp = None if cfg.backend == "bwrap" else cfg.scratch.acquire()  # bwrap mounts its own tmpfs
    try:
        done = await _launch(cfg, argv, workdir=str(workdir), tmp=tmp, timeout=timeout, extra_env=extra,
                             stdin=stdin.encode() if stdin is not None else None, grants=grants)
    except OSError as exc:
        raise ToolCallError(f"cannot start {argv[0]!r}: {exc.strerror or exc}", code="execution_error",
                            details={"errno": exc.errno}) from exc
    finally:
        if tmp is not None:
            cfg.scratch.release(tmp)
    return _outcome(cfg, done, timeout, grants)


def _check_argv(argv: Sequence[str]) -> None:
    total = 0
    for i, arg in enumerate(argv):
        if "\x00" in arg:
            raise ToolCallError(f"argv[{i}] contains a NUL byte, which no program can receive",
                                code="invalid_input")
        size = len(arg.encode("utf-8", "surrogateescape"))
        if size >= _MAX_ARG:
            raise ToolCallError(f"argv[{i}] is {size} bytes; one argument may be at most {_MAX_ARG - 1} "
                                "(pass large data through stdin or a file)", code="invalid_input")
        total += size + 1
    if total > _MAX_ARGV:
        raise ToolCallError(f"argv totals {total} bytes; at most {_MAX_ARGV}", code="invalid_input")
    if not argv[0]:
        raise ToolCallError("argv[0] (the program) is empty", code="invalid_input")


def _check_program(cfg: _Config, program: str, workdir: Path) -> None:
    """Fail early with a clear message; the sandbox would only say `execvp: No such file`."""
    if "/" not in program:
        if program in _FOUND:  # the exec searches PATH itself; this check only words the common error
            return
        if shutil.which(program, path=SAFE_PATH) is None:
            raise ToolCallError(f"command not found: {program!r} (searched {SAFE_PATH})",
                                code="execution_error", details={"reason": "command_not_found"})
        _FOUND.add(program)
        return
    path = Path(program) if program.startswith("/") else workdir / program
    inside = cfg.ws.root == path or cfg.ws.root in path.parents
    if cfg.backend != "none" and not inside and not program.startswith(_isolation.SYSTEM_RO):
        raise ToolCallError(f"{program!r} is outside the workspace and the system folders, so it does not "
                            "exist inside the sandbox", code="execution_error",
                            details={"reason": "command_not_found"})
    if inside:
        cfg.ws.resolve(path)  # a symlink out of the workspace is refused here (denied)
    if path.is_dir():
        raise ToolCallError(f"{program!r} is a folder, not a program", code="execution_error",
                            details={"reason": "not_executable"})
    if not path.exists():
        raise ToolCallError(f"command not found: {program!r}", code="execution_error",
                            details={"reason": "command_not_found"})
    if not os.access(path, os.X_OK):
        raise ToolCallError(f"{program!r} is not executable (chmod +x it, or run it through its interpreter)",
                            code="execution_error", details={"reason": "not_executable"})


def _environment(cfg: _Config, home: str, extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: os.environ[k] for k in _INHERITED if k in os.environ}
    env.setdefault("LANG", "C.UTF-8")
    env.update(PATH=SAFE_PATH, HOME=home, TMPDIR=home, TERM="dumb")
    env.update(extra)
    return env


async def _launch(cfg: _Config, argv: Sequence[str], *, workdir: str, tmp: str | None, timeout: float,
                  extra_env: Mapping[str, str], stdin: bytes | None,
                  grants: _protect.Grants | None) -> _proc.Completed:
    root = str(cfg.ws.root)
    opts: dict[str, Any] = {"timeout": timeout, "stdin": stdin, "max_output_bytes": cfg.max_output_bytes,
                            "max_read_bytes": cfg.max_read_bytes}
    if cfg.backend == "bwrap":
        bpf = _isolation.seccomp_bpf(cfg.network)
        r, w = os.pipe()
        try:
            os.write(w, bpf)  # a few KB: fits the pipe buffer, so this never blocks
            os.close(w)
            full = _isolation.prlimit_argv(cfg.limits) + _isolation.bwrap_argv(
                argv, workspace=root, cwd=workdir, network=cfg.network, seccomp_fd=r)
            env = _environment(cfg, "/tmp", extra_env)  # noqa: S108 - the sandbox's private tmpfs
            return await _proc.run(full, cwd=workdir, env=env, pass_fds=(r,), **opts)
        finally:
            os.close(r)
    assert tmp is not None
    env = _environment(cfg, tmp, extra_env)
    if cfg.backend == "landlock":
        assert grants is not None
        full = _isolation.landlock_argv(argv, workspace=root, tmp=tmp, network=cfg.network, limits=cfg.limits,
                                        workspace_grants=(grants.read, grants.write))
    else:
        full = _isolation.prlimit_argv(cfg.limits) + list(argv)
    return await _proc.run(full, cwd=workdir, env=env, **opts)


def _outcome(cfg: _Config, done: _proc.Completed, timeout: float, grants: _protect.Grants | None) -> dict[str, Any]:
    unenforced = ["processes"] if "processes" in cfg.limits and os.geteuid() == 0 else []
    sig = done.signal
    if cfg.backend == "bwrap" and sig is None and done.exit_code is not None and done.exit_code > 128:
        # bwrap reports a signal death as 128+N, exactly as a shell's `$?` does; read it the same way.
        with contextlib.suppress(ValueError):
            sig = signal.Signals(done.exit_code - 128).name
    data: dict[str, Any] = {
        "exit_code": done.exit_code, "signal": sig, "stdout": done.stdout, "stderr": done.stderr,
        "timed_out": done.timed_out, "truncated": done.truncated, "duration_ms": round(done.duration_ms, 1),
        "isolation": cfg.backend if cfg.backend != "none" else "none (unconfined)",
        "network": cfg.network, "stdout_bytes": done.stdout_bytes, "stderr_bytes": done.stderr_bytes,
        "limits": dict(cfg.limits), "unenforced_limits": unenforced,
        "kill_ms": round(done.kill_ms, 1) if done.kill_ms is not None else None,
        "read_only": grants.read_only if grants else [], "fixed_dirs": grants.fixed_dirs if grants else [],
    }
    if done.killed_by == "timeout":
        raise ToolCallError(
            f"command timed out after {timeout:g}s and was killed with everything it started; output so far:"
            f"\n--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr}",
            code="timeout", details={"timeout": timeout}, data=data,
        )
    if done.killed_by == "output_limit":
        raise ToolCallError(
            f"command was killed after printing {done.stdout_bytes + done.stderr_bytes} bytes (the limit is "
            f"{cfg.max_read_bytes}); head and tail of its output are in the result data",
            code="execution_error", details={"reason": "output_limit"}, data=data,
        )
    return data
