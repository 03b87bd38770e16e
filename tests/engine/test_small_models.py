"""What keeps small models on track: answers shaped for each call from the live state, bounded
generation with a different retry for an answer that never finished, prompts without copyable
placeholders, direct answers, and actions that say why they are unavailable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.engine.conftest import collect, make_state, of, params, review, select, stop, taskplan
from tests.support.fake_openai import FakeReply
from tests.support.fake_tools import FakeToolExecutor, fake_tools
from workflows.engine.loop.answer import OWN_KNOWLEDGE
from workflows.engine.model.formats import valid_values
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.model.transport import MAX_TOKENS
from workflows.engine.prompting.narrowed import selection_output
from workflows.engine.records.protocols import catalog_line
from workflows.engine.records.schemas import clean_reference
from workflows.engine.records.state import ConnectionInfo, Policy
from workflows.engine.testing import MemoryStore, ScriptedLLM

NO_SEARCH = "No search provider is configured (set POWERON_SEARCH_PROVIDER)."


def schema_of(body: dict[str, Any]) -> dict[str, Any]:
    return body["response_format"]["json_schema"]["schema"]


def bodies(server: Any, name: str) -> list[dict[str, Any]]:
    return [
        b
        for b in server.requests
        if ((b.get("response_format") or {}).get("json_schema") or {}).get("name") == name
    ]


def resolved(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """A property with its $ref and nullable anyOf resolved."""
    options = [o for o in node.get("anyOf", [node]) if o.get("type") != "null"]
    node = options[0] if options else node
    if "$ref" in node:
        return schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


class ToolsWithoutSearch(FakeToolExecutor):
    """The fake catalog without web.search, which says why it is missing."""

    def __init__(self) -> None:
        super().__init__(tools=[t for t in fake_tools() if t.name != "web.search"])

    def unavailable(self) -> dict[str, str]:
        return {"web.search": NO_SEARCH}


# --- Answers shaped for the call ------------------------------------------------------------


async def test_stage_one_schema_offers_the_tasks_actions_and_the_real_references(
    fake_openai, llm, store
) -> None:
    """The JSON schema sent with Stage 1 holds `action` as an enum of the task's allowed
    actions, references as an enum of the documents that exist, the connection as an enum of
    the user's labels or null, and bounded lists."""
    fake_openai.add(taskplan("t"), select(), params(query="q"), stop(), "ok")
    state = make_state(
        policy=Policy(denied={"*": ["web.crawl"]}),
        connections=[ConnectionInfo(label="mytavily", kind="tavily")],
    )
    await collect(state, llm, store=store)
    fake_openai.assert_complete()
    schema = schema_of(bodies(fake_openai, "ActionSelection")[0])
    props = schema["properties"]
    assert props["action"]["enum"] == [
        "web.search",
        "web.scrape",
        "ai.process",
        "document.extract",
        "document.generateReport",
    ]
    documents = props["requiredInputDocuments"]
    assert documents["items"]["enum"] == ["docList:round1_uploads", "docItem:1:notes.txt"]
    assert documents["maxItems"] == 2
    connection = props["requiredConnection"]["anyOf"]
    assert {"const": "mytavily", "type": "string"} in connection
    assert props["learnings"]["maxItems"] == 5
    assert bodies(fake_openai, "ActionSelection")[0]["response_format"]["json_schema"]["strict"]


async def test_without_documents_or_connections_the_schema_allows_none(fake_openai, llm) -> None:
    """With no documents the reference list must stay empty; with no connection it is null."""
    fake_openai.add(taskplan("t"), select(), params(query="q"), stop(), "ok")
    await collect(make_state(), llm)
    props = schema_of(bodies(fake_openai, "ActionSelection")[0])["properties"]
    assert props["requiredInputDocuments"]["maxItems"] == 0
    assert props["requiredConnection"] == {"type": "null"}


