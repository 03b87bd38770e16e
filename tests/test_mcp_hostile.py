"""A hostile MCP server (a user's own, or a site's gone bad) is bounded like an upload and its
listing cannot carry a credential to the Tools panel or a prompt (issue 31: a 60 MB image
became a document, 3,000 resources 3,000 documents, and a server echoing its Authorization
value showed it in every user's Tools panel and in the model's prompts).

The server is real (the official SDK, tests/support/hostile_mcp.py), over stdio and over
streamable HTTP on loopback answering in one JSON body (which the SDK reads whole)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from channels.db import database_sync_to_async

from tests.live import connect, is_final, receive_until
from tests.support.apps import ROOT, free_port, wait_for_port
from tests.support.replies import params, select, stop, taskplan
from workflows import services
from workflows.execution import tools_panel
from workflows.models import ChatDocument
from workflows.tools.mcp import sources as mcp
from workflows.tools.mcp.servers import McpServer
from workflows.tools.mcp.tools import ResultLimits

SCRIPT = Path(__file__).parent / "support" / "hostile_mcp.py"
TOKEN = "hostile-token-5ec7e7"


@contextmanager
def hostile_http(*, token: str = TOKEN) -> Iterator[str]:
    """The hostile server over streamable HTTP, answering in JSON bodies; its URL."""
    port = free_port()
    command = [sys.executable, str(SCRIPT), "http", str(port), "--token", token, "--json"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def stdio_server(**settings) -> McpServer:
    return McpServer(
        name="hostile",
        command=(sys.executable, str(SCRIPT), "stdio"),
        env={"LEAKY_SECRET": TOKEN},
        approval=False,
        **settings,
    )


def http_server(url: str) -> McpServer:
    return McpServer(
        name="hostile", url=url, headers={"Authorization": f"Bearer {TOKEN}"}, approval=False
    )


@pytest.fixture(autouse=True)
def fresh_listings():
    mcp.forget_listings()
    yield
    mcp.forget_listings()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_listing_holds_no_credential(transport):
    """The server's header or environment value, echoed in a tool's description, a
    parameter's description and an enum, is struck before anything shows it: the catalog's
    action, its Stage 2 schema, and the Tools panel's row."""
    with hostile_http() as url:
        server = stdio_server() if transport == "stdio" else http_server(url)
        async with mcp.McpHub([server]) as hub:
            tools, unavailable = await hub.catalog()
        assert not unavailable
        leaky = next(tool for tool in tools if tool.name == "hostile.leaky")
        shown = json.dumps(
            [leaky.description, leaky.untrusted_summary, leaky.Parameters.model_json_schema()]
        )
        assert "Looks things up with the key ***" in shown
        assert TOKEN not in shown
        rows = tools_panel.mcp_overview(server)
        assert TOKEN not in json.dumps(rows)
        listing = mcp.last_listing(server)
        assert listing is not None and TOKEN not in repr(listing.tools)


async def test_thousands_of_resources_become_at_most_ten_documents():
    """3,000 embedded resources: ten files, and a note of the 2,990 left out."""
    async with mcp.McpHub([stdio_server()]) as hub:
        result = await hub.call(hub.servers["hostile"], "many_resources", {"count": 3000})
    assert result.success
    assert len(result.documents) == 10
    assert "2990 more files were left out: one call keeps at most 10." in result.notes


async def test_a_file_larger_than_an_upload_is_left_out_with_a_note():
    """An image larger than a file may be (here 1 MB) is not decoded nor kept; the
    observation says so; a smaller one in another call is kept."""
    limits = ResultLimits(document_bytes=1024 * 1024, result_bytes=4 * 1024 * 1024)
    async with mcp.McpHub([stdio_server()], limits=limits) as hub:
        server = hub.servers["hostile"]
        big = await hub.call(server, "big_image", {"megabytes": 3})
        small = await hub.call(server, "big_image", {"megabytes": 0.5})
    assert big.success and big.documents == []
    assert any(note.startswith("Left out, larger than 1.0 MB") for note in big.notes)
    assert "big_image_1.png (3.0 MB)" in " ".join(big.notes)
    assert [len(d.data) for d in small.documents] == [512 * 1024 + 4]


HUGE_CALL = """
import asyncio, json, resource, sys
from workflows.tools.mcp.servers import McpServer
from workflows.tools.mcp.sources import McpHub

async def main():
    server = McpServer(name="hostile", url=sys.argv[1], approval=False,
                       headers={"Authorization": "Bearer " + sys.argv[2]})
    async with McpHub([server]) as hub:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = await hub.call(server, "big_image", {"megabytes": 60})
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"success": result.success, "error": result.error,
                      "documents": len(result.documents), "grew_kb": after - before}))

asyncio.run(main())
"""


def test_a_60_mb_json_result_is_not_read_whole():
    """A 60 MB image in one JSON body (what the SDK reads whole): the call fails saying the
    response passed its bound, and the process's peak memory grows by far less than the 400
    MB it took to read it (measured in a process of its own)."""
    with hostile_http() as url:
        done = subprocess.run(
            [sys.executable, "-c", HUGE_CALL, url, TOKEN],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            env={"DJANGO_SETTINGS_MODULE": "poweron.settings", "PATH": "/usr/bin:/bin"},
        )
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["success"] is False and outcome["documents"] == 0
    assert "not read further" in outcome["error"]
    assert outcome["grew_kb"] < 150 * 1024


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("durable")
async def test_a_round_with_the_hostile_server_stores_ten_documents_and_no_secret(
    alice, model, settings
):
    """A real round calling many_resources(3000) then odd_mime: ten documents of the first
    call (not 3,000, nor 3,000 events), the second's media type valid, and the server's
    credential in no prompt the model saw."""
    settings.POWERON_MCP_SERVERS = json.dumps(
        {
            "hostile": {
                "command": [sys.executable, str(SCRIPT), "stdio"],
                "env": {"LEAKY_SECRET": TOKEN},
                "approval": False,
            }
        }
    )
    workflow = await database_sync_to_async(services.workflow_create)(owner=alice)
    count = {"fields": [{"name": "count", "type": "integer", "required": True}]}
    model.add(
        taskplan("Fetch the notes"),
        select("hostile.many_resources", parametersSchema=count),
        params(count=3000),
        {"decision": "continue", "reason": "Now the image.", "criteriaMet": False},
        select("hostile.odd_mime", parametersSchema={"fields": []}),
        stop(True),
        "Done.",
    )
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to({"action": "send", "text": "Fetch every note"})
    events = await receive_until(communicator, is_final, timeout=120)
    await communicator.disconnect()
    assert events[-1]["payload"]["status"] == "completed"
    documents = [d async for d in ChatDocument.objects.filter(workflow=workflow)]
    notes = [d for d in documents if d.name.startswith("note_")]
    assert len(notes) == 10
    assert len(events) < 100
    (image,) = [d for d in documents if d.name.startswith("odd_mime")]
    assert image.mime_type == "image/png" and "\r" not in image.name
    assert all(TOKEN not in json.dumps(body) for body in model.requests)
