"""Secret redaction for everything a log store writes: argument fields by name, and patterns in text.

Two mechanisms, both applied to inputs, outputs, data and approval requests before they are written:

- **Fields.** A mapping key whose normalised name (lower case, without `-` and `_`) equals a configured
  field, or ends with one of the default secret suffixes (`password`, `secret`, `token`, `apikey`, ...),
  has its value replaced by `[REDACTED]` (numbers, booleans and null are kept: `max_tokens` is not a
  secret, and its value is a number anyway).
- **Patterns.** Regular expressions over every string: passwords in URLs (`postgres://u:pw@h`), bearer
  and basic credentials, `key=value` secrets, and well-known token shapes (OpenAI/Anthropic `sk-...`,
  GitHub `ghp_...`, AWS `AKIA...`, Slack `xox?-...`, Google `AIza...`, JWTs, PEM private keys). A pattern
  with a group named `secret` replaces only that group; otherwise the whole match is replaced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_FIELDS", "DEFAULT_PATTERNS", "REDACTED", "Redactor"]

REDACTED = "[REDACTED]"
"""What a secret is replaced with."""

DEFAULT_FIELDS: frozenset[str] = frozenset(
    {
        "password", "passwd", "pwd", "secret", "token", "apikey", "accesskey", "secretkey", "privatekey",
        "authorization", "proxyauthorization", "cookie", "setcookie", "credentials", "credential",
        "clientsecret", "sessionid", "xapikey",
    }
)  # fmt: skip
"""Normalised key names redacted by default."""

_SECRET_SUFFIXES = (
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "credentials",
)


@dataclass(frozen=True, slots=True)
class _Rule:
    """One pattern, with cheap substring triggers that skip the regex on text that cannot match.

    Python's `re` scans 10 MB of text in about a second for a case-insensitive alternation, and the
    store redacts outputs of that size; literal `in` checks on lowered text take milliseconds.
    """

    regex: re.Pattern[str]
    triggers: tuple[str, ...] = ()
    lowered: bool = False  # match against text.lower() (the regex is written in lower case)
    boundary: bool = False  # the match must not follow a letter, digit or underscore


_DEFAULT_RULES: tuple[_Rule, ...] = (
    # user:password@ in any URL-like text; the user name stays visible for the audit trail.
    _Rule(re.compile(r"(?<=://)[^:/?#@\s]+:(?P<secret>[^@/?#\s]+)(?=@)"), ("://",)),
    # Authorization header values and the like.
    _Rule(
        re.compile(r"(?:bearer|basic|token)\s+(?P<secret>[a-z0-9._~+/=-]{8,})"),
        ("bearer", "basic", "token"),
        lowered=True,
        boundary=True,
    ),
    # key=value / key: value secrets in free text, query strings and env files.
    _Rule(
        re.compile(
            r"(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret"
            r"|refresh[_-]?token|private[_-]?key)[\"']?\s*[=:]\s*[\"']?(?P<secret>[^\s\"'&,;]{3,})"
        ),
        ("pass", "pwd", "secret", "key", "token"),
        lowered=True,
        boundary=True,
    ),
    _Rule(re.compile(r"sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"), ("sk-",), boundary=True),
    _Rule(re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"), ("gh",), boundary=True),
    _Rule(re.compile(r"github_pat_[A-Za-z0-9_]{20,}"), ("github_pat_",), boundary=True),
    _Rule(re.compile(r"glpat-[A-Za-z0-9_-]{20,}"), ("glpat-",), boundary=True),
    _Rule(re.compile(r"AKIA[0-9A-Z]{16}(?![A-Za-z0-9])"), ("AKIA",), boundary=True),
    _Rule(re.compile(r"xox[abprs]-[A-Za-z0-9-]{10,}"), ("xox",), boundary=True),
    _Rule(re.compile(r"AIza[0-9A-Za-z_-]{35}"), ("AIza",), boundary=True),
    _Rule(re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), ("eyJ",), boundary=True),
    _Rule(
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
        ("PRIVATE KEY-----",),
    ),
)

DEFAULT_PATTERNS: tuple[str, ...] = tuple(rule.regex.pattern for rule in _DEFAULT_RULES)
"""Patterns redacted by default (see the module docstring; some match lowered text)."""


def _normalise(key: str) -> str:
    return key.lower().replace("-", "").replace("_", "")


class Redactor:
    """Replaces secrets in JSON-like values and text.

    Example:
        ```python
        redactor = Redactor(fields=["session_key"], patterns=[r"acct-\\d{6}"])
        redactor.value({"url": "https://bob:hunter2@example.com", "session_key": "abc"})
        # {'url': 'https://bob:[REDACTED]@example.com', 'session_key': '[REDACTED]'}
        ```

    Args:
        fields: extra key names whose values are always redacted (matched case-insensitively,
            ignoring `-` and `_`).
        patterns: extra regular expressions; a group named `secret` limits what is replaced.
        defaults: whether the default fields and patterns apply too.
    """

    __slots__ = ("_fields", "_keys", "_quick", "_quick_re", "_rules", "_suffixes", "enabled")

    def __init__(self, fields: Iterable[str] = (), patterns: Iterable[str] = (), *, defaults: bool = True) -> None:
        extra_fields = {_normalise(f) for f in _strings(fields, "fields")}
        extra_patterns = list(_strings(patterns, "patterns"))
        self._fields = (DEFAULT_FIELDS | extra_fields) if defaults else frozenset(extra_fields)
        self._suffixes = _SECRET_SUFFIXES if defaults else ()
        user_rules = tuple(_Rule(_compile(source)) for source in extra_patterns)
        self._rules = (_DEFAULT_RULES if defaults else ()) + user_rules
        self.enabled = bool(self._fields or self._rules)
        self._keys: dict[str, bool] = {}  # argument names repeat call after call
        # One scan for "could any rule match at all?", so ordinary text costs a single regex search.
        self._quick = None if user_rules or not self._rules else _quick_reject(self._rules)
        self._quick_re = re.compile("|".join(re.escape(t) for t in self._quick or ()))

    def is_secret_key(self, key: str) -> bool:
        """Whether values under this key are redacted."""
        known = self._keys.get(key)
        if known is None:
            name = _normalise(key)
            known = name in self._fields or name.endswith(self._suffixes)
            if len(self._keys) < 4096:
                self._keys[key] = known
        return known

    def text(self, text: str) -> str:
        """The text with every pattern match replaced."""
        if self._quick is not None:
            folded = text.lower()
            # One regex pass is quicker on short text, substring scans (memchr speed) on long text.
            if len(folded) < 256:
                if self._quick_re.search(folded) is None:
                    return text
            elif not any(trigger in folded for trigger in self._quick):
                return text
        lowered: str | None = None
        for rule in self._rules:
            if rule.lowered:
                if lowered is None:
                    lowered = text.lower()
                # A few characters change length when lowered (İ); fall back to skipping the
                # lowered rules' fast path rather than mapping offsets wrongly.
                haystack = lowered if len(lowered) == len(text) else _casefold_safe(text)
            else:
                haystack = text
            if rule.triggers and not any(trigger in haystack for trigger in rule.triggers):
                continue
            replaced = _apply(rule, text, haystack)
            if replaced is not text:
                text, lowered = replaced, None
        return text

    def value(self, value: Any) -> Any:
        """A copy of a JSON-like value (dicts, lists, strings) with secrets replaced."""
        if not self.enabled:
            return value
        # Exact types first: this runs on every logged call, and an ABC check (`Mapping`) costs more than
        # the rest of a small argument dict.
        kind = type(value)
        if kind in _SCALARS:
            return value
        if kind is str:
            return self.text(value)
        if kind is dict or isinstance(value, Mapping):
            return {k: self._entry(k, v) for k, v in value.items()}
        if kind is list or isinstance(value, (list, tuple)):  # noqa: UP038 - tuple is faster on this hot path
            return [self.value(item) for item in value]
        return value

    def _entry(self, key: Any, value: Any) -> Any:
        kind = type(value)
        if kind in _SCALARS:  # numbers, booleans and null are kept even under a secret name
            return value
        if not self.is_secret_key(key if type(key) is str else str(key)):
            return self.text(value) if kind is str else self.value(value)
        if value is None or isinstance(value, (bool, int, float)):  # noqa: UP038 - tuple is faster
            return value
        return REDACTED


_SCALARS = frozenset({int, float, bool, type(None)})


def _strings(values: Iterable[str], name: str) -> Iterable[str]:
    if isinstance(values, str):
        raise TypeError(f"redaction {name} must be a list of strings, not a single string {values!r}")
    for item in values:
        if not isinstance(item, str):
            raise TypeError(f"redaction {name} must be strings; got {item!r}")
        yield item


def _quick_reject(rules: tuple[_Rule, ...]) -> tuple[str, ...] | None:
    if any(not rule.triggers for rule in rules):
        return None
    return tuple(sorted({t.lower() for rule in rules for t in rule.triggers}))


def _compile(source: str) -> re.Pattern[str]:
    try:
        return re.compile(source)
    except re.error as exc:
        raise ValueError(f"redaction pattern {source!r} is not a valid regular expression: {exc}") from exc


def _casefold_safe(text: str) -> str:
    """Lower-case ASCII letters only, so offsets stay aligned with the original text."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _apply(rule: _Rule, text: str, haystack: str) -> str:
    pieces: list[str] = []
    last = 0
    for match in rule.regex.finditer(haystack):
        start = match.start()
        if rule.boundary and start > 0 and (haystack[start - 1].isalnum() or haystack[start - 1] == "_"):
            continue
        secret = next((name for name, v in match.groupdict().items() if v is not None and name == "secret"), None)
        begin, end = match.span(secret) if secret else match.span()
        if begin < last:
            continue
        pieces += (text[last:begin], REDACTED)
        last = end
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)
