"""Organising tools: registry, merge, filters, prefixes, exports and name aliases."""

from __future__ import annotations

import pytest

from toolhall import Tool, Toolbox, tool

pytestmark = pytest.mark.anyio


def make(name: str, *, roles: set[str] | None = None, tags: set[str] | None = None) -> Tool:
    """A trivial tool called `name`."""
    return tool(name=name, roles=roles or set(), tags=tags or set())(lambda: name)


def test_registration_order_and_replacement() -> None:
    """Tools iterate in registration order; registering a name again replaces it in place of the old."""
    tb = Toolbox([make("a"), make("b")], name="base")
    newer = make("a")
    tb.register(make("c"), newer)
    assert tb.names() == ["b", "c", "a"]
    assert tb["a"] is newer and "a" in tb and len(tb) == 3
    assert [t.name for t in tb] == ["b", "c", "a"]


def test_register_wraps_plain_functions() -> None:
    """A plain function is wrapped with Tool.from_function."""

    def hello() -> str:
        return "hi"

    tb = Toolbox([hello])
    assert isinstance(tb["hello"], Tool)


def test_unregister_and_missing_lookups() -> None:
    """unregister says whether it removed; get returns None and [] raises KeyError naming the tool."""
    tb = Toolbox([make("a")], name="box")
    assert tb.unregister("a") is True and tb.unregister("a") is False
    assert tb.get("a") is None and "a" not in tb
    with pytest.raises(KeyError, match="no tool named 'a' in toolbox 'box'"):
        tb["a"]


def test_merge_right_side_wins_and_leaves_inputs_alone() -> None:
    """merge and | give a new toolbox; the right side wins on a shared name."""
    left = Toolbox([make("a"), make("b")])
    right_a = make("a")
    right = Toolbox([right_a, make("c")])
    merged = left | right
    assert merged.names() == ["b", "a", "c"] or merged.names() == ["a", "b", "c"]
    assert merged["a"] is right_a
    assert left.names() == ["a", "b"] and right.names() == ["a", "c"]
    assert left.merge(right).names() == merged.names()


def test_filter_by_role_tags_and_predicate() -> None:
    """Tools without roles are for every role; tags match any of; predicates combine."""
    tb = Toolbox(
        [
            make("everyone"),
            make("impl_only", roles={"impl"}),
            make("control_only", roles={"control"}, tags={"chain"}),
            make("tagged", tags={"fs", "read"}),
        ]
    )
    assert tb.for_role("impl").names() == ["everyone", "impl_only", "tagged"]
    assert tb.filter(role="control").names() == ["everyone", "control_only", "tagged"]
    assert tb.filter(tags={"read", "chain"}).names() == ["control_only", "tagged"]
    assert tb.filter(predicate=lambda t: t.name.startswith("e")).names() == ["everyone"]
    assert len(tb) == 4


async def test_prefixed_renames_and_calls() -> None:
    """prefixed prepends the prefix as given and the renamed tools still run."""
    tb = Toolbox([make("read_file")]).prefixed("fs_")
    assert tb.names() == ["fs_read_file"]
    assert (await tb.call("fs_read_file")).output == "read_file"


def test_schemas_are_fresh_top_level_dicts() -> None:
    """Each export returns new top-level dicts, so a caller's additions do not leak into the next export."""
    tb = Toolbox([make("a"), make("b")])
    first = tb.schemas("anthropic")
    first[0]["cache_control"] = {"type": "ephemeral"}
    assert "cache_control" not in tb.schemas("anthropic")[0]
    openai = tb.schemas("openai")
    openai[0]["function"]["name"] = "changed"
    assert tb.schemas("openai")[0]["function"]["name"] == "a"


def test_schemas_follow_registration_changes() -> None:
    """The export cache is dropped when the toolbox changes."""
    tb = Toolbox([make("a")])
    assert [s["name"] for s in tb.schemas("anthropic")] == ["a"]
    tb.register(make("b"))
    assert [s["name"] for s in tb.schemas("anthropic")] == ["a", "b"]


async def test_call_accepts_exported_names() -> None:
    """A tool exported under a provider-legal name is callable by that name too."""
    tb = Toolbox([make("chain:status"), make("math.factorial")])
    exported = [s["function"]["name"] for s in tb.schemas("openai")]
    assert all(":" not in name and "." not in name for name in exported)
    for name, original in zip(exported, ["chain:status", "math.factorial"], strict=True):
        result = await tb.call(name)
        assert result.ok and result.output == original and result.tool_name == original
