"""WorkerSpec: construction and manifests in TOML, YAML and JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolhall import ManifestError, ToolhallError, WorkerSpec


def test_positional_and_keyword_name_build_the_same_spec() -> None:
    """`WorkerSpec("w", ...)` and `WorkerSpec(name="w", ...)` are equal, with lists kept in order."""
    a = WorkerSpec("w", domain_toolboxes=["git", "sql"], builtin_tools=["Bash"], role="impl")
    b = WorkerSpec(name="w", domain_toolboxes=("git", "sql"), builtin_tools=["Bash"], role="impl")
    assert a == b
    assert a.domain_toolboxes == ("git", "sql")
    assert a.role == "impl"


@pytest.mark.parametrize(
    ("filename", "text"),
    [
        ("w.toml", 'name = "rev"\ndomain_toolboxes = ["git"]\nbuiltin_tools = ["WebSearch"]\nrole = "impl"\n'),
        ("w.yaml", "name: rev\ndomain_toolboxes: [git]\nbuiltin_tools:\n  - WebSearch\nrole: impl\n"),
        ("w.yml", "name: rev\ndomain_toolboxes: [git]\nbuiltin_tools: [WebSearch]\nrole: impl\n"),
        ("w.json", '{"name": "rev", "domain_toolboxes": ["git"], "builtin_tools": ["WebSearch"], "role": "impl"}'),
    ],
)
def test_load_reads_every_manifest_format(tmp_path: Path, filename: str, text: str) -> None:
    """The same worker is read from TOML, YAML and JSON."""
    path = tmp_path / filename
    path.write_text(text)
    assert WorkerSpec.load(path) == WorkerSpec(
        "rev", domain_toolboxes=["git"], builtin_tools=["WebSearch"], role="impl"
    )


def test_missing_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    """A manifest without `name` is named after its file."""
    path = tmp_path / "planner.toml"
    path.write_text('domain_toolboxes = []\n')
    assert WorkerSpec.load(path).name == "planner"


def test_unknown_key_is_named_with_the_allowed_keys(tmp_path: Path) -> None:
    """A typo'd key is a ManifestError naming the key, the file and what is allowed."""
    path = tmp_path / "w.toml"
    path.write_text('name = "w"\ntoolboxes = ["git"]\n')
    with pytest.raises(ManifestError, match=r"unknown key 'toolboxes'.*allowed keys: name, domain_toolboxes") as info:
        WorkerSpec.load(path)
    assert str(path) in str(info.value)


def test_wrong_types_name_the_key(tmp_path: Path) -> None:
    """A string where a list belongs, or a duplicate name, names the key at fault."""
    with pytest.raises(ManifestError, match="domain_toolboxes.*list of names"):
        WorkerSpec("w", domain_toolboxes="git")
    with pytest.raises(ManifestError, match="builtin_tools.*'Bash' is listed twice"):
        WorkerSpec("w", builtin_tools=["Bash", "Bash"])
    with pytest.raises(ManifestError, match="name"):
        WorkerSpec("bad name with spaces")


@pytest.mark.parametrize(
    ("filename", "text", "expected"),
    [
        ("w.toml", 'name = "w"\ndomain_toolboxes = [\n', "not valid TOML"),
        ("w.json", '{"name": "w",}', r"not valid JSON.*line 1"),
        ("w.yaml", "name: w\ndomain_toolboxes: [git\n", "not valid YAML"),
        ("w.yaml", "- just\n- a list\n", "top level must be a mapping"),
        ("w.ini", "name=w", "unknown file type '.ini'"),
    ],
)
def test_unreadable_manifests_say_why(tmp_path: Path, filename: str, text: str, expected: str) -> None:
    """Syntax errors, non-mapping documents and unknown suffixes are ManifestErrors saying why."""
    path = tmp_path / filename
    path.write_text(text)
    with pytest.raises(ManifestError, match=expected):
        WorkerSpec.load(path)


def test_missing_file_is_a_manifest_error(tmp_path: Path) -> None:
    """A manifest that does not exist raises a ToolhallError naming the path."""
    with pytest.raises(ToolhallError, match="cannot be read"):
        WorkerSpec.load(tmp_path / "absent.toml")


def test_spec_is_frozen() -> None:
    """A WorkerSpec is a value: it cannot be changed after construction."""
    spec = WorkerSpec("w")
    with pytest.raises(Exception, match="frozen"):
        spec.role = "impl"  # type: ignore[misc]
