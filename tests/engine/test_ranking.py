"""Large catalogs: Stage 1 lists the built-in actions and the external tools that fit the task,
and the model can search for the others."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from tests.engine.conftest import (
    collect,
    cont,
    make_state,
    of,
    params,
    review,
    select,
    stop,
    taskplan,
)
from tests.support.fake_tools import FakeTool, FakeToolExecutor, fake_tools
from tests.support.mcp_server import SUBJECTS
from workflows.engine.prompting import ranking
from workflows.engine.prompting.prompts import ANSWER_FORMAT, render_catalog
from workflows.engine.prompting.ranking import (
    SEARCH_ACTION,
    Ranking,
    rank,
    search_answer,
    task_view,
    terms,
)
from workflows.engine.records.protocols import ActionResult
from workflows.engine.testing import ScriptedLLM


class Query(BaseModel):
    query: str
    limit: int = 5


class Tracking(BaseModel):
    trackingNumber: str


@dataclass
class ExternalTool(FakeTool):
    """A tool as an MCP server offers it: its summary is the server's own words."""

    untrusted_summary: str = ""


async def _answered(params: object, ctx: object) -> ActionResult:
    return ActionResult(success=True, notes=["answered"])


def external(count: int) -> list[FakeTool]:
    """`count` external tools of ten subjects; shipment tools want a tracking number."""
    tools: list[FakeTool] = []
    for number in range(count):
        subject, text = SUBJECTS[number % len(SUBJECTS)]
        model = Tracking if subject == "shipment" else Query
        tools.append(
            ExternalTool(f"srv.{subject}_{number}", text, model, False, _answered, None, text)
        )
    return tools


def executor(count: int) -> FakeToolExecutor:
    return FakeToolExecutor(tools=[*fake_tools(), *external(count)])


def system_of(llm: ScriptedLLM, kind: str) -> list[str]:
    """The system messages of a kind of call, without how its answer is written."""
    return [
        c.messages[0]["content"].partition(ANSWER_FORMAT)[0] for c in llm.calls if c.kind == kind
    ]


def listed(system: str) -> list[str]:
    """The external tools a system message lists."""
    return [line.split("(")[0][2:] for line in system.splitlines() if line.startswith("- srv.")]


WEATHER = "Find the weather forecast for Oslo tomorrow"


def test_a_small_catalog_is_listed_whole() -> None:
    """At or under the threshold every tool is listed and there is no catalog.search."""
    tools = [*fake_tools(), *external(18)]
    view = task_view(tools, WEATHER)
    assert view.shown == tools and view.hidden == []
    assert SEARCH_ACTION not in render_catalog(view.shown)


def test_for_a_provider_with_a_prompt_cache_the_catalog_is_cut_only_above_150_tools() -> None:
    """A whole catalog is the same for every task, so a provider's cache keeps it across runs
    at a tenth of the price; a listing cut for the task changes with every request. With a
    cache, 60 tools are listed whole, 200 are cut like any large catalog."""
    tools = [*fake_tools(), *external(60)]
    assert task_view(tools, WEATHER, cached=True).shown == tools
    many = [*fake_tools(), *external(200)]
    view = task_view(many, WEATHER, cached=True)
    assert len(view.hidden) == 200 - Ranking().top and view.shown[-1].name == SEARCH_ACTION


async def test_a_round_for_a_hosted_provider_lists_a_60_tool_catalog_whole() -> None:
    """Stable schemas (a hosted provider): the task plan's system message carries every tool
    and no catalog.search."""
    llm = ScriptedLLM([taskplan(WEATHER), select("srv.weather_1"), params(query="Oslo"), stop()])
    llm.add("Cloudy.")
    tools = FakeToolExecutor(tools=[*fake_tools(), *external(60)])
    events = await collect(make_state(prompt=WEATHER, schemas="stable"), llm, tools=tools)
    llm.assert_complete()
    system = llm.calls[0].messages[0]["content"]
    assert "srv.recipe_59(query,limit)" in system and SEARCH_ACTION not in system
    assert events[-1].status == "completed"


def test_a_large_catalog_lists_built_ins_and_the_tools_that_match() -> None:
    """Above the threshold: every built-in action, the best external matches, catalog.search
    with the count of the others."""
    tools = [*fake_tools(), *external(60)]
    view = task_view(tools, WEATHER)
    names = [tool.name for tool in view.shown]
    assert names[:6] == [tool.name for tool in fake_tools()]
    assert {f"srv.weather_{n}" for n in range(1, 60, 10)} <= set(names)
    assert not any(name.startswith("srv.invoice") for name in names)
    assert names[-1] == SEARCH_ACTION and len(view.hidden) == 60 - (len(names) - 7)
    text = render_catalog(view.shown)
    assert f"- {SEARCH_ACTION}(): {len(view.hidden)} more external tools are not listed" in text


