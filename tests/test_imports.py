"""`import toolhall` stays light: heavy and optional dependencies load only when the code that needs them runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "httpx",
    "psycopg",
    "pymysql",
    "tree_sitter",
    "ladybug",
    "mcp",
    "rich",
    "typer",
    "sqlglot",
    "uvicorn",
    "starlette",
)


def _loaded_after(code: str) -> set[str]:
    """Top-level package names in sys.modules after running `code` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "code",
    [
        "import toolhall",
        "from toolhall import Tool, Toolbox, ToolCall, ToolResult, tool",
        "import toolhall; toolhall.Session; toolhall.Workspace; toolhall.SqliteLog; toolhall.Policy",
    ],
)
def test_import_loads_no_heavy_dependency(code: str) -> None:
    """Importing toolhall (and touching its core names) loads none of the heavy or optional packages."""
    loaded = _loaded_after(code)
    assert loaded & set(HEAVY) == set(), f"{code!r} loaded {sorted(loaded & set(HEAVY))}"


def test_bare_import_defers_pydantic_and_anyio() -> None:
    """`import toolhall` alone loads neither pydantic nor anyio: public names load on first use."""
    loaded = _loaded_after("import toolhall")
    assert {"pydantic", "pydantic_core", "anyio"} & loaded == set()


def test_first_use_of_a_name_loads_it() -> None:
    """Touching `toolhall.Toolbox` loads the core, so lazy names behave like plain attributes."""
    assert {"pydantic", "anyio"} <= _loaded_after("import toolhall; toolhall.Toolbox")


def test_defining_and_calling_a_tool_loads_no_heavy_dependency() -> None:
    """A tool can be defined, exported and called without pulling in httpx, mcp, rich and the rest."""
    code = (
        "import toolhall\n"
        "@toolhall.tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
        "tb = toolhall.Toolbox([add])\n"
        "tb.schemas('openai'); tb.schemas('anthropic')\n"
        "assert tb.call_sync('add', '{\"a\": 1, \"b\": 2}').output == '3'\n"
    )
    loaded = _loaded_after(code)
    assert loaded & set(HEAVY) == set(), f"loaded {sorted(loaded & set(HEAVY))}"


def test_defining_and_exporting_simple_tools_defers_pydantic_model_machinery() -> None:
    """Simple tools are defined and exported without pydantic's TypeAdapter/BaseModel (built at the first call)."""
    code = (
        "import sys, toolhall\n"
        "def add(a: int, b: int = 2, tags: list[str] | None = None) -> int:\n"
        "    return a + b\n"
        "toolhall.Toolbox([toolhall.tool(add)]).schemas('openai')\n"
    )
    loaded = _loaded_modules_after(code)
    assert {"pydantic.main", "pydantic.type_adapter"} & loaded == set()


def _loaded_modules_after(code: str) -> set[str]:
    """Every module name in sys.modules after running `code` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_probe_sees_a_heavy_import() -> None:
    """The probe itself works: importing one of the heavy packages is seen."""
    assert "httpx" in _loaded_after("import httpx")


def test_public_names_resolve_and_say_they_live_in_toolhall() -> None:
    """Every public name resolves, and none reports a private module (`toolhall._x`) as its home."""
    code = (
        "import toolhall\n"
        "bad = [n for n in toolhall.__all__"
        " if str(getattr(getattr(toolhall, n), '__module__', '')).startswith('toolhall._')]\n"
        "assert not bad, bad\n"
        "assert set(toolhall.__all__) <= set(dir(toolhall))\n"
        "assert set(toolhall._LAZY) <= set(toolhall.__all__), 'a lazy name missing from __all__'\n"
        "from toolhall import *\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
