"""Task chains: a folder of task files under `.lore/chains/<CHAIN-ID>/`, moved through a fixed life cycle.

A task file is Markdown with frontmatter (`id`, `title`, `status`, `type` impl/control, `created`). Its
status only moves forward, one step at a time: pending → in_progress → complete → approved. The file
tools cannot write under `.lore/chains/` (a default deny), so these tools are the only way to move a
task. Each tool carries the roles that may use it: a `control` worker plans, starts, approves and
spawns; an `impl` worker reads its task and completes it.

Example:
    ```python
    tb = chains.toolbox(project=".", spawn_command=["claude", "-p", "Do task {task_id} of {chain_id}"])
    impl_tools = tb.for_role("impl")  # chain:status, task:status, task:complete
    ```
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import re
import secrets
import shlex
import string
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from .._context import ToolContext
from .._errors import ConfigError, ToolCallError
from .._tool import Tool, tool
from .._toolbox import Toolbox
from .._workspace import Workspace
from . import _frontmatter as fm
from ._fileio import owned_fd
from ._proc import spawn as _proc_spawn

__all__ = ["LIFE_CYCLE", "ROLES", "new_task", "toolbox"]

Status = Literal["pending", "in_progress", "complete", "approved"]
LIFE_CYCLE: tuple[Status, ...] = ("pending", "in_progress", "complete", "approved")
"""Task statuses in order; a task moves one step forward at a time."""
ROLES: dict[str, frozenset[str]] = {
    "chain:status": frozenset({"control", "impl"}),
    "task:status": frozenset({"impl"}),
    "task:list": frozenset({"control"}),
    "task:start": frozenset({"control"}),
    "task:complete": frozenset({"impl"}),
    "task:approve": frozenset({"control"}),
    "spawn_impl_session": frozenset({"control"}),
}
"""Which roles may use each chain tool."""
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
_NOT_TASKS = {"readme.md", "chain.md", "index.md"}


def _valid_id(value: str) -> str:
    if not _ID_RE.match(value):
        raise ValueError(f"{value!r} is not an id: use letters, digits, '_', '.', '-' (up to 128, "
                         "starting with a letter or digit)")
    return value


Id = Annotated[str, AfterValidator(_valid_id), Field(examples=["CH-1"])]


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class _Chains:
    """The chains folder of one project."""

    def __init__(self, project: Path, lore: str, spawn: tuple[str, ...] | None) -> None:
        self.project = project
        self.folder = project / lore / "chains"
        self.spawn = spawn

    def workspace(self) -> Workspace:
        if not self.folder.is_dir():
            raise ToolCallError(f"no chains folder at {self.folder}", code="not_found",
                                details={"reason": "no_chains"})
        return Workspace(self.folder)

    @contextmanager
    def locked(self, chain_id: str) -> Iterator[Workspace]:
        """The workspace, with the chain folder locked against other processes changing its tasks."""
        ws = self.workspace()
        try:
            dfd = ws.open_dir(chain_id)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolCallError(f"no chain {chain_id!r} in {self.folder}", code="not_found",
                                details={"reason": "no_chain", "chain_id": chain_id}) from None
        with owned_fd(dfd):
            fcntl.flock(dfd, fcntl.LOCK_EX)
            yield ws

    def tasks(self, ws: Workspace, chain_id: str) -> list[dict[str, Any]]:
        """Every task in the chain, sorted by id, each with its file name, metadata and body."""
        with owned_fd(ws.open_dir(chain_id)) as dfd, os.scandir(dfd) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".md") and e.is_file(follow_symlinks=False)
                           and e.name.lower() not in _NOT_TASKS)
        found = []
        for name in names:
            rel = f"{chain_id}/{name}"
            doc = fm.split(_read(ws, rel), rel)
            meta = fm.to_plain(fm.parse(doc, rel))
            found.append({"file": name, "id": str(meta.get("id") or name[:-3]), "meta": meta, "doc": doc})
        return sorted(found, key=lambda t: t["id"])

    def task(self, ws: Workspace, chain_id: str, task_id: str) -> dict[str, Any]:
        for item in self.tasks(ws, chain_id):
            if item["id"] == task_id:
                return item
        raise ToolCallError(f"no task {task_id!r} in chain {chain_id!r}", code="not_found",
                            details={"reason": "no_task", "chain_id": chain_id, "task_id": task_id})

    def move(self, ws: Workspace, chain_id: str, task: dict[str, Any], to: Status,
             changes: dict[str, Any], section: tuple[str, str] | None = None) -> dict[str, Any]:
        """Advance a task one step in the life cycle, recording `changes` (and a body section)."""
        current = task["meta"].get("status") or "pending"
        expected = LIFE_CYCLE[LIFE_CYCLE.index(to) - 1]
        if current != expected:
            raise ToolCallError(
                f"task {task['id']!r} is {current!r}; moving it to {to!r} needs it to be {expected!r} "
                f"(life cycle: {' → '.join(LIFE_CYCLE)})", code="execution_error",
                details={"reason": "illegal_transition", "from": current, "to": to})
        doc = fm.apply_changes(task["doc"], {"status": to, **changes}, task["file"])
        if section is not None:
            body = doc.body.rstrip("\n")
            doc = fm.Document(head=doc.head, yaml=doc.yaml, tail=doc.tail,
                              body=f"{body}\n\n## {section[0]}\n\n{section[1].strip()}\n".lstrip("\n"))
        ws.atomic_write(f"{chain_id}/{task['file']}", fm.join(doc).encode("utf-8", errors="surrogateescape"))
        return {"chain_id": chain_id, "task_id": task["id"], "status": to, "previous": current}


def _read(ws: Workspace, rel: str) -> str:
    with owned_fd(ws.open(rel, os.O_RDONLY)) as fd:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="surrogateescape")


def _brief(task: dict[str, Any]) -> dict[str, Any]:
    meta = task["meta"]
    return {"id": task["id"], "title": meta.get("title"), "status": meta.get("status") or "pending",
            "type": meta.get("type")}


def new_task(project: str | os.PathLike[str], chain_id: str, task_id: str, title: str, *,
             type: Literal["impl", "control"] = "impl", body: str = "", lore: str = ".lore") -> Path:  # noqa: A002
    """Create a pending task file (for planners and tests; the tools never create tasks).

    Raises:
        ValueError: an id is malformed, or the task exists already.
    """
    for value in (chain_id, task_id):
        _valid_id(value)
    ws = Workspace(Path(os.fspath(project)) / lore / "chains", create=True)
    meta = {"id": task_id, "title": title, "status": "pending", "type": type, "created": _now()}
    doc = fm.apply_changes(fm.Document(head="", yaml="", tail="", body=body), meta)
    rel = f"{chain_id}/{task_id}.md"
    pfd, name = ws.open_parent(rel, create=True)
    with owned_fd(pfd):
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                         dir_fd=pfd)
        except FileExistsError:
            raise ValueError(f"task {task_id!r} already exists in chain {chain_id!r}") from None
        with owned_fd(fd):
            os.write(fd, fm.join(doc).encode("utf-8"))
    return ws.root / rel


def toolbox(
    project: str | os.PathLike[str],
    spawn_command: str | list[str] | None = None,
    *,
    lore: str = ".lore",
) -> Toolbox:
    """The chain tools over `<project>/<lore>/chains/`, each carrying its roles (see `ROLES`).

    Args:
        project: The project folder.
        spawn_command: The command `spawn_impl_session` runs (argv list or a shell-like string), with
            `{chain_id}`, `{task_id}`, `{session_id}`, `{project}` and `{task_file}` filled in; the same
            values are in its environment as `TOOLHALL_CHAIN_ID`, `TOOLHALL_TASK_ID`, ....
        lore: The lore folder inside the project.

    Raises:
        ConfigError: `spawn_command` is empty or uses an unknown placeholder.
    """
    spawn = parse_command(spawn_command) if spawn_command is not None else None
    chains = _Chains(Path(os.fspath(project)).expanduser().absolute(), lore, spawn)
    return Toolbox(_tools(chains), name="chains")


def _tools(ch: _Chains) -> list[Tool]:  # noqa: C901 - one closure per tool, each short
    ro: dict[str, Any] = {"read_only": True, "destructive": False, "idempotent": True, "open_world": False}
    rw: dict[str, Any] = {"destructive": False, "open_world": False, "subject": "task_id"}

    @tool(name="chain:status", roles=ROLES["chain:status"], subject="chain_id", **ro)
    def chain_status(chain_id: Id) -> dict[str, Any]:
        """Show a chain's progress: every task's status and how many are in each state.

        Args:
            chain_id: The chain's id (its folder name under `.lore/chains/`).
        """
        with ch.locked(chain_id) as ws:
            tasks = [_brief(t) for t in ch.tasks(ws, chain_id)]
        counts = {s: sum(1 for t in tasks if t["status"] == s) for s in LIFE_CYCLE}
        done = bool(tasks) and counts["approved"] == len(tasks)
        return {"chain_id": chain_id, "tasks": tasks, "counts": counts, "done": done}

    @tool(name="task:status", roles=ROLES["task:status"], subject="task_id", **ro)
    def task_status(chain_id: Id, task_id: Id) -> dict[str, Any]:
        """Read one task: its fields, status and description.

        Args:
            chain_id: The chain's id.
            task_id: The task's id.
        """
        with ch.locked(chain_id) as ws:
            task = ch.task(ws, chain_id, task_id)
        return {**_brief(task), "chain_id": chain_id, "meta": task["meta"], "body": task["doc"].body}

    @tool(name="task:list", roles=ROLES["task:list"], subject="chain_id", **ro)
    def task_list(chain_id: Id, status: Status | None = None) -> dict[str, Any]:
        """List a chain's tasks, optionally only those in one status.

        Args:
            chain_id: The chain's id.
            status: Only tasks in this status.
        """
        with ch.locked(chain_id) as ws:
            tasks = [_brief(t) for t in ch.tasks(ws, chain_id)]
        return {"chain_id": chain_id, "tasks": [t for t in tasks if status is None or t["status"] == status]}

    @tool(name="task:start", roles=ROLES["task:start"], **rw)
    def task_start(chain_id: Id, task_id: Id, ctx: ToolContext) -> dict[str, Any]:
        """Start a pending task (pending → in_progress).

        Args:
            chain_id: The chain's id.
            task_id: The task's id.
        """
        with ch.locked(chain_id) as ws:
            task = ch.task(ws, chain_id, task_id)
            return ch.move(ws, chain_id, task, "in_progress", _stamp("started", ctx))

    @tool(name="task:complete", roles=ROLES["task:complete"], **rw)
    def task_complete(
        chain_id: Id, task_id: Id, summary: Annotated[str, Field(min_length=1)], ctx: ToolContext
    ) -> dict[str, Any]:
        """Mark your task complete (in_progress → complete) with a summary of what was done.

        Args:
            chain_id: The chain's id.
            task_id: The task's id.
            summary: What was done, what changed, and anything the reviewer should check.
        """
        with ch.locked(chain_id) as ws:
            task = ch.task(ws, chain_id, task_id)
            return ch.move(ws, chain_id, task, "complete", _stamp("completed", ctx), ("Summary", summary))

    @tool(name="task:approve", roles=ROLES["task:approve"], **rw)
    def task_approve(chain_id: Id, task_id: Id, ctx: ToolContext, note: str | None = None) -> dict[str, Any]:
        """Approve a completed task (complete → approved).

        Args:
            chain_id: The chain's id.
            task_id: The task's id.
            note: A review note to keep with the task.
        """
        with ch.locked(chain_id) as ws:
            task = ch.task(ws, chain_id, task_id)
            section = ("Approval", note) if note and note.strip() else None
            return ch.move(ws, chain_id, task, "approved", _stamp("approved", ctx), section)

    @tool(name="spawn_impl_session", roles=ROLES["spawn_impl_session"], destructive=False, open_world=True,
          subject="task_id")
    def spawn_impl_session(chain_id: Id, task_id: Id, ctx: ToolContext) -> dict[str, Any]:
        """Start an implementation worker on a task, in the background; the task moves to in_progress.

        Args:
            chain_id: The chain's id.
            task_id: The task's id (an impl task that is pending or in progress).
        """
        return _spawn_session(ch, chain_id, task_id, ctx)

    return [chain_status, task_status, task_list, task_start, task_complete, task_approve, spawn_impl_session]


def _stamp(what: str, ctx: ToolContext) -> dict[str, Any]:
    stamp: dict[str, Any] = {what: _now()}
    if ctx.worker:
        stamp[f"{what}_by"] = ctx.worker
    return stamp


def _spawn_session(ch: _Chains, chain_id: str, task_id: str, ctx: ToolContext) -> dict[str, Any]:
    if ch.spawn is None:
        raise ToolCallError("no spawn command configured: set [tools.chains] spawn_command in toolhall.toml "
                            "or pass spawn_command= to chains.toolbox()", code="execution_error",
                            details={"reason": "no_spawn_command"})
    with ch.locked(chain_id) as ws:
        task = ch.task(ws, chain_id, task_id)
        status = task["meta"].get("status") or "pending"
        if task["meta"].get("type") == "control":
            raise ToolCallError(f"task {task_id!r} is a control task; only impl tasks get impl sessions",
                                code="execution_error", details={"reason": "not_impl_task"})
        if status not in ("pending", "in_progress"):
            raise ToolCallError(f"task {task_id!r} is {status!r}; only pending or in_progress tasks can be "
                                "worked on", code="execution_error",
                                details={"reason": "illegal_transition", "from": status})
        task_file = ws.root / chain_id / task["file"]
        spawned = launch(ch.spawn, project=ch.project, chain_id=chain_id, task_id=task_id,
                         task_file=task_file, parent_session=ctx.session_id)
        record = {"session_id": spawned.session_id, "session_pid": spawned.pid, "spawned": _now()}
        if status == "pending":
            ch.move(ws, chain_id, task, "in_progress", {**record, **_stamp("started", ctx)})
        else:
            doc = fm.apply_changes(task["doc"], record, task["file"])
            ws.atomic_write(f"{chain_id}/{task['file']}", fm.join(doc).encode("utf-8", errors="surrogateescape"))
    return {"chain_id": chain_id, "task_id": task_id, "session_id": spawned.session_id, "pid": spawned.pid,
            "command": spawned.argv, "log": str(spawned.log), "status": "in_progress"}


# -- spawning ------------------------------------------------------------------------------------------

_PLACEHOLDERS = frozenset({"chain_id", "task_id", "session_id", "project", "task_file"})
# A tiny launcher run through _proc.spawn: it starts the worker in its own session with output going to a
# log file, reports the worker's pid (or why exec failed), and exits, so the worker outlives this call
# without leaving a zombie or a pipe nobody reads.
_LAUNCHER = """
import os, sys
log, argv = sys.argv[1], sys.argv[2:]
r, w = os.pipe2(os.O_CLOEXEC)
pid = os.fork()
if pid == 0:
    os.close(r)
    try:
        os.setsid()
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(w, (exc.strerror or str(exc)).encode())
    os._exit(127)
