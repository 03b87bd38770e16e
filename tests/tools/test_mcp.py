"""MCP servers as tool sources, against real servers written with the SDK: one over stdio and
one over streamable HTTP on loopback (tests/support/mcp_server.py)."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time

import pytest
from pydantic import ValidationError

from tests.support.mcp_servers import http_server, stdio_command
from workflows.engine.records.protocols import catalog_line
from workflows.tools.mcp import sources as mcp
from workflows.tools.mcp import tools as mcp_tools
from workflows.tools.mcp.servers import McpServer, load_servers
from workflows.tools.mcp.sources import McpHub


@pytest.fixture(autouse=True)
def fresh_listings():
    mcp.forget_listings()
    yield
    mcp.forget_listings()


def stdio_server(**fields) -> McpServer:
    return McpServer(name="calc", command=tuple(stdio_command()), **fields)


def by_name(tools) -> dict:
    return {tool.name: tool for tool in tools}


def test_a_configuration_problem_is_logged_once_per_process(settings, caplog, monkeypatch):
    from workflows.execution import setup

    monkeypatch.setattr(setup, "_SAID", set())  # as in a new process, whatever ran before
    settings.POWERON_MCP_SERVERS = json.dumps({"calc": {"command": "x", "colour": "blue"}})
    for _ in range(3):  # at every round and Tools panel
        assert setup.site_mcp_servers() == []
    said = [r.getMessage() for r in caplog.records if "calc" in r.getMessage()]
    assert len(said) == 1 and "colour" in said[0]


def test_the_configuration_is_checked_server_by_server(tmp_path):
    servers, problems = load_servers(
        json.dumps(
            {
                "calc": {"command": "python server.py stdio", "approval": ["add"]},
                "wiki": {"url": "https://mcp.example.org/mcp", "headers": {"X-Key": "k"}},
                "web": {"url": "https://203.0.113.9/mcp"},
                "Bad Name": {"url": "https://203.0.113.9/mcp"},
                "both": {"url": "https://203.0.113.9/mcp", "command": "x"},
                "ftp": {"url": "ftp://203.0.113.9/"},
            }
        )
    )
    assert [(s.name, s.transport) for s in servers] == [("calc", "stdio"), ("wiki", "http")]
    assert servers[0].command == ("python", "server.py", "stdio")
    assert servers[0].needs_approval("add") and not servers[0].needs_approval("sub")
    assert servers[1].needs_approval("anything")  # approval is the default
    assert len(problems) == 4
    assert "'web' is the method of built-in actions" in problems[0]
    assert "lowercase letters" in problems[1]
    assert "either a command (stdio) or a url" in problems[2]
    assert "http:// or https://" in problems[3]
    path = tmp_path / "servers.json"
    path.write_text(json.dumps([{"name": "wiki", "url": "https://mcp.example.org/mcp"}]))
    assert [s.name for s in load_servers(f"@{path}")[0]] == ["wiki"]
    assert "is not valid JSON" in load_servers("{nope")[1][0]
    assert "cannot read" in load_servers("@/nonexistent/servers.json")[1][0]


async def test_stdio_tools_join_the_catalog_and_run():
    """Listed as <server>.<tool> with their parameter names; arguments are checked against
    the tool's schema; results become documents; one connection serves the whole run."""
    async with McpHub([stdio_server(env={"NOTES_API_KEY": "key-from-the-operator"})]) as hub:
        tools, unavailable = await hub.catalog()
        assert unavailable == {}
        tools = by_name(tools)
        assert {"calc.add", "calc.city_facts", "calc.chart", "calc.fail"} <= set(tools)
        add = tools["calc.add"]
        assert catalog_line(add) == "calc.add(a,b)"
        assert add.untrusted_summary == "Add two integers and return the sum."
        assert add.Parameters.model_json_schema()["required"] == ["a", "b"]
        with pytest.raises(ValidationError, match="'x' is not of type 'integer'"):
            add.Parameters.model_validate({"a": "x", "b": 1})

        result = await add.run(add.Parameters.model_validate({"a": 2, "b": 40}), None)
        assert result.success, result.error
        files = {d.name: d for d in result.documents}
        assert files["add.md"].data == b"42"
        assert json.loads(files["add.json"].data) == {"result": 42}

        chart = tools["calc.chart"]
        result = await chart.run(chart.Parameters.model_validate({}), None)
        assert [(d.name, d.mime) for d in result.documents] == [("chart_1.png", "image/png")]
        assert result.documents[0].data.startswith(b"\x89PNG")

        fail = tools["calc.fail"]
        result = await fail.run(fail.Parameters.model_validate({"reason": "disk full"}), None)
        assert not result.success and result.error.startswith("calc.fail reported an error")

        # The server got its environment; what it gives back of it is redacted, as with
        # every header or environment value the operator configured.
        env = tools["calc.echo_env"]
        result = await env.run(env.Parameters.model_validate({"name": "NOTES_API_KEY"}), None)
        assert result.success and result.documents[0].data == b"***"
        # Its structured copy too (the SDK wraps a str result as {"result": ...}).
        assert [json.loads(d.data) for d in result.documents[1:]] == [{"result": "***"}]
        assert len(hub._holders) == 1  # every call went through the one connection


