"""The safe fetcher refuses non-public addresses before any connection is attempted."""

from __future__ import annotations

import ipaddress

import pytest

from workflows.tools.web.addresses import non_public_reason, parse_target
from workflows.tools.web.fetch import FetchBlocked, FetchFailed, SafeFetcher

REFUSED = [
    "http://localhost/",
    "http://LOCALHOST./admin",
    "http://api.localhost/",
    "http://127.0.0.1/",
    "http://127.0.0.2:8080/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.0.0.1/",
    "http://127.1/",
    "http://0.0.0.0/",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://172.31.255.254/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[64:ff9b::a00:1]/",
    "http://224.0.0.1/",
    "https://10.0.0.1/",
    "file:///etc/passwd",
    "gopher://example.org:70/1",
    "ftp://example.org/file",
    "javascript:alert(1)",
    "//example.org/no-scheme",
    "http://user:pass@example.org/",
    "http:///nohost",
]


@pytest.mark.parametrize("url", REFUSED)
async def test_refused_before_any_lookup_or_connection(url, fetcher, transport, resolver):
    """Bad schemes, local names and non-public literals fail without DNS or a connection."""
    with pytest.raises(FetchBlocked):
        await fetcher.get(url)
    assert transport.requests == []
    assert resolver.lookups == []


@pytest.mark.parametrize(
    "addresses",
    [["10.0.0.5"], ["192.168.0.10"], ["::1"], ["93.184.215.14", "10.0.0.1"], ["::ffff:10.0.0.1"]],
)
async def test_name_resolving_to_a_private_address_is_refused(
    addresses, fetcher, transport, resolver
):
    """Every resolved address is checked: one non-public answer is enough to refuse."""
    resolver.table["intranet.example.com"] = addresses
    with pytest.raises(FetchBlocked, match="Only public internet addresses"):
        await fetcher.get("https://intranet.example.com/")
    assert resolver.lookups == ["intranet.example.com"]
    assert transport.requests == []


@pytest.mark.parametrize(
    "target",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://2130706433/",
        "http://[::ffff:127.0.0.1]/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:70/",
    ],
)
async def test_redirect_into_a_refused_address(target, fetcher, transport, website):
    """A redirect hop is checked like the first URL: only the redirect itself is requested."""
    with pytest.raises(FetchBlocked):
        await fetcher.get(website.page_url(f"/redirect-to?url={target}"))
    assert [request.url.path for request in transport.requests] == ["/robots.txt", "/redirect-to"]
    assert website.paths == ["/robots.txt", f"/redirect-to?url={target}"]


async def test_redirect_to_another_loopback_port_is_refused(fetcher, transport, website):
    """Allowing the test site's origin does not allow other loopback addresses or ports."""
    for target in (f"http://127.0.0.2:{website.port}/a", f"http://localhost:{website.port}/a"):
        with pytest.raises(FetchBlocked):
            await fetcher.get(website.page_url(f"/redirect-to?url={target}"))
    assert [r.url.path for r in transport.requests].count("/a") == 0
    assert not any(path == "/a" for path in website.paths)


async def test_connects_to_the_checked_address_not_the_name(settings_for, website, transport):
    """The name is resolved once, checked, and the connection goes to that very address,
    with the original Host header: a second DNS answer cannot swap the address."""
    answers = iter([["127.0.0.1"], ["10.0.0.1"]])
    lookups = []

    async def rebinding_resolver(host: str, port: int) -> list[str]:
        lookups.append(host)
        return next(answers)

    settings = settings_for(allow_hosts=[f"site.test:{website.port}"], respect_robots=False)
    async with SafeFetcher(settings, resolver=rebinding_resolver, transport=transport) as fetcher:
        page = await fetcher.get(f"http://site.test:{website.port}/a")
    assert page.url == f"http://site.test:{website.port}/a"
    assert lookups == ["site.test"]
    [request] = transport.requests
    assert request.url.host == "127.0.0.1"
    assert request.headers["Host"] == f"site.test:{website.port}"
    assert website.requests[-1].headers["Host"] == f"site.test:{website.port}"


async def test_https_sends_the_host_name_for_sni(settings_for, transport, resolver):
    """For https the TLS server name is the host name, although the socket goes to the IP."""
    resolver.table["secure.test"] = ["127.0.0.1"]
    settings = settings_for(allow_hosts=["secure.test:9"], respect_robots=False)
    async with SafeFetcher(settings, resolver=resolver, transport=transport) as fetcher:
        with pytest.raises(FetchFailed):
            await fetcher.get("https://secure.test:9/")  # nothing listens on port 9
    [request] = transport.requests
    assert request.url.host == "127.0.0.1"
    assert request.extensions["sni_hostname"] == "secure.test"
    assert request.headers["Connection"] == "close"  # no TLS reuse across names on one IP


async def test_unresolvable_name_fails_clearly(fetcher, transport):
    """A name that does not resolve is a plain failure, not a crash."""
    with pytest.raises(FetchFailed, match="could not be resolved"):
        await fetcher.get("http://no-such-host.example/")
    assert transport.requests == []


@pytest.mark.parametrize(
    ("raw", "host"),
    [
        ("http://2130706433/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://0x7f.1/", "127.0.0.1"),
        ("http://[::FFFF:127.0.0.1]/", "::ffff:7f00:1"),
        ("http://Example.ORG./path#frag", "example.org"),
        ("http://bücher.example/", "xn--bcher-kva.example"),
    ],
)
def test_hosts_are_normalised(raw, host):
    """Numeric and mixed-case forms are put in one canonical form before any check."""
    assert parse_target(raw).host == host


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.215.14", "2606:4700:4700::1111", "1.1.1.1"])
def test_public_addresses_pass(address):
    """Ordinary internet addresses are allowed."""
    assert non_public_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("192.0.2.1", "an address reserved for documentation and examples"),
        ("198.51.100.7", "an address reserved for documentation and examples"),
        ("2001:db8::1", "an address reserved for documentation and examples"),
        ("198.18.0.1", "an address reserved for benchmarking"),
        ("100.64.0.1", "a carrier-grade NAT address"),
        ("240.0.0.1", "a reserved address"),
        ("10.0.0.1", "a private network address"),
        ("192.168.1.1", "a private network address"),
    ],
)
def test_refusals_say_what_the_address_is(address, reason):
    """A refused address is named for what it is: a documentation address is not called a
    private network."""
    assert non_public_reason(ipaddress.ip_address(address)).startswith(reason)


async def test_fetch_refusal_names_a_documentation_address(fetcher, transport):
    """Fetching a documentation address is refused with that reason, before any request."""
    with pytest.raises(
        FetchBlocked, match=r"192\.0\.2\.1 is an address reserved for documentation"
    ):
        await fetcher.get("http://192.0.2.1/")
    assert transport.requests == []