async def test_task_plan_and_refine_schemas_are_narrowed_like_stage_one(fake_openai, llm) -> None:
    """The task plan's first action and refine's next action carry the same enums; the plan
    holds at most five tasks of the known types."""
    fake_openai.add(taskplan("t", first=select()), params(query="q"), stop(), "ok")
    await collect(make_state(policy=Policy(denied={"*": ["web.crawl"]})), llm)
    sent = schema_of(bodies(fake_openai, "TaskPlan")[0])
    plan = {**sent["anyOf"][1], "$defs": sent["$defs"]}  # "actions" (see test_direct_grammar)
    assert plan["properties"]["tasks"]["maxItems"] == 5
    item = resolved(plan, plan["properties"]["tasks"]["items"])
    assert item["properties"]["taskType"]["enum"][0] == "research"
    first = resolved(plan, plan["properties"]["firstAction"])
    assert "web.crawl" not in first["properties"]["action"]["enum"]
    refine = schema_of(bodies(fake_openai, "RefinementDecision")[0])
    following = resolved(refine, refine["properties"]["next"])
    assert following["properties"]["action"]["enum"] == first["properties"]["action"]["enum"]


async def test_with_documents_attached_the_plan_must_take_actions(fake_openai, llm, store) -> None:
    """Only an action reads an attached document: the plan's schema then offers no direct
    answer and asks for at least one task."""
    fake_openai.add(taskplan("t"), select(), params(query="q"), stop(), "ok")
    await collect(make_state(), llm, store=store)
    props = schema_of(bodies(fake_openai, "TaskPlan")[0])["properties"]
    assert props["approach"] == {"const": "actions", "type": "string"}
    assert props["tasks"]["minItems"] == 1


async def test_without_documents_the_plan_may_answer_directly(fake_openai, llm) -> None:
    """Without attachments the plan's first key offers "direct" or "actions"."""
    fake_openai.add({"approach": "direct", "overview": "", "tasks": []}, "Paris.")
    await collect(make_state(prompt="Capital of France?"), llm)
    options = schema_of(bodies(fake_openai, "TaskPlan")[0])["anyOf"]
    assert [option["properties"]["approach"]["enum"] for option in options] == [
        ["direct"],
        ["actions"],
    ]
    assert all(list(option["properties"])[0] == "approach" for option in options)


async def test_the_review_chooses_met_criteria_among_the_tasks_own(fake_openai, llm) -> None:
    """The review's metCriteria is an enum of the task's criteria, so a small model cannot
    write a paragraph there."""
    fake_openai.add(
        taskplan("t", criteria="Three facts are listed."), select(), params(query="q"),
        stop(criteria_met=False), {"status": "success", "metCriteria": ["Three facts are listed."]},
        "ok",
    )  # fmt: skip
    events = await collect(make_state(), llm)
    fake_openai.assert_complete()
    props = schema_of(bodies(fake_openai, "TaskReview")[0])["properties"]
    assert props["metCriteria"]["items"] == {"const": "Three facts are listed.", "type": "string"}
    assert of(events, "review")[0].metCriteria == ["Three facts are listed."]


async def test_stage_two_schema_types_the_asked_fields_as_the_action_does(fake_openai, llm) -> None:
    """Stage 2's schema holds exactly the fields Stage 1 asked for, typed by the action's own
    model (an enum stays an enum), so `"format": "md"` cannot be sent. (A field the host's
    defaults fix, such as the search depth, is not asked for.)"""
    fields = {"fields": [{"name": "query", "type": "string"}, {"name": "timeRange"}]}
    fake_openai.add(
        taskplan("t"), select(parametersSchema=fields), params(query="q", timeRange="week"),
        stop(), "ok",
    )  # fmt: skip
    events = await collect(make_state(), llm)
    fake_openai.assert_complete()
    schema = schema_of(bodies(fake_openai, "ActionParameters")[0])
    values = resolved(schema, schema["properties"]["parameters"])
    assert set(values["properties"]) == {"query", "timeRange"}
    time_range = resolved(schema, values["properties"]["timeRange"])
    assert time_range["enum"] == ["day", "week", "month", "year"]
    assert of(events, "act")[0].parameters["query"] == "q"