async def test_a_slow_tool_times_out_and_a_large_result_is_cut():
    server = stdio_server(timeout=0.5, max_output_chars=200)
    async with McpHub([server]) as hub:
        tools = by_name((await hub.catalog())[0])
        slow = tools["calc.slow"]
        started = time.monotonic()
        result = await slow.run(slow.Parameters.model_validate({"seconds": 30}), None)
        assert time.monotonic() - started < 5
        assert result.error == "calc.slow did not answer within 0.5 s"
    result = mcp_tools.to_result(server, "big", _Result("x" * 1_000))
    assert len(result.documents[0].data) == 200
    assert result.notes == ["The result was cut to 200 characters (it had 1,000)."]


def test_every_part_of_a_result_is_redacted():
    """The operator's credentials leave a result in none of its parts: structured content
    (keys and strings, however nested), embedded resources (text and binary), images and
    resource links."""
    from mcp.types import (
        BlobResourceContents,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextResourceContents,
    )

    secret = "key-from-the-operator"
    server = stdio_server(env={"NOTES_API_KEY": secret})
    result = _Result(f"token {secret}")
    blob = base64.b64encode(f"bytes {secret} end".encode()).decode()
    result.content += [
        EmbeddedResource(type="resource", resource=TextResourceContents(
            uri=f"file:///notes/{secret}.txt", text=f"text {secret}", mimeType="text/plain")),
        EmbeddedResource(type="resource", resource=BlobResourceContents(
            uri="file:///notes/raw.bin", blob=blob, mimeType="application/octet-stream")),
        ImageContent(type="image", data=blob, mimeType="image/png"),
        ResourceLink(type="resource_link", name="x", uri=f"https://203.0.113.9/{secret}"),
    ]  # fmt: skip
    result.structured_content = {"nested": [{secret: f"a {secret} b"}], "n": 1}
    converted = mcp_tools.to_result(server, "leak", result)
    everything = [d.name.encode() + d.data for d in converted.documents]
    everything += [note.encode() for note in converted.notes]
    assert len(converted.documents) == 5 and converted.notes
    assert not [part for part in everything if secret.encode() in part]
    assert json.loads(converted.documents[-1].data) == {"nested": [{"***": "a *** b"}], "n": 1}


class _Result:
    def __init__(self, text: str) -> None:
        from mcp.types import TextContent

        self.content = [TextContent(type="text", text=text)]
        self.structured_content = None
        self.is_error = False


async def test_http_servers_get_their_headers_and_a_failing_server_says_why(caplog):
    """A server that refuses us, or cannot start, leaves the catalog with its reason; the
    others stay. The log says the same reason, unwrapped from the SDK's task groups."""
    with http_server(token="s3cret") as url:
        good = McpServer(name="wiki", url=url, headers={"Authorization": "Bearer s3cret"})
        refused = McpServer(name="locked", url=url, headers={"Authorization": "Bearer wrong"})
        missing = McpServer(name="gone", command=("/nonexistent/mcp-server",))
        async with McpHub([good, refused, missing]) as hub:
            tools, unavailable = await hub.catalog()
        assert "wiki.add" in by_name(tools)
        assert not any(t.name.startswith(("locked.", "gone.")) for t in tools)
        assert set(unavailable) == {"locked.*", "gone.*"}
        assert unavailable["locked.*"].startswith("MCP server locked (127.0.0.1:")
        assert "401" in unavailable["locked.*"]
        assert unavailable["gone.*"].startswith("MCP server gone (/nonexistent/mcp-server) failed")
        logged = [r.getMessage() for r in caplog.records if r.name == "workflows.tools.mcp.sources"]
        assert unavailable["gone.*"] in logged and unavailable["locked.*"] in logged
        assert not any("TaskGroup" in line for line in logged)


async def test_a_listing_is_reused_while_fresh():
    with http_server() as url:
        server = McpServer(name="wiki", url=url)
        async with McpHub([server]) as hub:
            first, _ = await hub.catalog()
    # The server is gone, but its listing of a moment ago still stands.
    async with McpHub([server]) as hub:
        again, unavailable = await hub.catalog()
    assert [t.name for t in again] == [t.name for t in first] and unavailable == {}
    assert mcp.last_listing(server).error == ""


