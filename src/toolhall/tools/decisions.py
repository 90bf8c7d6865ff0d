"""An append-only decision log per meeting: JSON Lines under the state folder, readable as Markdown.

Each entry is one `write()` to a file opened with `O_APPEND`, under an exclusive `flock`, so entries
from many processes never interleave and none is lost. `toolhall decisions MEETING` renders a log.

Example:
    ```python
    tb = decisions.toolbox(root=".toolhall", meeting="2026-11-22-planning")
    await tb.call("record_decision", {"question": "Which DB?", "decision": "Postgres", "reasoning": "..."})
    print(decisions.to_markdown(decisions.read_decisions(".toolhall", "2026-11-22-planning")))
    ```
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from .._context import ToolContext
from .._errors import ConfigError, ToolCallError
from .._tool import tool
from .._toolbox import Toolbox

__all__ = ["DecisionEntry", "DecisionLog", "log_path", "read_decisions", "to_markdown", "toolbox"]

_MEETING_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,127}$")
_FIELD_LIMIT = 20_000
_Field = Annotated[str, Field(min_length=1, max_length=_FIELD_LIMIT)]


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionEntry:
    """One recorded decision."""

    timestamp: str
    """When it was recorded (ISO 8601, UTC)."""
    meeting: str
    """The meeting (or session) whose log it belongs to."""
    worker: str | None
    """The worker that recorded it."""
    session_id: str | None
    """The session the call ran in."""
    question: str
    """What was decided."""
    decision: str
    """The answer."""
    reasoning: str
    """Why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionLog:
    """A meeting's decisions as read from its file."""

    meeting: str
    """The meeting id."""
    path: Path
    """The JSON Lines file."""
    entries: list[DecisionEntry] = field(default_factory=list)
    """The decisions, oldest first."""
    skipped: int = 0
    """Lines that could not be read (a torn write after a crash, hand edits)."""


def check_meeting(meeting: str) -> str:
    """`meeting` if it can name a log file; otherwise a `ConfigError` saying what is allowed."""
    if not isinstance(meeting, str) or not _MEETING_RE.match(meeting):
        raise ConfigError(
            f"meeting id {meeting!r} cannot name a log file: use letters, digits, '_', '.', ':', '-' "
            "(up to 128 characters, not starting with '.', ':' or '-')"
        )
    return meeting


def log_path(root: str | os.PathLike[str], meeting: str) -> Path:
    """The JSON Lines file holding `meeting`'s decisions under the state folder `root`."""
    return Path(os.fspath(root)).expanduser() / "decisions" / f"{check_meeting(meeting)}.jsonl"


def _append(path: Path, line: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolCallError(f"decision log {path} is a symlink; refusing to write through it",
                                code="denied") from None
        raise
    try:
        # O_APPEND makes each write land at the end; the lock also covers a write the kernel splits.
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)  # closing releases the lock


def read_decisions(root: str | os.PathLike[str], meeting: str) -> DecisionLog:
    """Every decision recorded for `meeting` (an empty log when there are none)."""
    path = log_path(root, meeting)
    log = DecisionLog(meeting=meeting, path=path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return log
    skipped = 0
    names = set(DecisionEntry.__dataclass_fields__)
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            log.entries.append(DecisionEntry(**{k: data.get(k) for k in names}))
        except (ValueError, TypeError, AttributeError):
            skipped += 1
    return DecisionLog(meeting=meeting, path=path, entries=log.entries, skipped=skipped)


def to_markdown(log: DecisionLog) -> str:
    """A meeting's decisions as a Markdown document, oldest first."""
    out = [f"# Decisions: {log.meeting}", ""]
    if not log.entries:
        out.append("_No decisions recorded._")
    for number, entry in enumerate(log.entries, 1):
        who = " · ".join(x for x in (entry.timestamp, entry.worker, entry.session_id) if x)
        out += [f"## {number}. {entry.question}", "", f"_{who}_", "",
                f"**Decision:** {entry.decision}", "", f"**Reasoning:** {entry.reasoning}", ""]
    if log.skipped:
        out.append(f"_{log.skipped} unreadable line(s) skipped in {log.path}._")
    return "\n".join(out).rstrip() + "\n"


def toolbox(root: str | os.PathLike[str], meeting: str | None = None) -> Toolbox:
    """The `record_decision` tool, writing under the state folder `root`.

    Args:
        root: The state folder (the log goes to `<root>/decisions/<meeting>.jsonl`).
        meeting: The meeting id; without it, the call's `extra["meeting"]`, then its session id, is used.

    Raises:
        ConfigError: `meeting` cannot name a file.
    """
    if meeting is not None:
        check_meeting(meeting)
    state = Path(os.fspath(root)).expanduser()

    @tool(destructive=False, open_world=False)
    def record_decision(question: _Field, decision: _Field, reasoning: _Field, ctx: ToolContext) -> dict[str, Any]:
        """Record a decision in the meeting's log (append-only: entries are never changed).

        Args:
            question: The question that was decided.
            decision: What was decided.
            reasoning: Why, briefly: the facts and trade-offs that settled it.
        """
        chosen = meeting or _context_meeting(ctx)
        try:
            path = log_path(state, chosen)
        except ConfigError as exc:
            raise ToolCallError(str(exc), code="invalid_input", details={"reason": "bad_meeting"}) from None
        entry = DecisionEntry(
            timestamp=dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            meeting=chosen, worker=ctx.worker, session_id=ctx.session_id,
            question=question, decision=decision, reasoning=reasoning)
        line = json.dumps(asdict(entry), ensure_ascii=False) + "\n"
        _append(path, line.encode("utf-8"))
        return asdict(entry)

    return Toolbox([record_decision], name="decisions")


def _context_meeting(ctx: ToolContext) -> str:
    value = (ctx.extra or {}).get("meeting") or ctx.session_id
    if not value:
        raise ToolCallError(
            "no meeting to record in: pass meeting= to decisions.toolbox(), or run in a session "
            "(its id is used) or with extra={'meeting': ...}", code="invalid_input",
            details={"reason": "no_meeting"})
    return str(value)