def test_valid_values_are_read_off_the_calls_schema() -> None:
    """The corrective messages' list of valid values comes from the schema built for the call."""
    output = selection_output(("web.search", "ai.process"), ("docList:round1_upload",), ())
    assert valid_values(output) == (
        'action: one of "web.search", "ai.process"; requiredInputDocuments: a list of '
        '"docList:round1_upload"; requiredConnection: null'
    )


# --- Bounded generation -----------------------------------------------------------------


async def test_every_call_is_bounded_by_max_tokens_for_its_kind(fake_openai, llm) -> None:
    """Each request carries the token limit of its kind of call, the streamed answer too."""
    fake_openai.add(taskplan("t"), select(), params(query="q"), stop(), "ok")
    await collect(make_state(), llm)
    limits = {
        kind: body["max_tokens"]
        for kind, body in zip(fake_openai.kinds(), fake_openai.requests, strict=True)
    }
    assert limits == {
        "TaskPlan": MAX_TOKENS["taskplan"],
        "ActionSelection": MAX_TOKENS["select"],
        "ActionParameters": MAX_TOKENS["parameters"],
        "RefinementDecision": MAX_TOKENS["refine"],
        "final": MAX_TOKENS["final"],
    }


async def test_a_cut_off_answer_gets_a_shorter_retry_with_the_valid_values(
    fake_openai, llm
) -> None:
    """An answer cut off at its token limit is reported as no valid answer with its tokens
    counted, and the retry does not send it back: it asks for a shorter answer and lists the
    valid values."""
    looping = '{"action": "web.search", "learnings": [' + '"the same", ' * 40
    fake_openai.add(
        taskplan("t"),
        FakeReply(content=looping, finish_reason="length", usage={"completion_tokens": 600}),
        select(),
        params(query="q"),
        stop(),
        "ok",
    )
    events = await collect(make_state(), llm)
    fake_openai.assert_complete()
    error = of(events, "error")[0]
    assert error.message == (
        "The model produced no valid answer for the action selection: the answer was cut off "
        "at its limit of 600 tokens before it was complete"
    )
    assert error.retrying
    assert 600 in [u.completionTokens for u in of(events, "usage") if u.kind == "select"]
    retry = bodies(fake_openai, "ActionSelection")[1]["messages"]
    assert all(looping not in m["content"] for m in retry)
    assert retry[-1]["role"] == "user" and "Answer again, shorter" in retry[-1]["content"]
    assert 'Valid values: action: one of "web.search"' in retry[-1]["content"]
    assert events[-1].status == "completed"


async def test_an_answer_that_times_out_is_not_repeated_as_it_was(fake_openai) -> None:
    """A structured call that times out is not retried identically by the client: it is one
    request, reported as no valid answer, and the shorter retry follows."""
    fake_openai.add(
        taskplan("t"), FakeReply(content=select(), delay=3), select(), params(query="q"), stop()
    )
    fake_openai.add("ok")
    async with OpenAICompatibleLLM(
        base_url=fake_openai.url, api_key="k", model="m", timeout=0.5, max_retries=2
    ) as client:
        events = await collect(make_state(), client)
    error = of(events, "error")[0]
    assert error.message.startswith(
        "The model produced no valid answer for the action selection: no answer within"
    )
    assert fake_openai.kinds().count("ActionSelection") == 2
    assert events[-1].status == "completed"


def test_the_timeout_grows_with_the_prompt() -> None:
    """timeout_per_1k_tokens adds time per 1,000 tokens of prompt and answer limit."""
    llm = OpenAICompatibleLLM(
        base_url="http://127.0.0.1:9/v1", api_key="k", model="m", timeout=60,
        timeout_per_1k_tokens=20,
    )  # fmt: skip
    messages = [{"role": "user", "content": "x" * 4_000}]  # about 1,000 tokens
    assert llm.call_timeout(messages, "select") == 60 + 20 * (1_000 + MAX_TOKENS["select"]) / 1000


# --- Prompts a small model cannot misread -------------------------------------------------


