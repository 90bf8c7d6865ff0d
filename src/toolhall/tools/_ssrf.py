"""Address classification for the HTTP tool: which destinations an agent may reach.

The guard works on *resolved addresses*, not on URL spellings: every spelling of a host (decimal
`2130706433`, octal `0177.0.0.1`, hex, short `127.1`, `[::ffff:127.0.0.1]`, a name that resolves to
loopback) ends up as an `ipaddress` value that is checked here, and the transport then dials exactly that
value. Python's `ipaddress` flags are not used for the verdict: they miss embedded forms
(`::ffff:127.0.0.1` is not `is_loopback`) and changed between 3.11 patch releases, so the verdict comes
from the explicit tables below, after unwrapping IPv4-mapped, IPv4-compatible, 6to4 and NAT64 addresses.
IPv6 is allowed only inside global unicast `2000::/3`; IPv4 special-purpose ranges are listed in full.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DENIED_NAMES",
    "DENIED_NETWORKS",
    "AddressGuard",
    "HostRule",
    "IPAddress",
    "IPNetwork",
    "classify",
    "embedded_ipv4",
    "numeric_host",
    "parse_host_rule",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _table(rows: Iterable[tuple[str, str]]) -> tuple[tuple[IPNetwork, str], ...]:
    return tuple((ipaddress.ip_network(net), why) for net, why in rows)


# Most specific first, so the reason names the narrowest range (broadcast before reserved).
DENIED_NETWORKS: tuple[tuple[IPNetwork, str], ...] = _table(
    [
        ("0.0.0.0/8", "unspecified ('this network'; 0.0.0.0 reaches local listeners)"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared address space (carrier-grade NAT; some cloud metadata)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local (cloud metadata endpoints)"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments (some cloud metadata)"),
        ("192.0.2.0/24", "documentation (TEST-NET-1)"),
        ("192.88.99.0/24", "deprecated 6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation (TEST-NET-2)"),
        ("203.0.113.0/24", "documentation (TEST-NET-3)"),
        ("224.0.0.0/4", "multicast"),
        ("255.255.255.255/32", "broadcast"),
        ("240.0.0.0/4", "reserved"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::ffff:0:0:0/96", "IPv4-translated (RFC 2765)"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("100::/64", "discard-only"),
        ("2001:db8::/32", "documentation"),
        ("2001::/23", "IETF protocol assignments (Teredo, benchmarking, ORCHID)"),
        ("3fff::/20", "documentation"),
        ("5f00::/16", "segment routing (SRv6)"),
        ("fc00::/7", "unique-local (fd00:ec2::254 is a cloud metadata endpoint)"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local (deprecated)"),
        ("ff00::/8", "multicast"),
    ]
)

_GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")

# Names refused before any lookup: RFC 6761 loopback names (some resolvers forward `*.localhost` to DNS)
# and the cloud metadata names. An explicit allow_hosts entry for the name lifts this.
DENIED_NAMES: tuple[str, ...] = (
    "localhost",
    "*.localhost",
    "localhost.localdomain",
    "ip6-localhost",
    "ip6-loopback",
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "instance-data",
    "instance-data.ec2.internal",
)


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 address carries, and the form it is carried in, if any.

    Args:
        address: An IPv6 address.

    Returns:
        `(inner, form)` for IPv4-mapped, NAT64 (64:ff9b::/96), 6to4 and IPv4-compatible addresses;
        None otherwise.
    """
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped, "IPv4-mapped"
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _NAT64:
        return low32, "NAT64"
    if address.sixtofour is not None:
        return address.sixtofour, "6to4"
    if address in _V4_COMPATIBLE and int(address) > 1:
        return low32, "IPv4-compatible"
    return None


def _table_reason(address: IPAddress) -> str | None:
    for network, why in DENIED_NETWORKS:
        if network.version == address.version and address in network:
            return f"{address} is in {network}: {why}"
    return None


