"""A large catalog from a real MCP server (the tests' stdio server with 60 extra tools): Stage 1
lists the tools that fit the task, the model finds another with catalog.search, and it runs."""

from __future__ import annotations

import pytest

from tests.engine.conftest import collect, make_state, of, params, select, stop, taskplan
from tests.support.fake_tools import FakeToolExecutor, fake_tools
from tests.support.mcp_servers import stdio_command
from workflows.engine.prompting.ranking import SEARCH_ACTION, task_view
from workflows.engine.testing import ScriptedLLM
from workflows.tools.mcp import sources as mcp
from workflows.tools.mcp.servers import McpServer
from workflows.tools.mcp.sources import McpHub


@pytest.fixture(autouse=True)
def fresh_listings():
    mcp.forget_listings()
    yield
    mcp.forget_listings()


def server() -> McpServer:
    return McpServer(name="desk", command=tuple(stdio_command("--extra", "60")), approval=False)


async def test_a_hidden_mcp_tool_found_by_a_search_runs_on_its_server():
    """66 server tools: Stage 1 lists the weather tools for a weather task, a search for
    shipments answers with the shipment tools, and the one chosen is called on the server."""
    async with McpHub([server()]) as hub:
        listed, unavailable = await hub.catalog()
        assert unavailable == {} and len(listed) == 66
        tools = FakeToolExecutor(tools=[*fake_tools(), *listed])
        llm = ScriptedLLM(
            [
                taskplan("Give the weather forecast for Oslo"),
                select(SEARCH_ACTION, actionObjective="track a shipment"),
                select("desk.shipment_8", parametersSchema={"fields": []}),
                params(query="ZX-1"),
                stop(),
                "It is on its way.",
            ]
        )
        events = await collect(make_state(prompt="Weather in Oslo?"), llm, tools=tools)
        llm.assert_complete()

    first, second = (call for call in llm.calls if call.kind == "select")
    catalog = first.messages[0]["content"]
    assert "desk.weather_1(query,limit): Give the weather forecast" in catalog
    assert "desk.shipment_8" not in catalog
    assert f"- {SEARCH_ACTION}(): " in catalog
    found = second.messages[-1]["content"]
    assert "- desk.shipment_8(query,limit): Track a shipment by its tracking number." in found
    (observed,) = of(events, "observe")
    assert observed.observation.success
    names = [event.document.name for event in of(events, "document")]
    assert names and all(name.startswith("shipment_8") for name in names)
    assert events[-1].status == "completed"


async def test_the_ranking_reads_a_real_servers_names_and_descriptions():
    """The catalog is cut to the built-ins and the server's tools that match the request."""
    async with McpHub([server()]) as hub:
        listed, _ = await hub.catalog()
    view = task_view([*fake_tools(), *listed], "Convert 3 miles to km")
    names = [tool.name for tool in view.shown]
    assert names[:6] == [tool.name for tool in fake_tools()]
    assert set(names[6:-1]) == {f"desk.unit_{n}" for n in range(6, 60, 10)}
    assert len(view.hidden) == 66 - 6
