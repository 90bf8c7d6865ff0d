"""search_files: grep-style results, .gitignore, globs, context, limits; same with and without ripgrep."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolhall import Workspace
from toolhall.tools import files
from toolhall.tools.search import find_ripgrep


@pytest.fixture
def tree(root: Path) -> Path:
    """A small project with ignored, hidden, binary and nested files."""
    layout = {
        "a.py": "import os\nprint('hello')\n",
        "b.txt": "Hello world\nnothing\nhello again\n",
        "src/m.py": "def hello():\n    return 1\n\n\nhello()\n",
        "src/deep/n.js": "const hello = 1;\n",
        "build/gen.py": "hello = 'ignored'\n",
        ".hidden/h.txt": "hello hidden\n",
        "notes.log": "hello log\n",
        "crlf.txt": "hello\r\nthere\r\n",
        "weird:name.txt": "hello colon\n",
    }
    for rel, text in layout.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "bin.dat").write_bytes(b"hello\x00binary")
    (root / "ln.txt").symlink_to("b.txt")
    return root


CASES = [
    {"pattern": "hello"},
    {"pattern": "hello", "case_sensitive": False},
    {"pattern": "^hello", "context": 1},
    {"pattern": "hel+o", "glob": "*.py"},
    {"pattern": "hello", "path": "src"},
    {"pattern": "hello", "glob": "src/**/*.js"},
    {"pattern": "hello()", "regex": False},
    {"pattern": "o$"},
    {"pattern": "hello", "limit": 2},
    {"pattern": "hello", "path": "src/m.py"},
]


@pytest.mark.parametrize("args", CASES)
def test_ripgrep_and_python_give_the_same_results(tree: Path, args: dict[str, object]) -> None:
    """The rg-accelerated path and the pure-Python fallback return identical output."""
    if find_ripgrep() is None:
        pytest.skip("the ripgrep wheel is not installed")
    with_rg = files.toolbox(workspace=Workspace(tree), use_ripgrep=True).call_sync("search_files", args)
    without = files.toolbox(workspace=Workspace(tree), use_ripgrep=False).call_sync("search_files", args)
    assert with_rg.ok and without.ok
    assert with_rg.output == without.output


@pytest.mark.parametrize("use_ripgrep", [True, False])
def test_results_respect_gitignore_hidden_binary_and_symlinks(tree: Path, use_ripgrep: bool) -> None:
    """Ignored, hidden, binary and symlinked files are skipped; results are file:line:text in path order."""
    tb = files.toolbox(workspace=tree, use_ripgrep=use_ripgrep)
    out = tb.call_sync("search_files", {"pattern": "hello"}).output.splitlines()
    assert out == [
        "a.py:2:print('hello')",
        "b.txt:3:hello again",
        "crlf.txt:1:hello",
        "src/deep/n.js:1:const hello = 1;",
        "src/m.py:1:def hello():",
        "src/m.py:5:hello()",
        "weird:name.txt:1:hello colon",
    ]


def test_context_and_separators(tree: Path) -> None:
    """Context lines use `file-line-text` and groups are separated by `--`."""
    tb = files.toolbox(workspace=tree)
    out = tb.call_sync("search_files", {"pattern": "hello", "path": "src", "context": 1}).output
    assert out.splitlines() == [
        "src/deep/n.js:1:const hello = 1;",
        "--",
        "src/m.py:1:def hello():",
        "src/m.py-2-    return 1",
        "--",
        "src/m.py-4-",
        "src/m.py:5:hello()",
    ]


def test_limit_notes_more(tree: Path) -> None:
    """Hitting the limit says so."""
    out = files.toolbox(workspace=tree).call_sync("search_files", {"pattern": "hello", "limit": 2}).output
    assert len(out.splitlines()) == 3 and "limit of 2" in out


def test_bad_regex_and_no_match(tree: Path) -> None:
    """An invalid regex is invalid_input; no match is a plain note."""
    tb = files.toolbox(workspace=tree)
    bad = tb.call_sync("search_files", {"pattern": "("})
    assert bad.error is not None and bad.error.details == {"reason": "bad_regex"}
    assert "no matches" in tb.call_sync("search_files", {"pattern": "zzz_absent"}).output


def test_python_only_regex_falls_back(tree: Path) -> None:
    """A look-behind rg cannot parse still works (Python finds the files)."""
    out = files.toolbox(workspace=tree).call_sync("search_files", {"pattern": "(?<=const )hello"}).output
    assert out == "src/deep/n.js:1:const hello = 1;"


def test_denied_files_are_not_searched(tree: Path) -> None:
    """.env files never appear in results."""
    (tree / ".env").write_text("hello=secret\n")
    (tree / "sub.pem").write_text("hello pem\n")
    out = files.toolbox(workspace=tree).call_sync("search_files", {"pattern": "hello"}).output
    assert ".env" not in out and "pem" not in out