def classify(address: IPAddress | str) -> str | None:
    """Why an address may not be reached, or None for a public unicast address.

    Args:
        address: An address, or its text (an IPv6 zone id such as `%eth0` is ignored).

    Returns:
        A sentence naming the address, the denied network and its kind; None when the address is allowed.

    Example:
        >>> classify("10.1.2.3")
        '10.1.2.3 is in 10.0.0.0/8: private'
    """
    if isinstance(address, str):
        address = ipaddress.ip_address(address.split("%", 1)[0])
    if address.version == 4:
        return _table_reason(address)
    v6 = ipaddress.IPv6Address(int(address))
    if v6 in (ipaddress.IPv6Address("::"), ipaddress.IPv6Address("::1")):
        return _table_reason(v6)
    inner = embedded_ipv4(v6)
    if inner is not None:
        v4, form = inner
        why = classify(v4)
        if why is not None:
            return f"{v6} carries {v4} ({form}): {why}"
        if form == "IPv4-compatible":
            return f"{v6} is IPv4-compatible (::/96), deprecated since RFC 4291"
        return None
    why = _table_reason(v6)
    if why is None and v6 not in _GLOBAL_UNICAST_V6:
        why = f"{v6} is outside global unicast 2000::/3: reserved"
    return why


# WHATWG URL: a host whose last label is a number is an IPv4 address, never a name to look up.
_NUMERIC_LABEL = re.compile(r"^(?:0[xX][0-9a-fA-F]*|[0-9]+)$")
_INET_ATON_CHARS = re.compile(r"^[0-9a-fA-FxX.]+$")
_NAME = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)(?:\.(?!-)[a-z0-9_-]{1,63}(?<!-))*$")


def numeric_host(host: str) -> IPAddress | None:
    """The address a host spells, if it spells one, in any of the forms C resolvers accept.

    Args:
        host: A URL host (no brackets), already lower-cased.

    Returns:
        The address for an IP literal (including `2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`);
        None for a host name.

    Raises:
        ValueError: The host ends in a number but is not a valid IPv4 address (`425.510.425.510`), or
            is neither an address nor a valid host name; such hosts are never sent to DNS.
    """
    bare = host[:-1] if host.endswith(".") else host
    try:
        return ipaddress.ip_address(bare.split("%", 1)[0] if ":" in bare else bare)
    except ValueError:
        pass
    if ":" in bare:
        raise ValueError(f"{host!r} is not a valid IPv6 address")
    last = bare.rsplit(".", 1)[-1]
    if _NUMERIC_LABEL.match(last):
        # inet_aton ignores anything after whitespace, so check the characters first.
        if not _INET_ATON_CHARS.match(bare):
            raise ValueError(f"{host!r} ends in a number but is not an IPv4 address")
        try:
            return ipaddress.IPv4Address(socket.inet_aton(bare))
        except OSError:
            raise ValueError(f"{host!r} ends in a number but is not a valid IPv4 address") from None
    if not _NAME.match(bare):
        raise ValueError(f"{host!r} is not a valid host name (letters, digits, '-', '_' and dots)")
    return None


@dataclass(frozen=True, slots=True)
class HostRule:
    """One allow_hosts / deny_hosts entry: a name, a `*.` wildcard, an address or a CIDR network."""

    kind: Literal["name", "wildcard", "network"]
    """What the entry matches: an exact name, any subdomain of a name, or addresses."""
    value: str
    """The lower-cased name (wildcards without `*.`), or the network's text."""
    network: IPNetwork | None = None
    """The network, for `network` entries (a single address is a /32 or /128)."""
    port: int | None = None
    """The only port the entry covers, or None for every port."""
    entry: str = ""
    """The entry as written, for messages."""

    def matches_name(self, host: str, port: int) -> bool:
        """Whether a host name (lower case, no trailing dot) and port fall under this entry."""
        if self.port is not None and self.port != port:
            return False
        if self.kind == "name":
            return host == self.value
        if self.kind == "wildcard":
            return host.endswith("." + self.value)
        return False

    def matches_address(self, address: IPAddress, port: int) -> bool:
        """Whether an address and port fall under this entry."""
        if self.network is None or (self.port is not None and self.port != port):
            return False
        return self.network.version == address.version and address in self.network


_PORTED = re.compile(r"^(?P<host>\[[^\]]+\]|[^:\[\]]+)(?::(?P<port>[0-9]{1,5}))?$")


def _normalise_name(name: str) -> str:
    name = name.strip().lower().rstrip(".")
    if not name.isascii():
        import idna  # httpx's own dependency; UTS 46 as browsers do

        name = idna.encode(name, uts46=True).decode("ascii")
    return name


