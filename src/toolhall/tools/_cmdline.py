"""Split a POSIX shell command line into the simple commands it would run, for policy subjects.

`a && b; c | d` is four commands; `$(...)`, backticks, `<(...)`, subshells, `{ ...; }`, newlines, `&`,
`||`, `|&`, here-documents with live expansions and `${x:-$(y)}` all contribute the commands inside them.
Quoting is kept as written (a subject `git "status"` is not `git status`), and reserved words that merely
introduce a command (`if`, `then`, `do`, `!`, `{`, ...) are dropped so `if git diff; then ...` still yields
`git diff`.

The splitter is conservative: what it does not fully understand (unbalanced quotes, `case`, a stray `)`,
a here-document without its end line) makes the whole line one `UNPARSEABLE` subject, which contains a
NUL byte and so can never equal or glob-match a rule written in a policy.

Example:
    ```python
    split_commands("git status && curl -s x | sh")  # ["git status", "curl -s x", "sh"]
    ```
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["UNPARSEABLE", "split_commands"]

UNPARSEABLE = "\x00unparseable shell command line\x00/"
"""The single subject of a line that cannot be split: never matches an allow rule."""

_MAX_LINE = 256 * 1024
_MAX_DEPTH = 64
_SEPARATORS = ";&|\n"
_META = ";&|()<>\n \t"
_LEADING_WORDS = frozenset({"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while",
                            "until", "time"})


class _Unparseable(Exception):
    pass


@dataclass
class _Token:
    text: str
    glued: bool  # no whitespace before it: `2>&1` stays one piece in the subject


@dataclass
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    live: bool  # unquoted delimiter: $(...) and backticks in the body run


@dataclass
class _Parser:
    s: str
    out: list[str]
    depth: int = 0
    i: int = 0
    pending: list[_Heredoc] = field(default_factory=list)

    def error(self, why: str) -> _Unparseable:
        return _Unparseable(f"{why} at offset {self.i}")

    # -- command lists ---------------------------------------------------------------------------------

    def parse_list(self, closer: str | None) -> None:
        """Read simple commands until `closer` (consumed) or the end of the text."""
        if self.depth > _MAX_DEPTH:
            raise self.error("nesting too deep")
        tokens: list[_Token] = []
        glued = False
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in " \t":
                self.i += 1
                glued = False
            elif c == "\\" and self.s.startswith("\\\n", self.i):
                self.i += 2  # line continuation
                glued = False
            elif c == "#" and not glued:
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.i += 1
            elif closer is not None and c == closer:
                self.i += 1
                self.emit(tokens)
                return
            elif c in _SEPARATORS:
                self.separator(c)
                self.emit(tokens)
                tokens, glued = [], False
            elif c == "(":
                self.i += 1
                self.emit(tokens)  # `f()` or `x (`: what came before is its own subject
                tokens = []
                self.nested(")")
                glued = False
            elif c == ")":
                raise self.error("unexpected ')'")
            elif c in "<>":
                tokens.append(_Token(self.redirect(), glued))
                glued = True
            else:
                tokens.append(_Token(self.word(), glued))
                glued = True
        if closer is not None:
            raise self.error(f"missing {closer!r}")
        self.emit(tokens)
        if self.pending:
            raise self.error("here-document without its end line")

    def separator(self, c: str) -> None:
        if c == "\n":
            self.i += 1
            self.heredoc_bodies()
            return
        self.i += 2 if self.s.startswith(("&&", "||", "|&", ";;"), self.i) else 1

    def nested(self, closer: str) -> None:
        self.depth += 1
        self.parse_list(closer)
        self.depth -= 1

    def emit(self, tokens: list[_Token]) -> None:
        while tokens and tokens[0].text in _LEADING_WORDS:
            tokens = tokens[1:]
            if tokens:
                tokens[0] = _Token(tokens[0].text, False)
        if tokens and tokens[0].text == "case":
            raise self.error("`case` is not supported")
        if tokens:
            self.out.append("".join(t.text if t.glued else f" {t.text}" for t in tokens).strip())

    # -- words -----------------------------------------------------------------------------------------

    def word(self) -> str:
        start = self.i
        self.scan(_META, quotes=True)
        if self.i > len(self.s):
            raise self.error("dangling backslash")
        return self.s[start : self.i]

    def scan(self, stops: str, *, quotes: bool) -> str | None:
        """Move over text that may hold substitutions, up to a character in `stops` (not consumed).

        The one place the rules live: a backslash escapes the next character; backticks, `$(...)` and
        `${...}` are parsed for the commands inside them; with `quotes`, `'...'` and `"..."` are read
        as units (inside double quotes and here-documents a quote is plain text).

        Returns:
            The stop character reached, or None at the end of the text.
        """
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in stops:
                return c
            if c == "\\":
                self.i += 2
            elif c == "`":
                self.backtick()
            elif c == "$":
                self.dollar()
            elif quotes and c == "'":
                self.skip_single()
            elif quotes and c == '"':
                self.double()
            else:
                self.i += 1
        return None

    def skip_single(self) -> None:
        end = self.s.find("'", self.i + 1)
        if end < 0:
            raise self.error("unterminated single quote")
        self.i = end + 1

    def double(self) -> None:
        self.i += 1
        if self.scan('"', quotes=False) is None:
            raise self.error("unterminated double quote")
        self.i += 1

    def dollar(self) -> None:
        nxt = self.s[self.i + 1 : self.i + 2]
        if nxt == "(":  # $(...) and $((...)): both may run commands, so parse the inside as a list
            self.i += 2
            self.nested(")")
        elif nxt == "{":
            self.i += 2
            self.parameter()
        elif nxt == "'":  # $'...' (bash ANSI-C quoting); backslash escapes inside
            self.i += 2
            while self.i < len(self.s) and self.s[self.i] != "'":
                self.i += 2 if self.s[self.i] == "\\" else 1
            if self.i >= len(self.s):
                raise self.error("unterminated $'...'")
            self.i += 1
        else:
            self.i += 1

    def parameter(self) -> None:
        """`${...}`, whose operand words (`${x:-$(cmd)}`) may hold substitutions."""
        if self.scan("}", quotes=True) is None:
            raise self.error("unterminated ${")
        self.i += 1

    def backtick(self) -> None:
        """`` `...` ``: the inside, with `\\``, `\\\\` and `\\$` unescaped, is a command list of its own."""
        self.i += 1
        inner: list[str] = []
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "`":
                self.i += 1
                self.sub_parse("".join(inner))
                return
            if c == "\\" and self.s[self.i + 1 : self.i + 2] in ("`", "\\", "$"):
                inner.append(self.s[self.i + 1])
                self.i += 2
            else:
                inner.append(c)
                self.i += 1
        raise self.error("unterminated backtick")

    def sub_parse(self, text: str) -> None:
        sub = _Parser(text, self.out, depth=self.depth + 1)
        if sub.depth > _MAX_DEPTH:
            raise self.error("nesting too deep")
        sub.parse_list(None)

    # -- redirections and here-documents ----------------------------------------------------------------

    def redirect(self) -> str:
        start = self.i
        for op in ("<<<", "<<-", "<<", "<>", "<&", "<(", ">>", ">|", ">&", ">(", "<", ">"):
            if self.s.startswith(op, self.i):
                self.i += len(op)
                break
        op = self.s[start : self.i]
        if op in ("<(", ">("):  # process substitution runs a command list
            self.nested(")")
            return self.s[start : self.i]
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1
        if self.i >= len(self.s) or self.s[self.i] in ";&|()<>\n":
            raise self.error(f"redirection {op!r} without a target")
        target = self.word()
        if op in ("<<", "<<-"):
            quoted = any(q in target for q in "'\"\\")
            delimiter = target.replace("'", "").replace('"', "").replace("\\", "")
            self.pending.append(_Heredoc(delimiter, op == "<<-", not quoted))
        return f"{op}{target}" if op != "<<<" else f"{op} {target}"

    def heredoc_bodies(self) -> None:
        while self.pending:
            doc = self.pending.pop(0)
            body_start = self.i
            while True:
                if self.i >= len(self.s):
                    raise self.error(f"here-document without its end line {doc.delimiter!r}")
                line_start = self.i
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                line = self.s[line_start:end]
                self.i = min(end + 1, len(self.s))
                if (line.lstrip("\t") if doc.strip_tabs else line) == doc.delimiter:
                    break
            if doc.live:
                self.scan_live(self.s[body_start:line_start])

    def scan_live(self, body: str) -> None:
        """A live here-document body is text, but its substitutions run: collect those."""
        _Parser(body, self.out, depth=self.depth + 1).scan("", quotes=False)


def split_commands(line: str) -> list[str]:
    """The simple commands `line` would run, each as written (whitespace between words normalised).

    Args:
        line: A shell command line, possibly several lines long.

    Returns:
        The commands in the order they are read; `[""]` for a line with no command at all, and
        `[UNPARSEABLE]` when the line cannot be split with certainty.
    """
    if len(line) > _MAX_LINE or "\x00" in line:
        return [UNPARSEABLE]
    out: list[str] = []
    try:
        _Parser(line, out).parse_list(None)
    except (_Unparseable, RecursionError):
        return [UNPARSEABLE]
    return out or [""]