async def test_a_server_that_hangs_holds_up_only_the_first_run(monkeypatch):
    """The first listing waits for a server that accepts and never answers, to its limit.
    Once its listing failed, a run no longer waits for it: the server is asked again beside
    the run, which goes on without it, and the end of the run does not wait for it either."""
    monkeypatch.setattr(mcp, "CONNECT_SECONDS", 0.5)

    accepted = []

    async def silent(reader, writer):
        accepted.append(writer)
        await asyncio.sleep(3600)

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    server = McpServer(name="stuck", url=f"http://127.0.0.1:{port}/mcp")
    try:
        async with McpHub([server], allow_hosts=["127.0.0.1"]) as hub:
            tools, unavailable = await hub.catalog()
        assert tools == [] and "within 0.5 s" in unavailable["stuck.*"]
        mcp.last_listing(server).at -= mcp.LISTING_SECONDS  # the failure is no longer fresh
        hub = McpHub([server], allow_hosts=["127.0.0.1"])
        tools, unavailable = await hub.catalog()
        assert tools == [] and "within 0.5 s" in unavailable["stuck.*"]  # last time's reason
        (refresh,) = hub._refreshes
        assert not refresh.done()  # the server is being asked again while the run goes on
        _, again = await hub.catalog()  # one question at a time, however often it is asked
        assert len(hub._refreshes) == 1
        await asyncio.wait_for(hub.aclose(), 5)
        assert refresh.cancelled()
    finally:
        listener.close()
        for writer in accepted:
            writer.close()


async def test_a_users_server_on_a_private_address_is_refused_before_any_connection():
    """The fetcher's rule: documentation, private and loopback addresses are refused unless
    the operator allows the host (nothing is resolved or contacted)."""
    for url in ("http://192.0.2.10/mcp", "http://10.1.2.3:8080/mcp", "http://localhost:9/mcp"):
        server = McpServer(name="mine", url=url, owner=7)
        async with McpHub([server]) as hub:
            tools, unavailable = await hub.catalog()
        assert tools == [] and "refused" in unavailable["mine.*"], unavailable
        assert (
            "POWERON_FETCH_ALLOW_HOSTS" in unavailable["mine.*"]
            or "this machine" in (unavailable["mine.*"])
        )
        mcp.forget_listings()
    with http_server() as url:
        mine = McpServer(name="mine", url=url, owner=7)
        async with McpHub([mine], allow_hosts=["127.0.0.1"]) as hub:
            tools, unavailable = await hub.catalog()
        assert "mine.add" in by_name(tools) and unavailable == {}


def test_approval_patterns_follow_each_servers_setting():
    servers = [
        McpServer(name="calc", url="https://203.0.113.9/mcp"),
        McpServer(name="wiki", url="https://203.0.113.9/mcp", approval=False),
        McpServer(name="ops", url="https://203.0.113.9/mcp", approval=("restart-service",)),
    ]
    assert mcp_tools.approval_patterns(servers) == ["calc.*", "ops.restart_service"]


# --- A user's HTTP server is reached at the address that was checked (no DNS rebinding) ---

PUBLIC = "93.184.215.14"
"""A public address, used as data only: nothing here connects to it."""


async def test_a_users_server_named_by_host_is_pinned_to_its_checked_address():
    """Resolved once: every address must be public, and the first one is what the connection
    uses; the operator's servers, allowed hosts and literal addresses are not pinned."""
    from workflows.tools.mcp.transport import check_address

    lookups: list[str] = []

    def resolver(*addresses: str):
        async def resolve(host: str, port: int) -> list[str]:
            lookups.append(f"{host}:{port}")
            return list(addresses)

        return resolve

    mine = McpServer(name="mine", url="https://mcp.example.test/mcp", owner=7)
    assert await check_address(mine, frozenset(), resolver(PUBLIC)) == PUBLIC
    assert lookups == ["mcp.example.test:443"]
    with pytest.raises(mcp.ServerUnavailable, match="127.0.0.1, a loopback address.*refused"):
        await check_address(mine, frozenset(), resolver(PUBLIC, "127.0.0.1"))
    operators = McpServer(name="ops", url="https://mcp.example.test/mcp")
    allowed = frozenset({"mcp.example.test"})
    literal = McpServer(name="lit", url=f"https://{PUBLIC}/mcp", owner=7)
    for server, hosts in ((operators, frozenset()), (mine, allowed), (literal, frozenset())):
        assert await check_address(server, hosts, resolver("127.0.0.1")) is None
    assert len(lookups) == 2  # none for those three


