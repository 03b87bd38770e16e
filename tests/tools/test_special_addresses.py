"""The special-purpose ranges are refused whatever the Python version's `ipaddress` tables say
(3.11 calls site-local fec0::/10 and 192.0.0.9 global), in every spelling, by the fetcher (a
first URL, a name resolving there, a redirect there) and for a user's MCP server."""

from __future__ import annotations

import ipaddress

import pytest

from workflows.tools.mcp.servers import McpServer
from workflows.tools.mcp.transport import ServerUnavailable, check_address
from workflows.tools.web.addresses import non_public_reason
from workflows.tools.web.fetch import FetchBlocked

SPECIAL = [
    "fec0::1",  # site-local (deprecated, still routed inside networks)
    "feff:ffff::1",
    "192.0.0.1",  # IETF protocol assignments
    "192.0.0.9",
    "192.0.0.170",
    "192.88.99.1",  # the old 6to4 relays
    "255.255.255.255",
    "2001::1",  # Teredo, inside the IETF's 2001::/23
    "2001:2::1",
    "3fff::1",  # documentation (RFC 9637)
    "5f00::1",  # SRv6
    "100::1",  # discard-only
    "64:ff9b:1::1",  # local translation
    "::c000:9",  # IPv4-compatible
    "4000::1",  # outside global unicast
]


@pytest.mark.parametrize("address", SPECIAL)
def test_special_purpose_addresses_are_not_public(address):
    """Each address of the registries is refused with a reason."""
    assert non_public_reason(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2a00:1450:4001::1", "192.0.1.1"]
)
def test_public_addresses_still_pass(address):
    """Ordinary internet addresses (just beside the ranges) are allowed."""
    assert non_public_reason(ipaddress.ip_address(address)) is None


SPELLINGS = [
    "http://[fec0::1]/",
    "http://[FEC0:0:0:0:0:0:0:1]/",
    "http://[fec0::0001]:8080/",
    "http://[::ffff:192.0.0.9]/",  # IPv4-mapped
    "http://[::ffff:c000:9]/",
    "http://[2002:c000:0009::1]/",  # 6to4 of 192.0.0.9
    "http://[64:ff9b::c000:9]/",  # NAT64 of 192.0.0.9
    "http://192.0.0.9/",
    "http://3221225481/",  # 192.0.0.9 as one number
    "http://0300.0.0.011/",  # octal
    "http://0xc0.0.0.9/",  # hexadecimal
    "http://0xc0000009/",
    "http://192.0.9/",  # inet_aton's short form: 192.0.0.9
    "https://192.88.99.1/",
]


@pytest.mark.parametrize("url", SPELLINGS)
async def test_every_spelling_is_refused_before_any_lookup_or_connection(
    url, fetcher, transport, resolver
):
    """A URL naming one of these addresses is refused before DNS or a connection."""
    with pytest.raises(FetchBlocked):
        await fetcher.get(url)
    assert transport.requests == []
    assert resolver.lookups == []


@pytest.mark.parametrize("address", ["fec0::5", "192.0.0.9", "::ffff:192.0.0.9"])
async def test_a_name_resolving_there_is_refused(address, fetcher, transport, resolver):
    """A name whose address is in these ranges is refused after the lookup, before any
    connection."""
    resolver.table["inside.example.com"] = ["203.0.113.10", address]
    with pytest.raises(FetchBlocked):
        await fetcher.get("https://inside.example.com/")
    assert transport.requests == []


@pytest.mark.parametrize("target", ["http://[fec0::1]/", "http://192.0.0.9/", "http://0xc0.0.0.9/"])
async def test_a_redirect_there_is_not_followed(target, fetcher, transport, website):
    """A redirect hop into these ranges is checked like a first URL: not requested."""
    with pytest.raises(FetchBlocked):
        await fetcher.get(website.page_url(f"/redirect-to?url={target}"))
    assert [request.url.path for request in transport.requests] == ["/robots.txt", "/redirect-to"]


@pytest.mark.parametrize(
    ("url", "resolved"),
    [
        ("http://[fec0::1]/mcp", None),
        ("http://192.0.0.9/mcp", None),
        ("https://mcp.example.test/mcp", "fec0::7"),
        ("https://mcp.example.test/mcp", "192.0.0.10"),
    ],
)
async def test_a_users_mcp_server_there_is_refused(url, resolved):
    """A user's MCP server at (or resolving to) such an address is refused before any
    connection."""

    async def resolve(host: str, port: int) -> list[str]:
        assert resolved is not None, "a literal address is judged without a lookup"
        return [resolved]

    server = McpServer(name="mine", url=url, owner=7)
    with pytest.raises(ServerUnavailable, match="refused"):
        await check_address(server, frozenset(), resolve)