os.close(w)
err = os.read(r, 4096)
if err:
    sys.stderr.write(err.decode(errors="replace"))
    sys.exit(1)
print(pid)
"""


def parse_command(command: str | Sequence[str]) -> tuple[str, ...]:
    """Check a spawn command: an argv list (or a shell-like string split with `shlex`) of known placeholders.

    Raises:
        ConfigError: the command is empty, not text, or uses an unknown `{placeholder}`.
    """
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv or not all(isinstance(a, str) for a in argv) or not argv[0].strip():
        raise ConfigError(f"[tools.chains] spawn_command must be a non-empty list of strings, got {command!r}")
    for arg in argv:
        try:
            fields = {name for _, name, _, _ in string.Formatter().parse(arg) if name is not None}
        except ValueError as exc:
            raise ConfigError(
                f"[tools.chains] spawn_command argument {arg!r}: {exc} (write {{{{ for a brace)"
            ) from None
        unknown = fields - _PLACEHOLDERS
        if unknown:
            raise ConfigError(f"[tools.chains] spawn_command argument {arg!r} uses unknown placeholder(s) "
                              f"{sorted(unknown)}; allowed: {sorted(_PLACEHOLDERS)}")
    return tuple(argv)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Spawned:
    session_id: str
    pid: int
    argv: list[str]
    log: Path


def launch(command: tuple[str, ...], *, project: Path, chain_id: str, task_id: str, task_file: Path,
           parent_session: str | None) -> _Spawned:
    """Start the impl worker in the background; return its session id, pid and log file."""
    session_id = f"impl-{chain_id}-{task_id}-{secrets.token_hex(4)}"
    values = {"chain_id": chain_id, "task_id": task_id, "session_id": session_id, "project": str(project),
              "task_file": str(task_file)}
    argv = [arg.format_map(values) for arg in command]
    log = project / ".toolhall" / "sessions" / f"{session_id}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **{f"TOOLHALL_{k.upper()}": v for k, v in values.items()}, "TOOLHALL_ROLE": "impl"}
    if parent_session:
        env["TOOLHALL_PARENT_SESSION_ID"] = parent_session
    proc = _proc_spawn([sys.executable, "-c", _LAUNCHER, str(log), *argv], cwd=str(project), env=env)
    try:
        os.set_blocking(proc.stdout, True)
        os.set_blocking(proc.stderr, True)
        out = b"".join(iter(lambda: os.read(proc.stdout, 4096), b""))
        err = b"".join(iter(lambda: os.read(proc.stderr, 4096), b""))
        code = proc.popen.wait(timeout=30)
    finally:
        proc.close()
    if code != 0 or not out.strip().isdigit():
        raise ToolCallError(f"cannot start the impl session {argv[0]!r}: {err.decode(errors='replace').strip()}",
                            code="execution_error", details={"reason": "spawn_failed", "command": argv})
    return _Spawned(session_id=session_id, pid=int(out), argv=argv, log=log)
