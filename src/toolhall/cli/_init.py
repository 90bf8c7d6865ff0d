"""`toolhall init` (a commented toolhall.toml) and `toolhall doctor` (what works here, and what does not)."""

from __future__ import annotations

import importlib
import importlib.util
import shutil
from pathlib import Path
from typing import Annotated, Any

import typer

from .._config import CONFIG_FILE, load_config
from ._options import ConfigOption, JsonOption
from ._render import emit_json, fail, is_terminal

__all__ = ["TEMPLATE", "register"]

TEMPLATE = """\
# toolhall.toml: how `toolhall serve`, `toolhall call` and friends behave in this folder.
# Every key is optional; TOOLHALL_<SECTION>__<KEY> environment variables override them.

[workspace]
root = "."                      # the folder tools may touch
deny_read = []                  # globs added to the defaults (**/.env, **/*.pem)
deny_write = []                 # globs added to the defaults (.git/**, .lore/chains/**)
read_only = false

[policy]
# Rules are `tool` or `tool(pattern)`; patterns are globs over the tool's subject
# (a path, each command of a command line, a URL, a SQL statement's kind and text).
allow = ["read_file", "list_files", "search_files", "run_command(git status*)"]
ask = []
deny = ["run_command(rm -rf *)", "sql_query(kind:drop)"]

[store]
sqlite = ".toolhall/state.db"   # the call log; or set postgres = "postgresql://..."
max_output_bytes = 10485760     # full outputs kept in the log, up to this size
redact_fields = []              # argument names whose values are never written
redact_patterns = []            # regular expressions redacted in inputs and outputs

[limits]
timeout = 120                   # seconds, for tools without their own
max_output_chars = 50000        # what goes back to the model (the log keeps all)

[serve]
host = "127.0.0.1"
port = 8765
# token = "..."                 # default: $TOOLHALL_TOKEN, or a new one printed at start
approval = "elicit"             # ask the MCP client; "deny" or "queue" (the console) otherwise

# [tools.http]
# allow_hosts = ["localhost:8000"]

# [tools.sql]
# url = "sqlite:///data.db"
# mode = "read_only"

# [[mcp.servers]]
# name = "git"
# command = ["uvx", "mcp-server-git"]
# trusted = false
"""


def init(
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing toolhall.toml.")] = False,
) -> None:
    """Write a commented toolhall.toml in this folder.

    Example: toolhall init && toolhall doctor
    """
    target = Path.cwd() / CONFIG_FILE
    if target.exists() and not force:
        raise fail(f"{CONFIG_FILE} already exists", hint="pass --force to overwrite it")
    tmp = target.with_suffix(".toml.tmp")
    tmp.write_text(TEMPLATE, encoding="utf-8")
    tmp.replace(target)
    typer.echo(f"wrote {target}")


def _optional(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _probe(name: str, fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - doctor reports every failure instead of stopping
        return {"error": f"{type(exc).__name__}: {exc}"}


def _report(config_path: str | None) -> dict[str, Any]:
    config = load_config(config_path)
    report: dict[str, Any] = {"config": config.source or "(defaults: no toolhall.toml)", "problems": []}

    def isolation() -> Any:
        module = importlib.import_module("toolhall.tools._isolation")
        return module.describe_isolation()

    report["isolation"] = _probe("isolation", isolation)
    report["optional"] = {
        "ripgrep": _probe("ripgrep", lambda: importlib.import_module("toolhall.tools.search").find_ripgrep()),
        "psycopg (postgres)": _optional("psycopg"),
        "pymysql (mysql)": _optional("pymysql"),
        "ladybug (code graph)": _optional("ladybug"),
        "tree_sitter": _optional("tree_sitter"),
        "chromium (console tests)": bool(shutil.which("chromium")),
    }
    store = config.store
    report["store"] = store.postgres or store.sqlite
    sql_url = config.tool_options("sql").get("url")
    if sql_url:

        def diagnose() -> Any:
            return importlib.import_module("toolhall.tools.sql").diagnose(sql_url)

        warnings = _probe("sql", diagnose)
        report["sql"] = warnings
        if isinstance(warnings, list):
            report["problems"].extend(warnings)
    root = Path(config.source).parent / config.workspace.root if config.source else Path.cwd()

    def graph() -> Any:
        options = config.tool_options("codegraph")
        return importlib.import_module("toolhall.tools.codegraph").diagnose(root, options.get("db_path"))

    notes = _probe("codegraph", graph)
    report["codegraph"] = notes
    if isinstance(notes, list):
        report["problems"].extend(note for note in notes if str(note).startswith("warning"))
    iso = report["isolation"]
    if isinstance(iso, dict) and iso.get("error"):
        report["problems"].append(f"isolation: {iso['error']}")
    elif isinstance(iso, dict) and iso.get("backend") in (None, "none"):
        report["problems"].append("no command isolation available: the shell tool refuses unless unconfined is allowed")
    report["effective"] = config.model_dump(mode="json", exclude={"source"})
    return report


def doctor(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Show what isolation, databases and optional parts are available, the config in effect, and problems.

    Example: toolhall doctor --json
    """
    report = _report(config)
    if as_json or not is_terminal():
        emit_json(report)
        return
    typer.echo(f"config:    {report['config']}")
    typer.echo(f"store:     {report['store']}")
    typer.echo(f"isolation: {report['isolation']}")
    for note in report["codegraph"] if isinstance(report["codegraph"], list) else [report["codegraph"]]:
        typer.echo(f"graph:     {note}")
    for name, present in report["optional"].items():
        typer.echo(f"  {'ok ' if present else 'no '} {name}")
    for problem in report["problems"]:
        typer.echo(f"problem:   {problem}")
    if not report["problems"]:
        typer.echo("no problems found")


def register(app: typer.Typer) -> None:
    """Add `init` and `doctor`."""
    app.command("init")(init)
    app.command("doctor")(doctor)
