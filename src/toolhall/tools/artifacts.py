"""Project artifacts: Markdown files with YAML frontmatter under the project's `.lore/` folder.

Writing a body keeps the file's frontmatter byte for byte (comments, key order, quoting); changing
metadata re-emits only the fields that change. Paths are relative to the lore folder (a leading
`.lore/` is accepted too) and confined to it; `chains/` is read-only here, because task files change
only through the chain tools' life cycle.

Example:
    ```python
    tb = artifacts.toolbox(project="/srv/shop")
    await tb.call("update_artifact_meta", {"path": "plans/q3.md", "changes": {"status": "approved"}})
    ```
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from .._errors import ToolCallError
from .._tool import Tool, tool
from .._toolbox import Toolbox
from .._workspace import Workspace
from . import _frontmatter as fm
from ._fileio import owned_fd

__all__ = ["MARKDOWN_SUFFIXES", "toolbox"]

MARKDOWN_SUFFIXES = (".md", ".markdown")
"""File endings `list_artifacts` treats as artifacts."""
_MAX_LISTED = 2000
_CHAINS_DENY = "chains/**"


class _Lore:
    """The lore folder of one project, opened as a Workspace on demand."""

    def __init__(self, folder: Path, lore: str, max_bytes: int) -> None:
        self.folder = folder
        self.prefix = lore.strip("/") + "/"
        self.max_bytes = max_bytes

    def workspace(self, *, write: bool) -> Workspace | None:
        if not write and not self.folder.is_dir():
            return None
        return Workspace(self.folder, deny_write=[_CHAINS_DENY], create=write)

    def rel(self, path: str) -> str:
        text = path.strip().replace("\\", "/")
        while text.startswith("./"):
            text = text[2:]
        if text.startswith(self.prefix):
            text = text[len(self.prefix):]
        if not text:
            raise ToolCallError("path is empty; name an artifact such as 'plans/q3.md'", code="invalid_input")
        return text

    def read(self, ws: Workspace, rel: str) -> str:
        try:
            fd = ws.open(rel, os.O_RDONLY)
        except FileNotFoundError:
            raise ToolCallError(f"no artifact at {rel!r} in {self.prefix}", code="not_found",
                                details={"reason": "no_such_path", "path": rel}) from None
        with owned_fd(fd):
            data = os.read(fd, self.max_bytes + 1)
        if len(data) > self.max_bytes:
            raise ToolCallError(f"{rel} is larger than {self.max_bytes} bytes", code="execution_error",
                                details={"reason": "too_large", "limit": self.max_bytes})
        # surrogateescape keeps any non-UTF-8 byte exactly as it was when the file is written back.
        return data.decode("utf-8", errors="surrogateescape")

    def write(self, ws: Workspace, rel: str, text: str) -> int:
        try:
            return ws.atomic_write(rel, text.encode("utf-8", errors="surrogateescape"))
        except IsADirectoryError:
            raise ToolCallError(f"{rel!r} is a folder, not an artifact", code="invalid_input") from None


def _summary(rel: str, meta: dict[str, Any], body: str) -> dict[str, Any]:
    title = meta.get("title")
    if not title:
        title = next((ln[2:].strip() for ln in body.splitlines() if ln.startswith("# ")), None)
    tags = meta.get("tags") or []
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",") if t.strip()]
    return {
        "path": rel,
        "title": title or posixpath.splitext(posixpath.basename(rel))[0],
        "status": meta.get("status"),
        "tags": tags if isinstance(tags, list) else [tags],
        "date": meta.get("date") or meta.get("created"),
    }


def _markdown_files(ws: Workspace, start: str) -> Iterator[str]:
    """Markdown files beneath `start`, hidden entries skipped, symlinks never followed."""
    stack: list[tuple[int, str]] = [(ws.open_dir(start), "" if start == "." else f"{start}/")]
    try:
        while stack:
            dfd, prefix = stack.pop()
            with owned_fd(dfd), os.scandir(dfd) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    mode = entry.stat(follow_symlinks=False).st_mode
                    if stat.S_ISDIR(mode):
                        sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                      dir_fd=dfd)
                        stack.append((sub, f"{prefix}{entry.name}/"))
                    elif stat.S_ISREG(mode) and entry.name.lower().endswith(MARKDOWN_SUFFIXES):
                        yield f"{prefix}{entry.name}"
    finally:
        for dfd, _ in stack:
            os.close(dfd)


def toolbox(
    project: str | os.PathLike[str],
    lore: str = ".lore",
    *,
    max_file_bytes: int = 5_000_000,
) -> Toolbox:
    """Artifact tools over `<project>/<lore>/`.

    Args:
        project: The project folder.
        lore: The artifacts folder inside the project.
        max_file_bytes: The largest artifact that may be read or written.
    """
    lore_dir = Path(os.fspath(project)).expanduser() / lore
    return Toolbox(_tools(_Lore(lore_dir, lore, max_file_bytes)), name="artifacts")


def _tools(lore: _Lore) -> list[Tool]:  # noqa: C901 - one closure per tool, each short
    @tool(read_only=True, destructive=False, idempotent=True, open_world=False, subject="path")
    def read_artifact(path: str) -> dict[str, Any]:
        """Read an artifact: its frontmatter fields (`meta`) and its Markdown body.

        Args:
            path: The artifact's path inside the lore folder, such as `plans/q3.md`.
        """
        rel = lore.rel(path)
        ws = lore.workspace(write=False)
        if ws is None:
            raise ToolCallError(f"no artifact at {rel!r}: the project has no {lore.prefix} folder yet",
                                code="not_found", details={"reason": "no_such_path", "path": rel})
        doc = fm.split(lore.read(ws, rel), rel)
        meta = fm.to_plain(fm.parse(doc, rel))
        return {"path": rel, "meta": meta, "body": doc.body}

    @tool(destructive=True, idempotent=True, open_world=False, subject="path")
    def write_artifact(path: str, content: str) -> dict[str, Any]:
        """Write an artifact's Markdown body, keeping its existing frontmatter exactly as it is.

        If `content` starts with its own frontmatter block (`---` ... `---`), that block replaces the old one.

        Args:
            path: The artifact's path inside the lore folder, such as `plans/q3.md`.
            content: The new body (or a whole file with frontmatter).
        """
        rel = lore.rel(path)
        ws = lore.workspace(write=True)
        assert ws is not None  # noqa: S101 - write=True always returns a workspace
        new = fm.split(content, "content")
        kept = False
        if new.has_frontmatter:
            fm.parse(new, "content")  # refuse malformed YAML before it reaches the file
            text = content
        else:
            try:
                old = fm.split(lore.read(ws, rel), rel)
            except ToolCallError as exc:
                if exc.code != "not_found":
                    raise
                old = fm.Document(head="", yaml="", tail="", body="")
            kept = old.has_frontmatter
            head = old.frontmatter
            if head and not head.endswith("\n"):
                head += "\n"
            text = head + content
        written = lore.write(ws, rel, text)
        return {"path": rel, "bytes": written, "kept_frontmatter": kept}

    @tool(destructive=True, idempotent=True, open_world=False, subject="path")
    def update_artifact_meta(
        path: str,
        changes: Annotated[dict[str, Any], Field(min_length=1)],
    ) -> dict[str, Any]:
        """Change frontmatter fields of an artifact; comments, order and quoting of the rest are kept.

        Args:
            path: The artifact's path inside the lore folder.
            changes: Fields to set; `null` removes a field, and an object merges into an object field.
        """
        rel = lore.rel(path)
        ws = lore.workspace(write=True)
        assert ws is not None  # noqa: S101 - write=True always returns a workspace
        doc = fm.split(lore.read(ws, rel), rel)
        updated = fm.apply_changes(doc, changes, rel)
        lore.write(ws, rel, fm.join(updated))
        return {"path": rel, "meta": fm.to_plain(fm.parse(updated, rel))}

    @tool(read_only=True, destructive=False, idempotent=True, open_world=False, subject="directory")
    def list_artifacts(directory: str | None = None) -> dict[str, Any]:
        """List artifacts (Markdown files) with title, status, tags and date, sorted by path.

        Args:
            directory: A folder inside the lore folder to list; empty lists everything.
        """
        start = "." if not directory or directory.strip() in {"", ".", "/"} else lore.rel(directory)
        ws = lore.workspace(write=False)
        if ws is None:
            return {"directory": start, "count": 0, "artifacts": []}
        try:
            paths = sorted(_markdown_files(ws, start))
        except (FileNotFoundError, NotADirectoryError):
            raise ToolCallError(f"no folder {start!r} in {lore.prefix}", code="not_found",
                                details={"reason": "no_such_path", "path": start}) from None
        truncated = len(paths) > _MAX_LISTED
        items = []
        for rel in paths[:_MAX_LISTED]:
            try:
                doc = fm.split(lore.read(ws, rel), rel)
                items.append(_summary(rel, fm.to_plain(fm.parse(doc, rel)), doc.body))
            except ToolCallError as exc:  # one bad file must not hide the others
                items.append({"path": rel, "error": exc.message})
        result: dict[str, Any] = {"directory": start, "count": len(items), "artifacts": items}
        if truncated:
            result["truncated"] = True
            result["total"] = len(paths)
        return result

    return [read_artifact, write_artifact, update_artifact_meta, list_artifacts]
