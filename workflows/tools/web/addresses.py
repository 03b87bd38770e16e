"""Which web addresses the fetcher may reach: URL parsing and the public-address rule.

Pure functions, no I/O: the fetcher resolves names and then asks these whether every
address it got is a public one.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit, urlunsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = {"http": 80, "https": 443}

# What inet_aton accepts besides dotted quads: 2130706433, 0177.0.0.1, 0x7f.1, 127.1.
_NUMERIC_HOST = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}$", re.I)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _nets(*cidrs: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(cidr) for cidr in cidrs]


# The special-purpose registries (IANA, RFC 6890 and later), written out here rather than read
# from the running Python's `ipaddress` tables, which differ between versions (3.11 counts
# site-local fec0::/10 and 192.0.0.9 as global). Checked in order, before Python's own flags.
_SPECIAL_PURPOSE = [
    (_nets("0.0.0.0/8", "::/128"), "the unspecified address or this network"),
    (_nets("127.0.0.0/8", "::1/128"), "a loopback address of this machine"),
    (
        _nets("169.254.0.0/16", "fe80::/10"),
        "a link-local address (such as a cloud metadata service)",
    ),
    (_nets("224.0.0.0/4", "ff00::/8"), "a multicast address"),
    (
        _nets("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "3fff::/20"),
        "an address reserved for documentation and examples (RFC 5737, RFC 3849, RFC 9637)",
    ),
    (
        _nets("198.18.0.0/15", "2001:2::/48"),
        "an address reserved for benchmarking (RFC 2544, RFC 5180)",
    ),
    (_nets("100.64.0.0/10"), "a carrier-grade NAT address (RFC 6598)"),
    (
        _nets("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"),
        "a private network address",
    ),
    (_nets("fec0::/10"), "a site-local address (RFC 3879: deprecated, private in use)"),
    (
        _nets("192.0.0.0/24", "2001::/23"),
        "an address of the IETF's protocol assignments (RFC 6890)",
    ),
    (
        _nets(
            "192.88.99.0/24",  # the old 6to4 relays (RFC 7526)
            "240.0.0.0/4",
            "255.255.255.255/32",
            "64:ff9b:1::/48",  # local IPv4/IPv6 translation (RFC 8215)
            "100::/64",  # discard-only (RFC 6666)
            "5f00::/16",  # SRv6 segment identifiers (RFC 9602)
            "::/8",  # IPv4-compatible and other reserved forms (mapped ones are unwrapped first)
        ),
        "a reserved address",
    ),
]
_GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
"""The only IPv6 addresses given out on the internet; everything else is reserved."""


class AddressRefused(ValueError):
    """A URL the fetcher will not request; the message says why, in plain words."""


@dataclass(frozen=True)
class Target:
    """One parsed http(s) URL, with its host in canonical form."""

    url: httpx.URL
    """The URL as requested (no fragment), with numeric hosts rewritten to dotted form."""
    host: str
    """ASCII host name (IDNA), or the canonical IP address for a literal."""
    port: int
    literal: IPAddress | None
    """The address itself when the URL names one instead of a host name."""

    @property
    def host_header(self) -> str:
        """The Host header value: host, bracketed for IPv6, port unless the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.port == DEFAULT_PORTS[self.url.scheme]:
            return host
        return f"{host}:{self.port}"

    @property
    def origin(self) -> str:
        """ "host:port", the form allow_hosts lists."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def site(self) -> str:
        """scheme://host[:port], the key robots.txt is cached under."""
        return f"{self.url.scheme}://{self.host_header}"


def url_port(parts: SplitResult) -> int:
    """The port a URL reaches, the scheme's default made explicit."""
    return parts.port or DEFAULT_PORTS.get(parts.scheme, 80)


def is_allowed(host: str, port: int, allow_hosts: Iterable[str]) -> bool:
    """Whether the operator allowed this non-public address (POWERON_FETCH_ALLOW_HOSTS): an
    entry `host:port` allows that origin, a bare `host` every port of it (the fetcher and
    users' MCP servers read the list alike)."""
    host = host.lower()
    bracketed = f"[{host}]" if ":" in host else host
    allowed = set(allow_hosts)
    return host in allowed or f"{bracketed}:{port}" in allowed


def literal_address(host: str) -> IPAddress | None:
    """The address a host string denotes by itself, in any form inet_aton accepts."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_HOST.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            raise AddressRefused(f"{host!r} is not a valid address") from None
    return None


def parse_target(raw: str) -> Target:
    """Parse an http(s) URL; raise AddressRefused for other schemes or malformed URLs."""
    text = raw.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise AddressRefused(f"{text!r} is not a valid web address") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        shown = f"{scheme}:" if scheme else "this kind of"
        raise AddressRefused(f"Only http and https addresses are fetched, not {shown} ({text})")
    if parts.username is not None or parts.password is not None:
        raise AddressRefused(f"Addresses with a user name or password are not fetched ({text})")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise AddressRefused(f"{text!r} names no host")
    port = port or DEFAULT_PORTS[scheme]
    literal = literal_address(host)
    if literal is not None:
        host = str(literal)
    shown_host = f"[{host}]" if ":" in host else host
    netloc = shown_host if port == DEFAULT_PORTS[scheme] else f"{shown_host}:{port}"
    try:
        url = httpx.URL(urlunsplit((scheme, netloc, parts.path or "/", parts.query, "")))
        ascii_host = url.raw_host.decode("ascii")
    except (httpx.InvalidURL, UnicodeError):
        raise AddressRefused(f"{text!r} is not a valid web address") from None
    return Target(url=url, host=host if literal else ascii_host, port=port, literal=literal)


def non_public_reason(address: IPAddress) -> str | None:
    """Why an address is not on the public internet, or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return non_public_reason(embedded)
    for networks, reason in _SPECIAL_PURPOSE:
        if any(address.version == network.version and address in network for network in networks):
            return reason
    if isinstance(address, ipaddress.IPv6Address) and address not in _GLOBAL_UNICAST_V6:
        return "a reserved address"
    # Python's own tables as well: whatever they call non-public stays refused.
    if address.is_loopback:
        return "a loopback address of this machine"
    if address.is_link_local:
        return "a link-local address (such as a cloud metadata service)"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private network address"
    if address.is_reserved or not address.is_global:
        return "a reserved address"
    return None


def is_local_name(host: str) -> bool:
    """True for "localhost" and its subdomains, which always mean this machine."""
    return host == "localhost" or host.endswith(".localhost")


def literal_reason(host: str) -> str | None:
    """Why a host, as written, is not on the public internet ("this machine" for localhost,
    or a literal address's reason); None for a public address or a name, which only a lookup
    can judge. Nothing is resolved."""
    if is_local_name(host):
        return "this machine"
    address = literal_address(host)
    return non_public_reason(address) if address is not None else None


def same_site(a: Target, b: Target) -> bool:
    """True when two URLs are on the same host and port (http and https count as one)."""
    return (
        a.host == b.host
        and a.port == b.port
        or (a.host == b.host and {a.port, b.port} <= set(DEFAULT_PORTS.values()))
    )
