"""Exported names: legal per format, unique, stable, independent of order, and reversible."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolhall import ExportError
from toolhall.providers import FORMATS, exported_names, original_names
from toolhall.providers._names import NAME_RULES

LEGAL = {"openai": r"[a-zA-Z0-9_-]{1,64}", "anthropic": r"[a-zA-Z0-9_-]{1,64}",
         "gemini": r"[A-Za-z_][A-Za-z0-9_-]{0,63}", "mcp": r"[A-Za-z0-9._-]{1,128}"}


def test_legal_names_are_kept_and_illegal_ones_readably_mapped() -> None:
    """`read_file` stays; `chain:status` and `math.factorial` become `chain_status` and `math_factorial`."""
    names = exported_names(["read_file", "chain:status", "math.factorial"], "openai")
    assert names == {"read_file": "read_file", "chain:status": "chain_status", "math.factorial": "math_factorial"}
    assert exported_names(["math.factorial"], "mcp") == {"math.factorial": "math.factorial"}
    assert exported_names(["chain:status"], "json") == {"chain:status": "chain:status"}


def test_clashing_names_all_get_hash_suffixes_whatever_the_order() -> None:
    """`a.b`, `a:b` and a legal `a_b`: the legal one keeps its name, the renamed two get distinct hashes."""
    first = exported_names(["a.b", "a:b", "a_b"], "openai")
    second = exported_names(["a_b", "a:b", "a.b"], "openai")
    assert first == second
    assert first["a_b"] == "a_b" and len(set(first.values())) == 3
    assert re.fullmatch(r"a_b_[0-9a-f]{8}", first["a.b"])


def test_long_names_are_cut_with_a_hash_to_stay_unique() -> None:
    """Two 80-character names sharing a 64-character prefix still get distinct legal names."""
    a, b = "x" * 79 + "a", "x" * 79 + "b"
    names = exported_names([a, b], "openai")
    assert len(set(names.values())) == 2 and all(len(n) == 64 for n in names.values())


def test_duplicate_names_and_unknown_formats_are_export_errors() -> None:
    """Exporting needs unique names and a known format; the error names the culprit."""
    with pytest.raises(ExportError, match="more than once: t"):
        exported_names(["t", "t"], "openai")
    with pytest.raises(ExportError, match="unknown format 'bard'"):
        exported_names(["t"], "bard")  # type: ignore[arg-type]


@given(st.lists(st.text(min_size=1, max_size=90), unique=True, max_size=12), st.sampled_from(FORMATS))
def test_any_names_map_to_legal_unique_reversible_names(names: list[str], format: str) -> None:  # noqa: A002
    """For arbitrary names every format gets legal, unique names, and original_names reverses the mapping."""
    out = exported_names(names, format)  # type: ignore[arg-type]
    assert list(out) == names and len(set(out.values())) == len(names)
    if NAME_RULES[format] is not None:
        pattern = LEGAL["openai" if format.startswith("openai") else format]
        assert all(re.fullmatch(pattern, n) for n in out.values())
    assert original_names(names, format) == {v: k for k, v in out.items()}  # type: ignore[arg-type]
    assert exported_names(names, format) == out  # type: ignore[arg-type]