def test_catalog_lines_never_show_references_as_parameters() -> None:
    """A tool that reads documents says so, without documentList among its parameters."""
    lines = [catalog_line(tool) for tool in fake_tools()]  # type: ignore[arg-type]
    assert "document.extract(aiPrompt) [reads documents]" in lines
    assert not any("documentList" in line or "connectionReference" in line for line in lines)


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("docList:round1_upload (1 document(s))", "docList:round1_upload"),
        ("docList:round2_upload (1 document(s), sent with this message)", "docList:round2_upload"),
        ("docItem:7:notes.txt (text/plain, 76 bytes)", "docItem:7:notes.txt"),
        ("`docList:round1_upload`", "docList:round1_upload"),
        ("round1_upload", "docList:round1_upload"),
        ("docItem:8:report (final).pdf", "docItem:8:report (final).pdf"),
    ],
)
def test_decorated_references_are_read_as_meant(written: str, meant: str) -> None:
    """References copied with the documents list's decoration resolve as the plain ones."""
    assert clean_reference(written) == meant


async def test_a_decorated_reference_is_accepted(store) -> None:
    """Stage 1 copying `docList:<label> (1 document(s))` from the prompt is not rejected."""
    decorated = select(
        "ai.process", requiredInputDocuments=["docList:round1_uploads (1 document(s))"]
    )
    llm = ScriptedLLM([taskplan("t"), decorated, params(aiPrompt="Summarise"), stop(), "ok"])
    events = await collect(make_state(), llm, store=store)
    llm.assert_complete()
    assert not of(events, "error")
    assert of(events, "plan")[0].selection.requiredInputDocuments == ["docList:round1_uploads"]


@pytest.mark.parametrize("name", ["selection", "taskplan", "refine", "review", "actionplan"])
def test_answer_templates_hold_no_copyable_placeholders(name: str) -> None:
    """No `method.action`, `<label>` or `"..."` for a small model to copy into its answer."""
    from workflows.engine.prompting.prompts import template

    text = template(name).template
    for placeholder in ('"method.action"', "<label>", '"..."', "<id>", '"<name>"'):
        assert placeholder not in text


# --- Answering directly --------------------------------------------------------------------


async def test_a_plan_with_no_tasks_is_answered_from_the_models_own_knowledge() -> None:
    """A request that needs no action: no task, no tool, an answer from the model's own
    knowledge, marked as such by the host."""
    llm = ScriptedLLM([{"overview": "Capital.", "tasks": []}, "Paris is the capital."])
    events = await collect(make_state(prompt="What is the capital of France?"), llm)
    llm.assert_complete()
    assert [c.kind for c in llm.calls] == ["taskplan", "final"]
    system, user = llm.calls[1].messages
    assert "directly from your own knowledge" in system["content"]
    assert user == {"role": "user", "content": "What is the capital of France?"}
    answer = of(events, "message")[-1]
    assert answer.content.startswith("Paris is the capital.")
    assert answer.content.endswith(OWN_KNOWLEDGE)
    assert answer.status == "completed" and events[-1].status == "completed"


async def test_approach_direct_drops_the_tasks_a_small_model_wrote_anyway() -> None:
    """The plan's first key decides: "direct" answers without tasks, whatever it listed."""
    plan = {**taskplan("Compute 17*23", first=select("ai.process")), "approach": "direct"}
    llm = ScriptedLLM([plan, "391"])
    events = await collect(make_state(prompt="What is 17*23?"), llm)
    llm.assert_complete()
    assert of(events, "taskplan")[0].tasks == [] and not of(events, "step")
    assert of(events, "message")[-1].content.endswith(OWN_KNOWLEDGE)


async def test_an_answer_after_actions_is_grounded_not_marked_as_own_knowledge() -> None:
    """When tools ran, the answer prompt is the grounded one and carries no such mark."""
    llm = ScriptedLLM([taskplan("t"), select(), params(query="q"), stop(), "Found it."])
    events = await collect(make_state(), llm)
    system, user = llm.calls[-1].messages
    assert "grounded only in what was done" in system["content"]
    assert user == {"role": "user", "content": "Tell me about PowerOn."}
    assert OWN_KNOWLEDGE not in of(events, "message")[-1].content


# --- Saying what is missing ----------------------------------------------------------------


