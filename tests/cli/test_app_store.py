"""The configured log store: `[store]` redaction reaches what is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolhall import Session, Toolbox, tool
from toolhall._redact import Redactor
from toolhall.cli._app import load_app
from toolhall.log import SqliteLog


@tool(read_only=True)
def lookup(customer: str, pin: str) -> str:
    """Echo the customer; the pin is a configured secret field."""
    return f"customer {customer} uses pin {pin}"


def test_store_section_redaction_reaches_the_sqlite_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`[store] redact_fields` and `redact_patterns` from toolhall.toml are applied before rows are written."""
    (tmp_path / "toolhall.toml").write_text(
        '[store]\nredact_fields = ["pin"]\nredact_patterns = ["customer-[0-9]+"]\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    store = load_app().log_store()
    with Session(Toolbox([lookup]), log=store) as session:
        result = session.call_sync("lookup", {"customer": "customer-42", "pin": "8812"})
    assert result.output == "customer customer-42 uses pin 8812"  # the model's view is untouched
    [record] = store.calls()
    written = f"{record.input} {record.output}"
    assert "8812" not in str(record.input) and "customer-42" not in written
    store.close()


def test_a_ready_redactor_is_used_by_sqlite_log(tmp_path: Path) -> None:
    """SqliteLog(redactor=...) applies that redactor (not its own defaults only)."""
    store = SqliteLog(tmp_path / "state.db", redactor=Redactor(["pin"], []))
    with Session(Toolbox([lookup]), log=store) as session:
        session.call_sync("lookup", {"customer": "c", "pin": "8812"})
    [record] = store.calls()
    assert "8812" not in str(record.input)
    store.close()
