"""Redactor.value: secret fields by name at any depth, patterns in every string, other values untouched."""

from __future__ import annotations

import enum
from collections import OrderedDict
from types import MappingProxyType

from toolhall._redact import REDACTED, Redactor


class Level(enum.IntEnum):
    """An int subclass, as tools sometimes take."""

    HIGH = 3


def test_secret_fields_are_redacted_at_any_depth_and_numbers_under_them_are_kept() -> None:
    """Strings, lists and dicts under a secret name go; numbers, booleans and null under one stay."""
    r = Redactor()
    value = {
        "path": "a.txt",
        "api_key": "abc",
        "max_tokens": 100,
        "password": None,
        "auth": {"client_secret": ["x", "y"], "token": {"nested": 1}, "retries": 2.5, "is_token": True},
        "items": [{"password": "p"}, ("t", {"secret": "s"})],
    }
    assert r.value(value) == {
        "path": "a.txt",
        "api_key": REDACTED,
        "max_tokens": 100,
        "password": None,
        "auth": {"client_secret": REDACTED, "token": REDACTED, "retries": 2.5, "is_token": True},
        "items": [{"password": REDACTED}, ["t", {"secret": REDACTED}]],
    }


def test_patterns_apply_to_strings_inside_values_and_under_ordinary_names() -> None:
    """A URL password or a bearer token is cut out of any string, at any depth."""
    r = Redactor()
    got = r.value({"url": "postgres://bob:hunter2@db/x", "notes": ["Authorization: Bearer abcdefghijklmnop"]})
    assert got["url"] == f"postgres://bob:{REDACTED}@db/x"
    assert "abcdefghijklmnop" not in got["notes"][0]


def test_mapping_types_non_string_keys_and_int_subclasses_are_handled_like_plain_values() -> None:
    """Read-only and ordered mappings are walked; keys keep their type; an IntEnum stays as it is."""
    r = Redactor()
    got = r.value(MappingProxyType({"token": "t", 7: "seven", "level": Level.HIGH}))
    assert got == {"token": REDACTED, 7: "seven", "level": Level.HIGH}
    assert r.value(OrderedDict(secret=Level.HIGH)) == {"secret": Level.HIGH}


def test_a_disabled_redactor_returns_the_value_itself() -> None:
    """With defaults off and nothing configured, values pass through untouched (same object)."""
    value = {"password": "p"}
    assert Redactor(defaults=False).value(value) is value


def test_configured_fields_are_redacted_by_normalised_name() -> None:
    """A configured field matches regardless of case, dashes and underscores."""
    r = Redactor(fields=["session_ref"])
    assert r.value({"Session-Ref": "abc", "session": "keep"}) == {"Session-Ref": REDACTED, "session": "keep"}
