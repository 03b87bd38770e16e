"""MCP tools in real runs: listed in Stage 1, parameterised in Stage 2 from their own schema,
approved or rejected by the user, run on a real MCP server (stdio, or streamable HTTP on
loopback), observed; a failing server is reported; a user's own server is theirs alone."""

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from channels.db import database_sync_to_async

from tests.live import connect, is_final, receive_until
from tests.support.mcp_servers import http_server, stdio_command
from tests.support.replies import params, review, select, stop, taskplan
from workflows import services
from workflows.execution import setup, tools_panel
from workflows.models import ChatDocument
from workflows.tools.mcp import sources as mcp

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("durable")]


@pytest.fixture(autouse=True)
def fresh_listings():
    mcp.forget_listings()
    yield
    mcp.forget_listings()


def add_step() -> list:
    schema = {
        "fields": [
            {"name": "a", "type": "integer", "required": True, "description": ""},
            {"name": "b", "type": "integer", "required": True, "description": ""},
        ]
    }
    return [select("calc.add", parametersSchema=schema), params(a=2, b=40)]


def site_servers(settings, **calc) -> None:
    settings.POWERON_MCP_SERVERS = json.dumps(
        {
            "calc": {"command": stdio_command(), **calc},
            "broken": {"command": ["/nonexistent/mcp-server"]},
        }
    )


def stdio_servers_running() -> int:
    """This process's stdio MCP server children alive now (zombies do not count)."""
    count = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            parts = (proc / "cmdline").read_bytes().split(b"\0")
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, parent = stat[0], int(stat[1])
        mine = parent == os.getpid() and state != "Z"
        if mine and any(p.endswith(b"mcp_server.py") for p in parts) and b"stdio" in parts:
            count += 1
    return count


def text_of(body) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


@pytest.mark.parametrize("approved", [True, False])
async def test_an_mcp_tool_is_chosen_approved_run_and_observed(alice, model, settings, approved):
    site_servers(settings)
    workflow = await database_sync_to_async(services.workflow_create)(owner=alice)
    ending = [stop(True), "The sum is 42."] if approved else [stop(False), review("failed")]
    model.add(taskplan("Add the numbers"), *add_step(), *ending)
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to({"action": "send", "text": "What is 2 + 40?"})
    waiting = await receive_until(communicator, lambda e: e["type"] == "approval")
    assert waiting[-1]["payload"] == {
        "method": "calc.add",
        "parameters": {"a": 2, "b": 40},
        "status": "waiting",
        "reason": "",
        "documents": [],  # what it will read: nothing
        "connection": None,
    }
    await communicator.send_json_to({"action": "approve", "approved": approved})
    events = await receive_until(communicator, is_final)
    assert events[-1]["payload"]["status"] == ("completed" if approved else "failed")

    # Stage 1 saw the tool in the catalog, its description fenced as the server's words;
    # the failing server is not in it. Stage 2 saw the tool's own parameters.
    stage_one = text_of(model.requests[1])
    assert "- calc.add(a,b): Add two integers and return the sum." in stage_one
    fence = stage_one.index("<<<UNTRUSTED DATA from MCP servers")
    assert fence < stage_one.index("calc.add(a,b)") < stage_one.index("<<<END UNTRUSTED DATA")
    assert "- broken." not in stage_one.split("Unavailable here")[0]  # not in the catalog
    assert "- broken.*: the MCP server broken cannot be used now" in stage_one
    assert "nonexistent" not in stage_one  # the failure's own text stays out of prompts
    stage_two = text_of(model.requests[2])
    assert "- a (number, required)" in stage_two and "- b (number, required)" in stage_two

    if approved:
        observed = [e for e in events if e["type"] == "observe"][0]["payload"]["observation"]
        assert observed["success"] is True
        documents = ChatDocument.objects.filter(workflow=workflow, label__endswith="_add")
        stored = {d.name: d async for d in documents}
        assert set(stored) == {"add.md", "add.json"}
        with stored["add.md"].file.open("rb") as handle:
            assert handle.read() == b"42"
    else:
        errors = [e for e in events if e["type"] == "error"]
        assert errors[0]["payload"]["kind"] == "rejected"
        assert not any(e["type"] == "observe" for e in events)
    model.assert_complete()
    # The run's connection to the stdio server is closed with the run: the server stopped.
    deadline = time.monotonic() + 10
    while stdio_servers_running() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert stdio_servers_running() == 0
    await communicator.disconnect()