def parse_host_rule(entry: str) -> HostRule:
    """Parse an allow_hosts / deny_hosts entry.

    Args:
        entry: `host`, `host:port`, `*.example.com`, an address (`127.0.0.1`, `::1`, `[::1]:8080`) or a
            CIDR network (`10.0.0.0/8`, `fd00::/8`).

    Returns:
        The parsed rule.

    Raises:
        ValueError: The entry is none of the forms above; the message names the entry.
    """
    text = entry.strip()
    if "/" in text and "://" not in text:
        try:
            return HostRule("network", text, ipaddress.ip_network(text.strip("[]"), strict=False), None, entry)
        except ValueError as exc:
            raise ValueError(f"host entry {entry!r} is not a valid CIDR network: {exc}") from None
    try:  # a bare IPv6 address has colons but no port
        address = ipaddress.ip_address(text)
        return HostRule("network", str(address), ipaddress.ip_network(address), None, entry)
    except ValueError:
        pass
    match = _PORTED.match(text)
    if match is None or "://" in text:
        raise ValueError(f"host entry {entry!r} is not valid: use host, host:port, *.domain, an IP address or CIDR")
    host, port = match["host"], int(match["port"]) if match["port"] else None
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"host entry {entry!r} has port {port}, outside 1-65535")
    if host.startswith("["):
        try:
            address = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ValueError(f"host entry {entry!r} has an invalid IPv6 address") from None
        return HostRule("network", str(address), ipaddress.ip_network(address), port, entry)
    try:
        address4 = ipaddress.IPv4Address(host)
        return HostRule("network", host, ipaddress.ip_network(address4), port, entry)
    except ValueError:
        pass
    wildcard = host.startswith("*.")
    name = _normalise_name(host[2:] if wildcard else host)
    if not _NAME.match(name):
        raise ValueError(f"host entry {entry!r} is not a valid host name, address or network")
    return HostRule("wildcard" if wildcard else "name", name, None, port, entry)


_BUILTIN_DENIED = tuple(parse_host_rule(n) for n in DENIED_NAMES)


class AddressGuard:
    """Decides which hosts and addresses the HTTP tool may connect to.

    Order: a `deny` entry always wins; then an `allow` entry admits its name or addresses (this is how a
    local service is opened up); then, when `block_private` is on, loopback, private, link-local and the
    other non-public ranges in `DENIED_NETWORKS` are refused, as are the names in `DENIED_NAMES`.
    """

    def __init__(self, allow: Iterable[str] = (), deny: Iterable[str] = (), *, block_private: bool = True):
        self.allow = tuple(parse_host_rule(e) for e in allow)
        self.deny = tuple(parse_host_rule(e) for e in deny)
        self.block_private = block_private

    def check_name(self, host: str, port: int) -> tuple[bool, str | None]:
        """Judge a host name before it is resolved.

        Args:
            host: The URL host, lower case (a trailing dot is ignored).
            port: The port the request goes to.

        Returns:
            `(allowed_by_name, refusal)`: a refusal message, or whether an allow entry names this host
            (its addresses then skip the private-range check but not the deny entries).
        """
        name = host.rstrip(".")
        for rule in self.deny:
            if rule.matches_name(name, port):
                return False, f"host {name!r} is denied by the deny_hosts entry {rule.entry!r}"
        if any(rule.matches_name(name, port) for rule in self.allow):
            return True, None
        if self.block_private and any(rule.matches_name(name, port) for rule in _BUILTIN_DENIED):
            return False, (
                f"host {name!r} is a loopback or cloud-metadata name; add it to allow_hosts to reach a local service"
            )
        return False, None

    def check_address(self, address: IPAddress, port: int, *, allowed_by_name: bool = False) -> str | None:
        """Judge one resolved address.

        Args:
            address: An address the host resolved to (or the literal it spells).
            port: The port the request goes to.
            allowed_by_name: Whether `check_name` found an allow entry for the host.

        Returns:
            A refusal message, or None when the address may be dialled.
        """
        for rule in self.deny:
            if rule.matches_address(address, port):
                return f"address {address} is denied by the deny_hosts entry {rule.entry!r}"
        if allowed_by_name or any(rule.matches_address(address, port) for rule in self.allow):
            return None
        if not self.block_private:
            return None
        why = classify(address)
        return None if why is None else f"{why}; add it to allow_hosts to reach a local service"
