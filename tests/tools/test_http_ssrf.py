"""The SSRF address table, numeric host parsing, host entries and the guard's order of decisions."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolhall.tools._ssrf import (
    DENIED_NETWORKS,
    AddressGuard,
    classify,
    embedded_ipv4,
    numeric_host,
    parse_host_rule,
)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("10.1.2.3", "private"),
        ("172.31.255.255", "private"),
        ("192.168.0.1", "private"),
        ("169.254.169.254", "link-local"),
        ("100.100.100.200", "shared address space"),
        ("192.0.0.192", "IETF protocol"),
        ("198.19.0.1", "benchmarking"),
        ("203.0.113.9", "documentation"),
        ("224.0.0.251", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("250.1.1.1", "reserved"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "IPv4-mapped"),
        ("::ffff:169.254.169.254", "link-local"),
        ("::127.0.0.1", "IPv4-compatible"),
        ("::8.8.8.8", "deprecated"),
        ("64:ff9b::a9fe:a9fe", "NAT64"),
        ("64:ff9b:1::1", "local-use NAT64"),
        ("2002:a9fe:a9fe::", "6to4"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
        ("2001:db8::1", "documentation"),
        ("fd00:ec2::254", "unique-local"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("100::1", "discard-only"),
        ("::ffff:0:7f00:1", "IPv4-translated"),
        ("4000::1", "outside global unicast"),
    ],
)
def test_non_public_address_is_denied_with_its_kind(address: str, kind: str) -> None:
    """Each special-purpose address is refused, and the reason names its kind."""
    reason = classify(address)
    assert reason is not None and kind in reason


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.216.34",
        "2606:4700:4700::1111",
        "2a00:1450::1",
        "64:ff9b::808:808",
        "2002:808:808::1",
        "::ffff:8.8.8.8",
    ],
)
def test_public_address_is_allowed(address: str) -> None:
    """Public unicast addresses, including public IPv4 carried in NAT64, 6to4 or mapped form, pass."""
    assert classify(address) is None


def test_every_denied_network_is_denied_at_both_ends() -> None:
    """The first and last address of every table row are refused (the table is self-consistent)."""
    for network, _ in DENIED_NETWORKS:
        for address in (network[0], network[-1]):
            assert classify(address) is not None, address


@given(st.ip_addresses(v=4))
def test_table_covers_everything_python_calls_non_global_ipv4(address: ipaddress.IPv4Address) -> None:
    """No IPv4 address that Python deems non-global (or multicast) gets through the table."""
    if not address.is_global or address.is_multicast:
        assert classify(address) is not None


@given(st.ip_addresses(v=6))
def test_table_covers_everything_python_calls_non_global_ipv6(address: ipaddress.IPv6Address) -> None:
    """No IPv6 address that Python deems non-global gets through, except public IPv4 carried inside."""
    if embedded_ipv4(address) is None and (not address.is_global or address.is_multicast):
        assert classify(address) is not None


@given(st.ip_addresses(v=4))
def test_embedded_forms_share_the_verdict_of_their_ipv4(address: ipaddress.IPv4Address) -> None:
    """Mapped, NAT64 and 6to4 spellings of an IPv4 address are refused exactly when it is."""
    denied = classify(address) is not None
    mapped = ipaddress.IPv6Address(f"::ffff:{address}")
    nat64 = ipaddress.IPv6Address(f"64:ff9b::{address}")
    sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (int(address) << 80))
    for spelling in (mapped, nat64, sixtofour):
        assert (classify(spelling) is not None) == denied, spelling


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("0xa9fea9fe", "169.254.169.254"),
        ("127.0.0.1.", "127.0.0.1"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("fe80::1%25eth0", "fe80::1"),
    ],
)
def test_numeric_hosts_parse_as_c_resolvers_do(host: str, address: str) -> None:
    """Decimal, octal, hex and short IPv4 forms mean what getaddrinfo makes of them."""
    assert numeric_host(host) == ipaddress.ip_address(address)


@pytest.mark.parametrize("host", ["425.510.425.510", "1.2.3.4 x", "a.b.0x7f", "%31%32%37", "exa mple.com", "::zz"])
def test_malformed_numeric_or_name_hosts_are_rejected_without_lookup(host: str) -> None:
    """A host that ends in a number must be an IPv4 address; anything else must be a valid name."""
    with pytest.raises(ValueError, match="not"):
        numeric_host(host)


def test_names_are_not_numeric() -> None:
    """Ordinary names (even all-hex ones) are names."""
    assert numeric_host("example.com") is None and numeric_host("cafe.be") is None


@pytest.mark.parametrize(
    ("entry", "kind", "port"),
    [
        ("127.0.0.1", "network", None),
        ("127.0.0.1:8080", "network", 8080),
        ("[::1]:8080", "network", 8080),
        ("::1", "network", None),
        ("10.0.0.0/8", "network", None),
        ("fd00::/8", "network", None),
        ("api.example.com", "name", None),
        ("API.Example.com.:443", "name", 443),
        ("*.example.com", "wildcard", None),
    ],
)
def test_host_entries_parse(entry: str, kind: str, port: int | None) -> None:
    """Every documented entry form parses to its kind and port."""
    rule = parse_host_rule(entry)
    assert (rule.kind, rule.port) == (kind, port)


@pytest.mark.parametrize("entry", ["http://x.com", "*", "a b", "10.0.0.0/33", "host:99999", "[zz]:80", "-bad-.com"])
def test_bad_host_entries_name_the_entry(entry: str) -> None:
    """A malformed entry raises ValueError quoting it."""
    with pytest.raises(ValueError, match="host entry"):
        parse_host_rule(entry)


def test_wildcard_matches_subdomains_not_the_apex() -> None:
    """`*.example.com` covers `a.example.com` but not `example.com` or `badexample.com`."""
    rule = parse_host_rule("*.example.com")
    assert rule.matches_name("a.b.example.com", 443)
    assert not rule.matches_name("example.com", 443) and not rule.matches_name("badexample.com", 443)


def test_guard_order_deny_then_allow_then_table() -> None:
    """Deny entries win, allow entries open non-public addresses, the table refuses the rest."""
    guard = AddressGuard(allow=["10.0.0.0/8", "intranet.test"], deny=["10.9.0.0/16"])
    loopback = ipaddress.ip_address("127.0.0.1")
    assert guard.check_address(ipaddress.ip_address("10.1.1.1"), 80) is None
    assert "deny_hosts" in (guard.check_address(ipaddress.ip_address("10.9.1.1"), 80) or "")
    assert guard.check_address(loopback, 80) is not None
    assert guard.check_name("intranet.test", 80) == (True, None)
    assert guard.check_address(loopback, 80, allowed_by_name=True) is None
    assert guard.check_address(ipaddress.ip_address("8.8.8.8"), 443) is None


def test_builtin_names_are_refused_unless_allowed() -> None:
    """localhost and metadata names are refused by name; an allow entry lifts that."""
    assert AddressGuard().check_name("metadata.google.internal", 80)[1] is not None
    assert AddressGuard().check_name("x.localhost.", 80)[1] is not None
    assert AddressGuard(allow=["localhost"]).check_name("localhost", 80) == (True, None)
    assert AddressGuard(block_private=False).check_name("localhost", 80) == (False, None)
