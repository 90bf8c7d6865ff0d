"""`Policy`: deny > ask > allow over rules, then defaults from the tool's own annotations."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._errors import PolicyError
from ._rules import Rule, parse_rule, subject_tag

__all__ = ["UNTRUSTED_TAG", "Decision", "Policy", "PolicyAction"]

PolicyAction = Literal["allow", "ask", "deny"]
"""What policy decides for a call."""

UNTRUSTED_TAG = "untrusted"
"""Tools with this tag (imported from an untrusted MCP server) never count as read-only."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What policy decided for one call, and why."""

    action: PolicyAction
    """`allow`, `ask` or `deny`."""
    reason: str
    """Why, for the log and for the model (names the rule, or the default that applied)."""
    rule: str | None = None
    """The rule that decided, when one did."""


class Policy:
    """Which calls run, which ask a person first, and which are refused.

    Rules are `tool` or `tool(pattern)` (see `toolhall.policy` for how patterns match subjects). A deny
    rule applies when *any* subject matches; an ask rule likewise; the allow rules apply only when
    *every* subject is matched by one of them. deny > ask > allow. With no rule deciding, a tool marked
    `requires_approval=True` asks, `requires_approval=False` runs, and otherwise read-only tools run
    while every other tool asks (tools tagged `untrusted` are never treated as read-only).

    Example:
        ```python
        policy = Policy(
            allow=["read_file", "run_command(git status)", "run_command(git diff*)"],
            ask=["write_file(src/**)"],
            deny=["run_command(rm *)", "sql_query(kind:drop)", "write_file(.github/**)"],
        )
        ```

    Args:
        allow: rules for calls that run without asking.
        ask: rules for calls that need approval even when allowed or read-only.
        deny: rules for calls that are always refused.
    """

    __slots__ = ("allow", "ask", "deny")

    def __init__(self, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = ()) -> None:
        self.allow: tuple[Rule, ...] = _parse_all(allow, "allow")
        self.ask: tuple[Rule, ...] = _parse_all(ask, "ask")
        self.deny: tuple[Rule, ...] = _parse_all(deny, "deny")

    def __repr__(self) -> str:
        def texts(rules: tuple[Rule, ...]) -> list[str]:
            return [r.text for r in rules]

        return f"Policy(allow={texts(self.allow)!r}, ask={texts(self.ask)!r}, deny={texts(self.deny)!r})"

    @classmethod
    def from_config(cls, section: Any) -> Policy:
        """A policy from a `[policy]` mapping or object with `allow`, `ask` and `deny` lists."""
        if isinstance(section, dict):
            unknown = set(section) - {"allow", "ask", "deny"}
            if unknown:
                keys = ", ".join(sorted(unknown))
                raise PolicyError(f"[policy] has unknown key(s) {keys}; allowed: allow, ask, deny")
            return cls(allow=section.get("allow", ()), ask=section.get("ask", ()), deny=section.get("deny", ()))
        return cls(
            allow=getattr(section, "allow", ()), ask=getattr(section, "ask", ()), deny=getattr(section, "deny", ())
        )

    def decide(self, tool: Any, subjects: Sequence[str] = ()) -> Decision:
        """Decide one call of `tool` (a `Tool`) whose arguments gave these subjects."""
        name: str = tool.name
        for rule in self.deny:
            if rule.names(name) and any(rule.matches(s, for_allow=False) for s in subjects or [""]):
                return Decision(action="deny", reason=f"denied by policy rule {rule.text!r}", rule=rule.text)
        for rule in self.ask:
            if rule.names(name) and any(rule.matches(s, for_allow=False) for s in subjects or [""]):
                return Decision(action="ask", reason=f"policy rule {rule.text!r} asks for approval", rule=rule.text)
        if getattr(tool, "requires_approval", None) is True:
            return Decision(action="ask", reason=f"{name} requires approval")
        allow = [rule for rule in self.allow if rule.names(name)]
        covering = _allowed_by(allow, subjects)
        if covering is not None:
            return Decision(action="allow", reason=f"allowed by policy rule {covering!r}", rule=covering)
        if getattr(tool, "requires_approval", None) is False:
            return Decision(action="allow", reason=f"{name} does not require approval")
        if _read_only(tool):
            return Decision(action="allow", reason=f"{name} is read-only")
        return Decision(action="ask", reason=f"{name} may change things and no policy rule allows this call")


def _parse_all(rules: Iterable[str], kind: str) -> tuple[Rule, ...]:
    if isinstance(rules, str):
        raise PolicyError(f"policy {kind} must be a list of rules, not the single string {rules!r}")
    return tuple(parse_rule(text, f"policy {kind} rule") for text in rules)


def _allowed_by(rules: list[Rule], subjects: Sequence[str]) -> str | None:
    """The allow rule text that covers the call, when every subject is matched (per tag) by some rule."""
    if not rules:
        return None
    bare = next((rule for rule in rules if rule.pattern is None), None)
    if bare is not None:
        return bare.text
    if not subjects:
        return None
    # Tagged patterns (kind:select) judge the subjects with their tag; plain patterns judge the rest.
    for tag in {rule.tag for rule in rules}:
        group = [s for s in subjects if subject_tag(s) == tag]
        tagged = [rule for rule in rules if rule.tag == tag]
        if group and all(any(rule.matches(s, for_allow=True) for rule in tagged) for s in group):
            return ", ".join(rule.text for rule in tagged)
    return None


def _read_only(tool: Any) -> bool:
    if UNTRUSTED_TAG in getattr(tool, "tags", ()):
        return False
    annotations = getattr(tool, "annotations", None)
    return bool(getattr(annotations, "read_only", False))