async def test_a_direct_answer_is_told_what_is_not_available_here() -> None:
    """A direct answer's prompt lists the unavailable actions with their reason, so it can
    say that web search is missing instead of guessing a figure."""
    llm = ScriptedLLM([{"approach": "direct", "tasks": []}, "Web search is not available."])
    await collect(make_state(prompt="Population of Oslo?"), llm, tools=ToolsWithoutSearch())
    system, user = llm.calls[-1].messages
    assert f"## Not available here\n- web.search: {NO_SEARCH}" in system["content"]
    assert user["content"] == (
        f"Population of Oslo?\n\n(PowerOn: not available here: web.search: {NO_SEARCH})"
    )


async def test_unavailable_actions_are_listed_with_their_reason() -> None:
    """The catalog is followed by the actions that are unavailable here and why."""
    llm = ScriptedLLM([taskplan("t"), select("ai.process"), params(aiPrompt="x"), stop(), "ok"])
    await collect(make_state(), llm, tools=ToolsWithoutSearch())
    for call in llm.calls[:2]:
        system = call.messages[0]["content"]
        assert "Unavailable here" in system and f"- web.search: {NO_SEARCH}" in system
        assert "- web.search(" not in system


async def test_an_unavailable_action_is_said_and_not_offered_again() -> None:
    """The model may choose an unavailable action: nothing runs, the step says why, the next
    Stage 1 no longer offers it, and the answer names what was missing."""
    tools = ToolsWithoutSearch()
    llm = ScriptedLLM(
        [
            taskplan("Find the population of Oslo", first=select("web.search")),
            select("ai.process"), params(aiPrompt="Estimate"), stop(), "About 700,000.",
        ]
    )  # fmt: skip
    events = await collect(make_state(prompt="Population of Oslo?"), llm, tools=tools)
    llm.assert_complete()
    assert [call.name for call in tools.calls] == ["ai.process"]
    why = f"web.search is not available here: {NO_SEARCH}"
    assert why in [s.reason for s in of(events, "status")]
    assert of(events, "step")[1].status == "failed" and of(events, "step")[1].reason == why
    retry = llm.calls[1].messages[-1]["content"]
    assert why in retry  # a learning for the next choice
    answer = of(events, "message")[-1].content
    assert answer.startswith(f"**Not available here:** web.search — {NO_SEARCH}")


async def test_a_web_action_not_needed_for_attached_sources_is_not_said_missing() -> None:
    """The user attached the notes and the task succeeded from them: the web search the model
    reached for first was not needed, so the answer does not open with it (the step says it)."""
    tools = ToolsWithoutSearch()
    store = MemoryStore()
    store.add("notes.txt", "text/plain", b"Aurora Bakery opened on 12 June.", label="round1_upload")
    llm = ScriptedLLM(
        [
            taskplan("Summarise the notes", first=select("web.search")),
            select("ai.process"), params(aiPrompt="Summarise"), stop(), "A summary.",
        ]
    )  # fmt: skip
    state = make_state(prompt="Summarise the attached notes.")
    events = await collect(state, llm, tools=tools, store=store)
    llm.assert_complete()
    why = f"web.search is not available here: {NO_SEARCH}"
    assert why in [s.reason for s in of(events, "status")]
    assert "Not available here" not in of(events, "message")[-1].content


async def test_when_nothing_else_works_the_answer_says_what_was_missing() -> None:
    """No step succeeded: the engine's own answer names the unavailable action and why."""
    failing = ToolsWithoutSearch()
    llm = ScriptedLLM(
        [
            taskplan("Find the population of Oslo", first=select("web.search")),
            select("ai.process"), params(aiPrompt="x"), stop(criteria_met=False),
            json.dumps({"status": "failed", "reason": "Nothing found."}),
        ]
    )  # fmt: skip

    async def fails(params: Any, ctx: Any) -> Any:
        from workflows.engine.records.protocols import ActionResult

        return ActionResult(success=False, error="no data")

    for tool in failing._tools:
        tool.behaviour = fails
    events = await collect(make_state(prompt="Population of Oslo?"), llm, tools=failing)
    llm.assert_complete()
    answer = of(events, "message")[-1].content
    assert answer.startswith("I could not complete this request. No step succeeded.")
    assert f"**Not available here:** web.search — {NO_SEARCH}" in answer
    assert events[-1].status == "failed"