async def test_a_pinned_transport_sends_to_the_address_and_keeps_the_name():
    """The URL gets the checked address; the Host header and TLS's server name keep the
    name (the certificate is checked against it); another host is refused."""
    import httpx2

    from workflows.tools.mcp.transport import PinnedTransport

    seen: list[httpx2.Request] = []

    def record(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, text="ok")

    pinned = PinnedTransport(httpx2.MockTransport(record), "mcp.example.test", PUBLIC)
    async with httpx2.AsyncClient(transport=pinned) as client:
        await client.get("https://mcp.example.test:8443/mcp")
        with pytest.raises(httpx2.ConnectError, match="pinned to mcp.example.test"):
            await client.get("https://elsewhere.example.test/mcp")
    (request,) = seen
    assert request.url.host == PUBLIC and request.url.port == 8443
    assert request.headers["Host"] == "mcp.example.test:8443"
    assert request.extensions["sni_hostname"] == "mcp.example.test"


async def test_a_users_server_is_listed_and_called_over_the_pinned_address(monkeypatch):
    """A name the system cannot resolve, answered once by the run's resolver: the listing and
    the tool call both reach the server, so no second lookup happened on the way (a second
    lookup would have failed). Loopback stands in for a public address here."""
    from workflows.tools.mcp import transport as mcp_http

    monkeypatch.setattr(mcp_http, "non_public_reason", lambda address: None)
    lookups: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["127.0.0.1"]

    with http_server(allow_host="mcp.rebind.invalid") as url:
        port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
        server = McpServer(name="mine", url=f"http://mcp.rebind.invalid:{port}/mcp", owner=7)
        async with McpHub([server], resolve=resolve) as hub:
            tools, unavailable = await hub.catalog()
            assert unavailable == {}, unavailable
            add = by_name(tools)["mine.add"]
            result = await add.run(add.Parameters.model_validate({"a": 2, "b": 3}), None)
    assert result.success and "5" in result.documents[0].data.decode()
    assert lookups == ["mcp.rebind.invalid"]


async def test_the_operators_allow_list_means_the_same_to_mcp_as_to_the_fetcher():
    """POWERON_FETCH_ALLOW_HOSTS: `host:port` allows that origin alone, a bare host every port
    of it, for a user's MCP server as for the fetcher (decided before any connection)."""
    from workflows.tools.mcp.transport import ServerUnavailable, check_address
    from workflows.tools.web.addresses import is_allowed

    assert is_allowed("127.0.0.1", 8731, ["127.0.0.1:8731"])
    assert not is_allowed("127.0.0.1", 5432, ["127.0.0.1:8731"])
    assert is_allowed("127.0.0.1", 5432, ["127.0.0.1"])
    assert is_allowed("::1", 8080, ["[::1]:8080"]) and not is_allowed("::1", 80, ["[::1]:8080"])
    allowed = frozenset({"127.0.0.1:8731"})
    mine = McpServer(name="mine", url="http://127.0.0.1:8731/mcp", owner=7)
    assert await check_address(mine, allowed) is None  # allowed: nothing to pin
    other_port = McpServer(name="mine", url="http://127.0.0.1:5432/mcp", owner=7)
    with pytest.raises(ServerUnavailable, match="refused"):
        await check_address(other_port, allowed)


async def test_a_stdio_server_that_fails_is_explained_by_its_last_words(capfd):
    """What a failing stdio server wrote to its stderr ends its reason (redacted), and is not
    poured into the app's own log."""
    script = (
        "import sys; print('Traceback (most recent call last):', file=sys.stderr); "
        "print('KeyError: NOTES_API_KEY (sk-123456789 is not valid)', file=sys.stderr); "
        "sys.exit(3)"
    )
    server = McpServer(
        name="notes", command=(sys.executable, "-c", script), env={"TOKEN": "sk-123456789"}
    )
    async with McpHub([server]) as hub:
        _, unavailable = await hub.catalog()
    reason = unavailable["notes.*"]
    assert reason.startswith("MCP server notes (") and "it said: Traceback" in reason
    assert "KeyError: NOTES_API_KEY" in reason and "sk-123456789" not in reason
    assert "KeyError" not in capfd.readouterr().err


@pytest.mark.parametrize("after", [1_170, 70_000])
async def test_last_words_never_show_part_of_a_secret_cut_by_their_window(after):
    """A secret that straddles the end of what is read of a server's stderr is left out with
    its line, not shown in part (it was cut first and redacted after, so its tail showed)."""
    secret = "sk-live-0123456789abcdefghijklmnopqrstuvwxyz"
    script = (
        "import os, sys; sys.stderr.write('rejected token ' + os.environ['TOKEN'] + "
        f"'\\n' * {after} + 'giving up\\n'); sys.exit(3)"
    )
    server = McpServer(name="notes", command=(sys.executable, "-c", script), env={"TOKEN": secret})
    async with McpHub([server]) as hub:
        _, unavailable = await hub.catalog()
    reason = unavailable["notes.*"]
    assert "giving up" in reason
    assert not any(secret[i:] in reason for i in range(len(secret) - 6))