def test_ranking_matches_words_across_forms_and_camel_case() -> None:
    """A plural finds the singular ("invoices", "invoice"), camelCase is split, stop words
    do not count."""
    assert terms("the trackingNumber of Invoices") == ["track", "number", "invoic"]
    tools = external(20)
    best = [tool.name for _, tool in rank(tools, "my unpaid invoices")]
    assert best and all(name.startswith("srv.invoice") for name in best)
    assert rank(tools, "the of and") == []
    assert terms("Größe der Rechnung") == ["größ", "der", "rechnung"]


async def test_stage_one_lists_only_the_tools_relevant_to_the_task() -> None:
    """The round's Stage 1 and refine calls carry the cut catalog, byte-identical."""
    llm = ScriptedLLM(
        [taskplan(WEATHER), select("srv.weather_1"), params(query="Oslo"), stop(), "Sunny."]
    )
    events = await collect(make_state(prompt="Weather in Oslo?"), llm, tools=executor(60))
    llm.assert_complete()
    assert events[-1].status == "completed"
    (stage1,) = system_of(llm, "select")
    (refine,) = system_of(llm, "refine")
    assert stage1 == refine
    shown = set(listed(stage1))
    assert {f"srv.weather_{n}" for n in range(1, 60, 10)} <= shown and len(shown) <= 12
    assert not any(name.startswith(("srv.invoice", "srv.stock")) for name in shown)
    assert "more external tools are not listed" in stage1
    assert len(stage1) < len(render_catalog(executor(60).tools())) / 2


async def test_the_task_plan_sees_the_catalog_cut_for_the_request() -> None:
    """The task plan's catalog is cut too, by the request alone."""
    llm = ScriptedLLM([taskplan(WEATHER), select("web.search"), params(query="x"), stop(), "ok"])
    await collect(make_state(prompt="What is the weather forecast?"), llm, tools=executor(60))
    (plan,) = system_of(llm, "taskplan")
    assert listed(plan) and all(name.startswith("srv.weather") for name in listed(plan))


def search(words: str) -> dict:
    return select(SEARCH_ACTION, actionObjective=words, parametersSchema={"fields": []})


async def test_the_model_searches_the_catalog_then_chooses_a_tool_it_found() -> None:
    """catalog.search answers with the matching hidden tools in the same conversation (its
    earlier messages unchanged), and the tool chosen from them runs."""
    llm = ScriptedLLM(
        [
            taskplan(WEATHER),
            search("track a parcel shipment"),
            select("srv.shipment_8", parametersSchema={"fields": []}),
            params(trackingNumber="ZX-1"),
            stop(),
            "It is on its way.",
        ]
    )
    tools = executor(60)
    events = await collect(make_state(prompt="Weather in Oslo?"), llm, tools=tools)
    llm.assert_complete()
    first, second = (c for c in llm.calls if c.kind == "select")
    assert second.messages[:2] == first.messages
    assert second.messages[2]["role"] == "assistant"
    answer = second.messages[3]["content"]
    assert "Tools found for 'track a parcel shipment'" in answer
    assert "- srv.shipment_8(trackingNumber): Track a shipment" in answer
    assert "UNTRUSTED DATA" in answer
    assert [call.name for call in tools.calls] == ["srv.shipment_8"]
    assert tools.calls[0].params == Tracking(trackingNumber="ZX-1")
    statuses = [e.reason for e in of(events, "status") if e.code == "info"]
    assert any(r.startswith("Searched the catalog for 'track a parcel shipment'") for r in statuses)
    assert [e.selection.action for e in of(events, "plan")] == ["srv.shipment_8"]


async def test_a_search_that_matches_nothing_names_every_hidden_tool() -> None:
    """With no match, the answer lists the names of all the tools the catalog left out."""
    llm = ScriptedLLM(
        [taskplan(WEATHER), search("zzz qqq"), select("srv.weather_1"), params(query="x")]
    )
    llm.add(stop(), "ok")
    await collect(make_state(prompt="Weather?"), llm, tools=executor(60))
    answer = [c for c in llm.calls if c.kind == "select"][1].messages[3]["content"]
    assert "No tool matches 'zzz qqq'" in answer
    assert "- srv.invoice_0(query,limit)" in answer and "- srv.recipe_59(query,limit)" in answer


def test_a_search_without_a_match_names_at_most_so_many_tools(monkeypatch) -> None:
    """The fallback list of hidden names is capped; the rest are counted."""
    monkeypatch.setattr(ranking, "DEFAULT", Ranking(names=5))
    view = task_view([*fake_tools(), *external(60)], WEATHER)
    text = search_answer(view, "zzz", [], last=True)
    assert text.count("- srv.") == 5
    assert f"- … and {len(view.hidden) - 5} more; search with other words" in text


async def test_searches_are_limited_then_the_model_must_choose() -> None:
    """After two searches a third is rejected with one corrective retry."""
    llm = ScriptedLLM(
        [
            taskplan(WEATHER),
            search("invoice"),
            search("stock price"),
            search("recipe"),
            select("srv.stock_4"),
            params(query="ACME"),
            stop(),
            "ok",
        ]
    )
    events = await collect(make_state(prompt="Weather?"), llm, tools=executor(60))
    llm.assert_complete()
    selects = [c for c in llm.calls if c.kind == "select"]
    assert "Choose the action now (no more searches)." in selects[2].messages[-1]["content"]
    errors = [e.message for e in of(events, "error")]
    assert any(f"no more {SEARCH_ACTION}" in message for message in errors)
    assert [e.selection.action for e in of(events, "plan")] == ["srv.stock_4"]