async def test_an_mcp_tool_without_approval_runs_at_once_and_its_failure_is_a_failed_step(
    alice, model, settings
):
    site_servers(settings, approval=False)
    workflow = await database_sync_to_async(services.workflow_create)(owner=alice)
    failing = select(
        "calc.fail",
        parametersSchema={"fields": [{"name": "reason", "type": "string", "required": True}]},
    )
    model.add(
        taskplan("Try"),
        failing,
        params(reason="disk full"),
        stop(False),
        review("failed"),
        "It failed.",
    )
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to({"action": "send", "text": "Try the tool"})
    events = await receive_until(communicator, is_final)
    assert not any(e["type"] == "approval" for e in events)
    observed = [e for e in events if e["type"] == "observe"][0]["payload"]["observation"]
    assert observed["success"] is False
    assert observed["error"].startswith("calc.fail reported an error")
    await communicator.disconnect()


async def test_a_users_own_server_is_theirs_alone_and_failures_show_in_the_tools_panel(
    alice, bob, settings
):
    """Alice's HTTP server (with her token) joins her catalog only; the Tools panel lists
    every server's tools or why it is missing."""
    site_servers(settings)
    settings.POWERON_FETCH_ALLOW_HOSTS = ["127.0.0.1"]
    # Before any run has listed them, a server is neither said available nor failed.
    before = await database_sync_to_async(tools_panel.tool_overview)(owner=alice)
    rows = {row["name"]: row for row in before}
    assert rows["calc.*"]["available"] is None and rows["broken.*"]["available"] is None
    with http_server(token="alice-token-123") as url:
        await database_sync_to_async(services.connection_create)(
            owner=alice, label="my-wiki", kind="mcp", secret="alice-token-123", url=url
        )
        await database_sync_to_async(services.connection_create)(  # nothing listens there
            owner=alice, label="old-wiki", kind="mcp", secret="", url="http://127.0.0.1:9/mcp"
        )
        workflow = await database_sync_to_async(services.workflow_create)(owner=alice)
        mine = await setup.build(workflow)
        theirs = await setup.build(
            await database_sync_to_async(services.workflow_create)(owner=bob)
        )
        try:
            names = {t.name for t in mine.tools.tools()}
            assert {"calc.add", "my_wiki.add", "my_wiki.city_facts"} <= names
            assert "my_wiki.add" not in {t.name for t in theirs.tools.tools()}
            assert "calc.add" in {t.name for t in theirs.tools.tools()}
            assert "my-wiki" not in mine.connections  # its token is the server's, not a prompt's
            assert (
                mine.tools.unavailable()["broken.*"] == "the MCP server broken cannot be used now"
            )
        finally:
            await setup.close_parts(mine)
            await setup.close_parts(theirs)
    overview = await database_sync_to_async(tools_panel.tool_overview)(owner=alice)
    rows = {row["name"]: row for row in overview}
    assert rows["calc.add"]["available"] and rows["my_wiki.add"]["available"]
    assert not rows["broken.*"]["available"]
    assert "No such file" in rows["broken.*"]["reason"]
    # The site's server is the operator's to fix; Alice's own is hers, under Connections.
    assert (rows["broken.*"]["variables"], rows["broken.*"]["own"]) == (
        ["POWERON_MCP_SERVERS"],
        False,
    )
    assert not rows["old_wiki.*"]["available"]
    assert (rows["old_wiki.*"]["variables"], rows["old_wiki.*"]["own"]) == ([], True)
    bobs = {
        row["name"] for row in await database_sync_to_async(tools_panel.tool_overview)(owner=bob)
    }
    assert "my_wiki.add" not in bobs