def test_a_local_models_stage_one_instruction_stays_as_measured() -> None:
    """Only a hosted model is told to leave parameters to their defaults to save a call; the
    instruction a small local model reads is the one its suite was measured with."""
    from workflows.engine.prompting.prompts import selection_format

    local, hosted = selection_format(), selection_format(hosted=True)
    assert "catalog line that needs a value; an empty list when the defaults fit.\n" in local
    assert "no default gives" not in local and "another call" not in local
    assert "whose value no default gives" in hosted and "without another call" in hosted


TWO_STEPS = "Extract the text of the attached notes, then write a report titled 'Aurora summary'."


def notes_attached() -> tuple[MemoryStore, str]:
    """A store holding the user's notes, and the reference that names them."""
    store = MemoryStore()
    store.add("notes.txt", "text/plain", b"Aurora opened on 12 June.", label="round1_uploads")
    return store, "docList:round1_uploads"


async def test_a_report_the_request_titles_is_not_done_until_it_exists() -> None:
    """Refine calls the task done after extracting the text; the report the request titles
    does not exist yet, so the task goes on (with the reason as a learning) and the next
    step writes it."""
    store, ref = notes_attached()
    llm = ScriptedLLM(
        [
            taskplan("Extract the notes and write the report", first=select(
                "document.extract", requiredInputDocuments=[ref])),
            stop(),
            select("document.generateReport", requiredInputDocuments=[ref]),
            stop(),  # no Stage 2: the host's defaults take the title from the request
            "The report “Aurora summary” is written.",
        ]
    )  # fmt: skip
    prompt = TWO_STEPS
    events = await collect(make_state(prompt=prompt), llm, store=store)
    llm.assert_complete()
    said = "the request asks for a document titled “Aurora summary” and none exists yet"
    assert f"Refine judged the criteria met, but {said}; the task goes on." in [
        s.reason for s in of(events, "status")
    ]
    assert f"Still to do: {said}." in llm.calls[2].messages[-1]["content"]
    refines = of(events, "refine")
    assert [(r.decision, r.criteriaMet) for r in refines] == [("continue", False), ("stop", True)]
    assert of(events, "task")[-1].status == "success"
    assert "aurora_summary.md" in [d.name for d in of(events, "message")[-1].documents]


async def test_a_task_cut_short_before_the_titled_report_says_what_is_left() -> None:
    """Refine calls the task done at the step limit, before the report the request titles was
    written: the task is incomplete, saying what is left, not refine's "Done."."""
    store, ref = notes_attached()
    llm = ScriptedLLM(
        [
            taskplan("Extract and report", first=select(
                "document.extract", requiredInputDocuments=[ref])),
            stop(), review("success"), "The text is extracted.",
        ]
    )  # fmt: skip
    prompt = TWO_STEPS
    events = await collect(make_state(prompt=prompt, max_steps=1), llm, store=store)
    llm.assert_complete()
    said = "the request asks for a document titled “Aurora summary” and none exists yet"
    task = of(events, "task")[-1]
    assert task.status == "incomplete"
    assert task.reason == f"The maximum of 1 step was reached. Still to do: {said}."
    assert of(events, "message")[-1].content.startswith("**Not finished:** task 1")


async def test_a_document_headed_with_the_requested_title_is_the_titled_report() -> None:
    """The model wrote the report with ai.process (its file is processed.md) under the
    requested title as its first heading: that is the document the request asked for, and
    refine's "done" stands."""
    store, ref = notes_attached()
    llm = ScriptedLLM(
        [
            taskplan("Extract and report", first=select(
                "ai.process", requiredInputDocuments=[ref])),
            params(aiPrompt="Aurora summary"), stop(), "Written.",
        ]
    )  # fmt: skip
    events = await collect(make_state(prompt=TWO_STEPS), llm, store=store)
    llm.assert_complete()
    assert [(r.decision, r.criteriaMet) for r in of(events, "refine")] == [("stop", True)]
    assert of(events, "task")[-1].status == "success"
