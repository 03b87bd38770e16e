"""What a small model on a local server reads and writes (the narrow layout): the task plan
ends where "direct" settles it — the schema is sent as two alternatives, so a grammar lets a
model that chose to answer directly write no tasks and no first action (a 1.5B model wrote
about 400 tokens of them, which were dropped) — and the catalog says what each action is for
(a 0.5B model picked web.crawl for an uploaded file by its name)."""

from __future__ import annotations

from tests.engine.conftest import collect, make_state, of, select, taskplan
from workflows.engine.model.formats import response_format
from workflows.engine.prompting.narrowed import taskplan_output
from workflows.engine.testing import ScriptedLLM
from workflows.tools.registry import ToolRegistry


def schema(model: type) -> dict:
    shape = response_format(model, "json_schema")
    assert shape is not None
    return shape["json_schema"]


def test_the_narrow_task_plan_is_two_alternatives_decided_by_its_first_key() -> None:
    """ "direct" allows no task and no first action; "actions" is the plan as it was."""
    sent = schema(taskplan_output(5, True, ("ai.process",), (), ()))
    direct, actions = sent["schema"]["anyOf"]
    assert list(direct["properties"])[0] == "approach" == list(actions["properties"])[0]
    assert direct["properties"]["approach"] == {"type": "string", "enum": ["direct"]}
    assert direct["properties"]["tasks"] == {"type": "array", "maxItems": 0}
    assert direct["properties"]["firstAction"] == {"type": "null"}
    assert actions["properties"]["approach"] == {"type": "string", "enum": ["actions"]}
    assert actions["properties"]["tasks"]["maxItems"] == 5
    assert direct["required"] == list(direct["properties"])
    assert sent["strict"] is False and "ActionSelection" in sent["schema"]["$defs"]


def test_other_task_plans_stay_one_object() -> None:
    """Documents came with the request (actions only), or a hosted layout (references not
    enumerated): an object at the root, strict where it can be."""
    attached = schema(taskplan_output(5, True, ("ai.process",), ("docList:a",), (), direct=False))
    assert attached["schema"]["type"] == "object" and "anyOf" not in attached["schema"]
    hosted = schema(taskplan_output(5, True, ("ai.process",), None, ()))
    assert hosted["schema"]["type"] == "object" and hosted["strict"] is True


async def test_a_direct_plan_answers_and_a_plan_of_actions_runs(fake_openai, llm) -> None:
    """Both alternatives read back as the task plan they are."""
    fake_openai.add(
        {"approach": "direct", "overview": "A capital.", "tasks": [], "firstAction": None},
        "Paris.",
    )
    events = await collect(make_state(prompt="Capital of France?", schemas="narrow"), llm)
    sent = fake_openai.requests[0]["response_format"]["json_schema"]["schema"]
    assert "anyOf" in sent
    assert of(events, "taskplan")[0].tasks == [] and of(events, "message")[-1].status
    fake_openai.add(taskplan("Find facts", first=select("ai.process")))
    plan = await llm.complete(
        fake_openai.requests[0]["messages"],
        output=taskplan_output(5, True, ("ai.process",), (), ()),
        kind="taskplan",
    )
    assert plan.value.approach == "actions" and plan.value.firstAction is not None


async def test_a_local_models_catalog_says_what_each_action_is_for() -> None:
    """Narrow layout: each catalog line ends with the action's purpose; a hosted layout keeps
    the tiny catalog of names and parameters."""
    tools = ToolRegistry({"allow_hosts": "127.0.0.1"})
    for schemas, shown in (("narrow", True), ("shared", False), ("stable", False)):
        llm = ScriptedLLM([{"approach": "direct", "tasks": []}, "Paris."])
        await collect(make_state(prompt="Capital of France?", schemas=schemas), llm, tools=tools)
        system = llm.calls[0].messages[0]["content"]
        line = "- web.crawl(extractDepth,format) [reads documents]"
        purpose = ": fetch the web pages whose addresses (URLs) the documents hold"
        assert (line + purpose in system) is shown and line in system
