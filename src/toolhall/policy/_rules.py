"""Policy rules: `tool` or `tool(pattern)`, and how a pattern matches a tool's subjects.

How matching works, exactly:

- The part before `(` names tools; it may use `*` (`mcp_github_*`). A rule without `(...)` covers every
  call of the tools it names.
- The pattern is a glob matched against the *whole* subject, case-sensitively: `*` matches any run of
  characters except `/`, `**` matches anything (including `/`), `?` one character except `/`; everything
  else is literal. `run_command(git status*)` therefore matches `git status` and `git status --short`,
  but also `git statusx`: write `git status` and `git status *` to be exact.
- A pattern `tag:glob` (a lower-case word and a colon, as in `kind:drop`) only matches subjects with the
  same tag (`sql_query` gives `kind:select` subjects besides the statement text).
- Subjects come from the tool (`Tool.subjects(arguments)`): a file tool's path, each simple command of a
  shell line (the shell tool splits `a && b; c | d $(e)` into five), a URL, a statement's kind and text.
- A subject containing a NUL byte (a shell line the splitter could not parse) matches no pattern, and
  a path with a `..` segment matches no allow pattern (deny patterns see it normalised too), so
  `write_file(src/**)` cannot be stretched to `src/../.git/config`.
"""

from __future__ import annotations

import fnmatch
import functools
import posixpath
import re
from dataclasses import dataclass

from .._errors import PolicyError

__all__ = ["Rule", "glob_to_regex", "parse_rule"]

_RULE = re.compile(r"^\s*(?P<tool>[A-Za-z0-9_.:*?\-]+)\s*(?:\((?P<pattern>.*)\))?\s*$", re.DOTALL)
_TAG = re.compile(r"^(?P<tag>[a-z][a-z0-9_]*):")
_DOTDOT = re.compile(r"(?:^|/)\.\.(?:/|$)")


@functools.lru_cache(maxsize=1024)
def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """The compiled regex for a glob: `*` within a `/` segment, `**` across, `?` one character."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule: which tools it names and, optionally, the subject pattern."""

    text: str
    """The rule as written."""
    tool: str
    """The tool name (or a glob over names)."""
    pattern: str | None
    """The subject glob, or None for every call of the tool."""

    def names(self, tool_name: str) -> bool:
        """Whether the rule is about this tool."""
        if any(c in self.tool for c in "*?"):
            return fnmatch.fnmatchcase(tool_name, self.tool)
        return self.tool == tool_name

    @property
    def tag(self) -> str | None:
        """The pattern's tag (`kind` in `kind:drop`), if it has one."""
        if self.pattern is None:
            return None
        found = _TAG.match(self.pattern)
        return found.group("tag") if found else None

    def matches(self, subject: str, *, for_allow: bool) -> bool:
        """Whether the pattern matches one subject (see the module docstring for the exact rules)."""
        if self.pattern is None:
            return True
        if "\x00" in subject or subject_tag(subject) != self.tag:
            return False
        regex = glob_to_regex(self.pattern)
        if _DOTDOT.search(subject):
            if for_allow:
                return False
            normalised = posixpath.normpath(subject)
            return regex.fullmatch(subject) is not None or regex.fullmatch(normalised) is not None
        return regex.fullmatch(subject) is not None


def subject_tag(subject: str) -> str | None:
    """A subject's tag (`kind` in `kind:select`), or None for a plain subject."""
    found = _TAG.match(subject)
    return found.group("tag") if found and " " not in subject[: found.end()] else None


def parse_rule(text: str, where: str = "rule") -> Rule:
    """Parse `tool` or `tool(pattern)`; a `PolicyError` names the rule and what is wrong."""
    if not isinstance(text, str):
        raise PolicyError(f"{where} must be a string like 'read_file' or 'run_command(git status*)'; got {text!r}")
    found = _RULE.match(text)
    if found is None:
        raise PolicyError(
            f"{where} {text!r} is not a rule: write a tool name (letters, digits, _ . : - and * globs), "
            "optionally followed by (pattern), e.g. 'run_command(git status*)'"
        )
    pattern = found.group("pattern")
    if pattern is not None and not pattern.strip():
        raise PolicyError(f"{where} {text!r} has an empty pattern: drop the () to cover every call of the tool")
    return Rule(text=text.strip(), tool=found.group("tool"), pattern=pattern)