async def test_a_tool_not_listed_is_still_valid_and_checked_against_its_own_schema() -> None:
    """Choosing a hidden tool of the task works without a search; Stage 2 is validated
    against that tool's model (a missing required value is corrected once)."""
    llm = ScriptedLLM(
        [
            taskplan(WEATHER),
            select("srv.shipment_18", parametersSchema={"fields": []}),
            params(query="wrong field"),
            params(trackingNumber="ZX-2"),
            stop(),
            "ok",
        ]
    )
    tools = executor(60)
    events = await collect(make_state(prompt="Weather?"), llm, tools=tools)
    llm.assert_complete()
    (stage1,) = system_of(llm, "select")
    assert "srv.shipment_18" not in stage1
    (stage2, retry) = [c for c in llm.calls if c.kind == "parameters"]
    assert "trackingNumber" in stage2.messages[-1]["content"]
    assert tools.calls[0].params == Tracking(trackingNumber="ZX-2")
    assert len(of(events, "error")) == 1


async def test_an_unknown_tool_is_rejected_naming_the_listed_ones_and_the_search() -> None:
    """A name outside the task's catalog is rejected; the correction names the listed tools
    and catalog.search, not the whole catalog."""
    llm = ScriptedLLM(
        [
            taskplan(WEATHER),
            select("srv.nothing"),
            select("srv.weather_11"),
            params(query="Oslo"),
            stop(),
            "ok",
        ]
    )
    events = await collect(make_state(prompt="Weather?"), llm, tools=executor(60))
    llm.assert_complete()
    (error,) = of(events, "error")
    assert "'srv.nothing' is not allowed" in error.message
    assert f"or {SEARCH_ACTION} to find the tools not listed" in error.message
    assert "srv.invoice_0" not in error.message


async def test_refine_may_propose_a_search_that_the_next_stage_one_answers() -> None:
    """A catalog.search proposed by refine is answered before the next Stage 1 chooses."""
    llm = ScriptedLLM(
        [
            taskplan(WEATHER),
            select("srv.weather_1"),
            params(query="Oslo"),
            cont(next=search("currency unit conversion")),
            select("srv.unit_6"),
            params(query="10 EUR"),
            stop(),
            "ok",
        ]
    )
    events = await collect(make_state(prompt="Weather?"), llm, tools=executor(60))
    llm.assert_complete()
    second = [c for c in llm.calls if c.kind == "select"][1]
    assert "Tools found for 'currency unit conversion'" in second.messages[-1]["content"]
    assert [e.selection.action for e in of(events, "plan")] == ["srv.weather_1", "srv.unit_6"]
    assert not of(events, "error")


async def test_actionplan_answers_a_planned_search_with_the_matches_in_its_correction() -> None:
    """A plan holding catalog.search is rejected with the tools found; the corrected plan
    may use one of them."""
    step = {"requiredInputDocuments": [], "parameters": {}, "resultLabel": "found"}
    llm = ScriptedLLM(
        [
            taskplan(WEATHER),
            {"actions": [{"action": SEARCH_ACTION, "actionObjective": "stock price", **step}]},
            {"actions": [
                {"action": "srv.stock_14", "actionObjective": "price", **step,
                 "parameters": {"query": "ACME"}},
            ]},
            review(),
            "ok",
        ]
    )  # fmt: skip
    tools = executor(60)
    events = await collect(make_state(prompt="Weather?", mode="actionplan"), llm, tools=tools)
    llm.assert_complete()
    (error,) = of(events, "error")
    assert f"{SEARCH_ACTION} does not run inside a plan" in error.message
    correction = [c for c in llm.calls if c.kind == "actionplan"][1].messages[-1]["content"]
    assert "Tools found for 'stock price'" in correction
    assert "srv.stock_14(query,limit)" in correction
    assert [call.name for call in tools.calls] == ["srv.stock_14"]


async def test_the_task_plan_may_start_with_a_search_that_stage_one_answers() -> None:
    """A catalog.search as the task plan's first action is answered in task 1's first
    Stage 1, which then chooses."""
    llm = ScriptedLLM(
        [
            taskplan(WEATHER, first=search("convert units")),
            select("srv.unit_16"),
            params(query="3 miles"),
            stop(),
            "ok",
        ]
    )
    events = await collect(make_state(prompt="Weather?"), llm, tools=executor(60))
    llm.assert_complete()
    (stage1,) = [c for c in llm.calls if c.kind == "select"]
    assert "Tools found for 'convert units'" in stage1.messages[-1]["content"]
    assert "srv.unit_16(query,limit)" in stage1.messages[-1]["content"]
    assert not of(events, "error")
    assert [e.selection.action for e in of(events, "plan")] == ["srv.unit_16"]
