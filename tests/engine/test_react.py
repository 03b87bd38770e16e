"""React mode: the two stages, their validation, execution, observation and refinement."""

from __future__ import annotations

import json

from tests.engine.conftest import (
    collect,
    cont,
    make_state,
    of,
    one_search_round,
    params,
    review,
    select,
    stop,
    taskplan,
)
from tests.support.fake_tools import FakeToolExecutor
from workflows.engine.loop.actions import summarize
from workflows.engine.loop.controls import AutoControls
from workflows.engine.records.protocols import ActionResult
from workflows.engine.records.state import ConnectionInfo, HistoryEntry, Policy
from workflows.engine.testing import MemoryStore, ScriptedLLM


def calls_of(llm: ScriptedLLM, kind: str) -> list:
    return [call for call in llm.calls if call.kind == kind]


def user_text(call) -> str:
    return "\n".join(m["content"] for m in call.messages if m["role"] != "system")


async def test_a_round_runs_plan_act_observe_refine_in_order() -> None:
    """A step opens before its first model call, then plan, act, document, observe, message
    and refine, and closes with its telemetry."""
    llm = one_search_round()
    events = await collect(make_state(), llm)
    llm.assert_complete()
    types = [e.type for e in events if e.type not in {"usage", "delta"}]
    assert types == [
        "round", "taskplan", "task", "task",
        "step", "plan", "act", "document", "observe", "message", "refine", "step", "status",
        "review", "task", "message", "round",
    ]  # fmt: skip
    assert events[-1].status == "completed"
    opened, closed = of(events, "step")
    assert (opened.status, opened.step, opened.action) == ("started", 1, 1)
    assert (closed.status, closed.method) == ("success", "web.search")
    assert closed.tokens > 0 and closed.durationMs >= 0


async def test_stage_one_prompt_has_the_context_and_asks_for_no_parameter_values(store) -> None:
    """Stage 1 sees prompt, objective, criteria, catalog, documents, connections, history."""
    llm = one_search_round()
    history = [HistoryEntry(role="user", round=1, content="Earlier question about PowerOn")]
    state = make_state(
        history=history, connections=[ConnectionInfo(label="mytavily", kind="tavily")]
    )
    await collect(state, llm, store=store)
    call = calls_of(llm, "select")[0]
    text = "\n".join(m["content"] for m in call.messages)
    for expected in [
        "Tell me about PowerOn.",
        "Find facts about PowerOn",
        "It is done.",
        "web.search(query,maxResults,searchDepth,timeRange",
        "document.extract(aiPrompt) [reads documents]",
        "docList:round1_uploads",
        "docItem:1:notes.txt",
        "mytavily (tavily)",
        "Earlier question about PowerOn",
    ]:
        assert expected in text
    assert "Give no parameter values here" in text
    # The catalog is in the system message (stable across calls), the step's context after it.
    assert "web.search(query" in call.messages[0]["content"]
    assert "web.search(query" not in user_text(call)


async def test_stage_two_prompt_holds_only_action_objective_context_and_schema(store) -> None:
    """Stage 2 never sees documents, connections, history or learnings."""
    llm = ScriptedLLM(
        [
            taskplan("Find facts"),
            select(
                learnings=["a secret learning"], requiredInputDocuments=["docList:round1_uploads"]
            ),
            params(query="PowerOn"),
            stop(),
            "done",
        ]
    )
    history = [HistoryEntry(role="user", round=1, content="HISTORY-MARKER")]
    state = make_state(history=history, connections=[ConnectionInfo(label="CONN-MARKER", kind="x")])
    await collect(state, llm, store=store)
    call = calls_of(llm, "parameters")[0]
    text = user_text(call)
    assert "SELECTED_ACTION: web.search" in text
    assert "ACTION_OBJECTIVE: Run web.search" in text
    assert "PARAMETERS_CONTEXT: PowerOn is a chat product." in text
    assert "- query (string, required)" in text
    for leaked in [
        "docList",
        "docItem",
        "notes.txt",
        "CONN-MARKER",
        "HISTORY-MARKER",
        "secret learning",
    ]:
        assert leaked not in text
    assert [m["role"] for m in call.messages] == ["user"]  # no system message: Stage 2 alone


async def test_stage_two_always_runs_even_with_a_full_stage_one() -> None:
    """Parameters come from Stage 2 for every action, never from Stage 1."""
    llm = one_search_round()
    await collect(make_state(), llm)
    kinds = [call.kind for call in llm.calls]
    assert kinds[kinds.index("select") + 1] == "parameters"


async def test_stage_one_with_parameters_is_rejected_and_corrected_once() -> None:
    """A Stage 1 answer carrying `parameters` is rejected; the error is fed back once."""
    llm = ScriptedLLM(
        [
            taskplan("Find facts"),
            select(parameters={"query": "x"}),
            select(),
            params(query="PowerOn"),
            stop(),
            "done",
        ]
    )
    events = await collect(make_state(), llm)
    llm.assert_complete()
    errors = of(events, "error")
    assert len(errors) == 1 and errors[0].retrying
    assert "must not include `parameters`" in errors[0].message
    retry = calls_of(llm, "select")[1]
    assert retry.messages[-2]["role"] == "assistant"
    assert "rejected" in retry.messages[-1]["content"]
    assert "parameters" in retry.messages[-1]["content"]
    assert of(events, "plan")[0].selection.action == "web.search"


async def test_stage_one_schema_naming_context_fields_is_rejected() -> None:
    """parametersSchema may not name documentList, connectionReference, history, ... ."""
    for name in ["documentList", "connectionReference", "history", "documents", "connections"]:
        bad = select(parametersSchema={"fields": [{"name": name, "type": "string"}]})
        llm = ScriptedLLM([taskplan("t"), bad, select(), params(query="q"), stop(), "done"])
        events = await collect(make_state(), llm)
        llm.assert_complete()
        assert name in of(events, "error")[0].message


async def test_an_action_outside_the_allowed_catalog_is_rejected() -> None:
    """The policy's deny-list wins: the answer's schema offers only the allowed actions, and
    the corrective message names them."""
    policy = Policy(denied={"*": ["web.crawl"]})
    llm = ScriptedLLM(
        [taskplan("t"), select("web.crawl"), select(), params(query="q"), stop(), "ok"]
    )
    events = await collect(make_state(policy=policy), llm)
    llm.assert_complete()
    error = of(events, "error")[0]
    assert error.kind == "validation" and "the action must be 'web.search'" in error.message
    assert "'web.crawl'" not in error.message.split("must be")[1]
    assert "web.crawl" not in user_text(calls_of(llm, "select")[0])
    retry = calls_of(llm, "select")[1].messages[-1]["content"]  # the model reads the paths
    assert "action: Input should be 'web.search'" in retry


async def test_allowed_methods_depend_on_the_task_type() -> None:
    """A lookup task limited to web.* cannot pick document actions."""
    policy = Policy(allowed={"lookup": ["web.*"], "*": ["*"]})
    llm = ScriptedLLM(
        [
            taskplan("t", task_type="lookup"),
            select("document.extract"),
            select(),
            params(query="q"),
            stop(),
            "ok",
        ]
    )
    events = await collect(make_state(policy=policy), llm)
    assert of(events, "error")[0].kind == "validation"
    assert "document.extract" not in of(events, "error")[0].message
    assert "document.extract" not in user_text(calls_of(llm, "select")[0])


async def test_unknown_document_references_and_connections_are_rejected(store) -> None:
    """References must name this workflow's documents; connections must be known labels: the
    answer's schema offers only those, and the corrective message lists them (a reference is
    checked after the answer, against the documents that exist)."""
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(requiredInputDocuments=["docList:nothing_here"]),
            select(requiredConnection="nope"),
        ]
    )
    llm.add(review("failed"))
    events = await collect(make_state(), llm, store=store)
    llm.assert_complete()
    errors = of(events, "error")
    assert [(e.kind, e.retrying) for e in errors] == [("reference", True), ("validation", False)]
    assert "valid references: docList:round1_uploads" in errors[0].message
    assert errors[1].message.endswith("was not valid: the connection must be empty")


async def test_two_invalid_selections_fail_the_step_visibly_and_the_review_decides() -> None:
    """After the one corrective retry the step fails inside its step: errors, the failed
    action record, the step closed as failed with its reason, the task and round failed."""
    llm = ScriptedLLM([taskplan("t"), "not json at all", {"action": 42}, review("failed")])
    events = await collect(make_state(), llm)
    llm.assert_complete()
    errors = of(events, "error")
    assert [e.retrying for e in errors] == [True, False]
    assert all((e.task, e.action) == (1, 1) for e in errors)  # inside the step
    assert errors[0].message.startswith("The model produced no valid answer for the action")
    assert "errors.pydantic.dev" not in errors[1].message
    failed = [m for m in of(events, "message") if m.role == "action"]
    assert failed and failed[0].status == "failed" and failed[0].success is False
    closed = of(events, "step")[-1]
    assert closed.status == "failed" and "no valid action selection" in closed.reason
    assert of(events, "status")[0].code == "step_failed"
    assert of(events, "review")[0].status == "failed"
    assert of(events, "task")[-1].status == "failed"
    assert events[-1].status == "failed"


async def test_stage_two_forbidden_keys_are_rejected() -> None:
    """Stage 2 may not send documentList or other context keys."""
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(),
            params(query="q", documentList=["docList:x"]),
            params(query="q"),
            stop(),
            "ok",
        ]
    )
    events = await collect(make_state(), llm)
    llm.assert_complete()
    assert "documentList" in of(events, "error")[0].message


async def test_stage_two_is_validated_against_the_real_parameter_model() -> None:
    """A missing required field is an error; unknown fields are dropped before validation."""
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(),
            params(maxResults=3),
            params(query="q", bogus=1),
            stop(),
            "ok",
        ]
    )
    tools = FakeToolExecutor()
    events = await collect(make_state(), llm, tools=tools)
    llm.assert_complete()
    assert "query" in of(events, "error")[0].message
    act = of(events, "act")[0]
    assert act.dropped == ["bogus"] and "bogus" not in act.parameters
    assert tools.calls[0].params.query == "q"


async def test_two_invalid_parameter_answers_fail_the_step() -> None:
    """Stage 2 also gets exactly one corrective retry."""
    llm = ScriptedLLM([taskplan("t"), select(), params(), params(), review("failed")])
    events = await collect(make_state(), llm)
    llm.assert_complete()
    errors = of(events, "error")
    assert [e.retrying for e in errors] == [True, False]
    assert errors[0].message == (  # in words for people; the model's retry reads the path
        "The model's answer for the action parameters was not valid: the parameter query is missing"
    )
    assert "parameters.query: Field required" in llm.calls[3].messages[-1]["content"]
    assert of(events, "status")[0].code == "step_failed"
    assert of(events, "step")[-1].status == "failed"


async def test_the_schema_is_reconciled_with_the_real_parameters() -> None:
    """Unknown schema fields are dropped and required ones added before Stage 2."""
    schema = {
        "fields": [{"name": "made_up", "type": "string"}, {"name": "maxResults", "type": "number"}]
    }
    llm = ScriptedLLM(
        [taskplan("t"), select(parametersSchema=schema), params(query="q"), stop(), "ok"]
    )
    await collect(make_state(), llm)
    text = user_text(calls_of(llm, "parameters")[0])
    assert "made_up" not in text
    assert "- maxResults (number, optional)" in text
    assert "- query (string, required)" in text


async def test_documents_are_stored_under_the_deterministic_label() -> None:
    """round{r}_task{t}_action{a}_{label}, on the document, observation and message."""
    llm = one_search_round()
    store = MemoryStore()
    events = await collect(make_state(round=3), llm, store=store)
    document = of(events, "document")[0].document
    assert document.label == "round3_task1_action1_search"
    assert of(events, "observe")[0].observation.resultLabel == "round3_task1_action1_search"
    message = [m for m in of(events, "message") if m.role == "action"][0]
    assert message.documentsLabel == "round3_task1_action1_search"
    assert message.documents == [document]


async def test_each_action_message_carries_a_short_summary() -> None:
    """The action's message has a summary derived from its observation."""
    events = await collect(make_state(), one_search_round())
    message = [m for m in of(events, "message") if m.role == "action"][0]
    assert message.method == "web" and message.name == "search"
    assert message.summary.startswith("web.search produced 1 document(s)")
    assert len(message.summary) <= 240
    assert message.status == "success" and message.success is True


async def test_the_next_selection_sees_earlier_tasks_in_the_history() -> None:
    """Action messages of this round enter the history of later tasks, with summaries."""
    llm = ScriptedLLM(
        [
            taskplan("first", "second"),
            select(), params(query="a"), stop(),
            select(), params(query="b"), stop(),
            "done",
        ]
    )  # fmt: skip
    await collect(make_state(), llm)
    text = user_text(calls_of(llm, "select")[1])
    history = text.split("## History (newest first)")[1]
    assert "[r1 t1 a1] action web.search (success)" in history
    assert "summary: web.search produced 1 document(s)" in history
    assert "docList:round1_task1_action1_search" in history


async def test_observations_are_compact_and_capped() -> None:
    """At most five previews, short snippets, the JSON within the cap."""
    from workflows.engine.records.protocols import ActionResult, ProducedDocument

    async def many(params, ctx):
        docs = [
            ProducedDocument(name=f"d{i}.txt", mime="text/plain", data=b"word " * 500)
            for i in range(9)
        ]
        return ActionResult(success=True, documents=docs, notes=["n" * 500] * 20)

    state = make_state()
    state.caps.observation_chars = 1500
    events = await collect(state, one_search_round(), tools=FakeToolExecutor({"web.search": many}))
    observation = of(events, "observe")[0].observation
    assert observation.documentsCount == 9
    assert len(observation.previews) <= 5
    assert len(observation.model_dump_json()) <= 1500


async def test_the_final_answer_is_streamed_then_sent_whole() -> None:
    """Deltas with offsets add up to the final message, which shares their key."""
    events = await collect(
        make_state(), one_search_round(final="PowerOn is a web chat. It streams.")
    )
    deltas = of(events, "delta")
    assert len(deltas) > 1
    assert [d.offset for d in deltas] == [
        sum(len(x.text) for x in deltas[:i]) for i in range(len(deltas))
    ]
    answer = of(events, "message")[-1]
    assert answer.role == "assistant" and answer.key == deltas[0].key
    assert answer.content == "".join(d.text for d in deltas) == "PowerOn is a web chat. It streams."
    assert answer.summary == "PowerOn is a web chat."


async def test_every_model_call_reports_its_usage() -> None:
    """One usage event per call, with the call's kind and the round's position."""
    events = await collect(make_state(), one_search_round())
    kinds = [u.kind for u in of(events, "usage")]
    assert kinds == ["taskplan", "select", "parameters", "refine", "final"]
    step = of(events, "step")[-1]
    assert step.tokens > 0 and step.durationMs >= 0


async def test_a_tool_crash_becomes_a_visible_failed_step() -> None:
    """An exception in a tool is an error event and a failed observation; refine decides."""

    async def broken(params, ctx):
        raise RuntimeError("provider down")

    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(),
            params(query="q"),
            stop(False, "Nothing works."),
            review("failed"),
            "no",
        ]
    )
    events = await collect(make_state(), llm, tools=FakeToolExecutor({"web.search": broken}))
    assert of(events, "error")[0].kind == "tool"
    assert "provider down" in of(events, "error")[0].message
    assert of(events, "observe")[0].observation.success is False
    assert of(events, "status")[0].code == "no_improvement"


async def test_the_connection_secret_reaches_the_tool_but_no_event_or_prompt() -> None:
    """requiredConnection is resolved by the host's controls; the secret stays in the context."""
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(requiredConnection="mine"),
            params(query="q"),
            stop(),
            "ok",
        ]
    )
    tools = FakeToolExecutor()
    controls = AutoControls(secrets={"mine": "sk-SECRET-123"})
    state = make_state(connections=[ConnectionInfo(label="mine", kind="tavily")])
    events = await collect(state, llm, tools=tools, controls=controls)
    assert tools.calls[0].ctx.connection_secret == "sk-SECRET-123"
    assert "sk-SECRET-123" not in json.dumps([e.model_dump(mode="json") for e in events])
    assert all("sk-SECRET-123" not in user_text(call) for call in llm.calls)
    assert of(events, "act")[0].connection == "mine"


async def test_input_documents_reach_the_tool(store) -> None:
    """Stage 1 references are resolved into the action's context documents."""
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select("document.extract", requiredInputDocuments=["docList:round1_uploads"],
                   parametersSchema={"fields": []}),
            params(),
            stop(),
            "ok",
        ]
    )  # fmt: skip
    tools = FakeToolExecutor()
    await collect(make_state(), llm, tools=tools, store=store)
    assert [d.name for d in tools.calls[0].ctx.documents] == ["notes.txt"]


async def test_steering_notes_enter_the_next_selection_as_learnings() -> None:
    """A user note drained from the controls shows up under Learnings in Stage 1."""
    llm = one_search_round()
    events = await collect(
        make_state(), llm, controls=AutoControls(notes=["Prefer German sources"])
    )
    text = user_text(calls_of(llm, "select")[0])
    assert "User note: Prefer German sources" in text.split("## Learnings")[1]
    assert any("Steering" in s.reason for s in of(events, "status"))


async def test_refine_carries_the_next_action_so_stage_one_is_asked_once() -> None:
    """continue with `next`: the next step takes that action without another Stage 1 call,
    still shows a plan event, and the refine event names it."""
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(), params(query="a"), cont(next=select("web.scrape", actionObjective="Read")),
            params(query="b"), stop(), "ok",
        ]
    )  # fmt: skip
    events = await collect(make_state(), llm)
    llm.assert_complete()
    assert [c.kind for c in llm.calls] == [
        "taskplan", "select", "parameters", "refine", "parameters", "refine", "final"
    ]  # fmt: skip
    plans = of(events, "plan")
    assert [(p.action, p.selection.action) for p in plans] == [(1, "web.search"), (2, "web.scrape")]
    assert of(events, "refine")[0].nextHint == "web.scrape: Read"
    opened = [s for s in of(events, "step") if s.status == "started"]
    assert [s.method for s in opened] == ["", "web.scrape"]  # known when the step opens
    assert [s.method for s in of(events, "step") if s.status == "success"] == [
        "web.search", "web.scrape"
    ]  # fmt: skip


def search_then_scrape() -> ScriptedLLM:
    """A search, a decision to continue that names no action, then a scrape chosen by Stage 1."""
    return ScriptedLLM(
        [
            taskplan("t"),
            select(), params(query="a"), cont(),
            select("web.scrape"), params(query="b"), stop(), "ok",
        ]
    )  # fmt: skip


async def test_continue_without_a_next_action_asks_stage_one() -> None:
    """A decision to continue that names no action: Stage 1 chooses, seeing the last step."""
    llm = search_then_scrape()
    events = await collect(make_state(), llm)
    llm.assert_complete()
    assert [p.action for p in of(events, "plan")] == [1, 2]
    assert "a1 web.search (success)" in user_text(calls_of(llm, "select")[1])


async def test_the_newest_step_is_told_once_its_observation_in_full() -> None:
    """Refine and the next Stage 1 show the latest observation in full; the newest step's
    line points at it instead of repeating its summary, and older steps keep theirs."""
    llm = search_then_scrape()
    events = await collect(make_state(), llm)
    llm.assert_complete()
    first, second = [o.observation for o in of(events, "observe")]
    summaries = [summarize("web.search", first), summarize("web.scrape", second)]
    refine, select_again = calls_of(llm, "refine")[0], calls_of(llm, "select")[1]
    for prompt in (user_text(refine), user_text(select_again)):
        assert "a1 web.search (success): see the latest observation" in prompt
        assert summaries[0] not in prompt  # told by the observation, not twice
        assert first.previews[0].snippet[:40] in prompt
    last_refine = user_text(calls_of(llm, "refine")[1])
    assert f"a1 web.search (success): {summaries[0]}" in last_refine  # an older step now
    assert "a2 web.scrape (success): see the latest observation" in last_refine
    assert second.success


async def test_continue_with_the_criteria_met_stops_the_task_and_the_facts_decide() -> None:
    """Refine says "continue" while judging the criteria met (a 1.5B model did so step after
    step until the limit): the task stops there, an info status says why, and the steps
    decide success. With a failed last step, the review runs and the task fails."""
    llm = ScriptedLLM([taskplan("t"), select(), params(query="a")])
    llm.add({**cont(next=select("web.search")), "criteriaMet": True}, "Done.")
    events = await collect(make_state(), llm)
    llm.assert_complete()
    assert [c.kind for c in llm.calls] == ["taskplan", "select", "parameters", "refine", "final"]
    refine = of(events, "refine")[0]
    assert refine.decision == "stop" and refine.criteriaMet and refine.nextHint is None
    assert any("judged the success criteria met" in s.reason for s in of(events, "status"))
    assert of(events, "task")[-1].status == "success" and events[-1].status == "completed"

    async def failing(params, ctx) -> ActionResult:
        return ActionResult(success=False, error="the provider answered 500")

    llm = ScriptedLLM([taskplan("t"), select(), params(query="a")])
    llm.add({**cont(), "criteriaMet": True}, review("success"))
    events = await collect(make_state(), llm, tools=FakeToolExecutor({"web.search": failing}))
    llm.assert_complete()
    assert of(events, "task")[-1].status == "failed" and events[-1].status == "failed"


async def test_a_next_action_that_breaks_stage_one_rules_is_said_and_chosen_again() -> None:
    """refine's next action is narrowed like Stage 1's: one outside the catalog is not valid,
    and the corrective retry lists the allowed actions."""
    policy = Policy(denied={"*": ["web.crawl"]})
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(), params(query="a"), cont(next=select("web.crawl")),
            cont(next=select("web.scrape")), params(query="b"), stop(), "ok",
        ]
    )  # fmt: skip
    events = await collect(make_state(policy=policy), llm)
    llm.assert_complete()
    error = of(events, "error")[0]
    assert error.kind == "validation" and error.retrying
    assert "in the next action, the action must be 'web.search'" in error.message
    retry = calls_of(llm, "refine")[1].messages[-1]["content"]
    assert "Valid values: decision: one of" in retry and '"web.crawl"' not in retry
    assert [p.selection.action for p in of(events, "plan")] == ["web.search", "web.scrape"]
    assert of(events, "round")[-1].status == "completed"


async def test_a_next_action_carrying_parameter_values_is_rejected() -> None:
    """The combined reply keeps Stage 1's rule: no parameter values; the corrective retry
    follows."""
    with_values = {**select("web.scrape"), "parameters": {"url": "https://example.org"}}
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(), params(query="a"), cont(next=with_values), cont(next=select("web.scrape")),
            params(query="b"), stop(), "ok",
        ]
    )  # fmt: skip
    events = await collect(make_state(), llm)
    llm.assert_complete()
    error = of(events, "error")[0]
    assert error.retrying and "must not include `parameters`" in error.message
    assert [p.selection.action for p in of(events, "plan")] == ["web.search", "web.scrape"]


async def test_a_steering_note_after_refine_replaces_the_proposed_action() -> None:
    """A note that arrives after refine proposed an action: Stage 1 chooses again with it."""

    class NoteOnSecondStep(AutoControls):
        calls = 0

        async def steering(self) -> list[str]:
            self.calls += 1
            return ["Use the official site"] if self.calls == 2 else []

    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(), params(query="a"), cont(next=select("web.crawl")),
            select("web.scrape"), params(query="b"), stop(), "ok",
        ]
    )  # fmt: skip
    events = await collect(make_state(), llm, controls=NoteOnSecondStep())
    llm.assert_complete()
    assert "User note: Use the official site" in user_text(calls_of(llm, "select")[1])
    assert [p.selection.action for p in of(events, "plan")] == ["web.search", "web.scrape"]


async def test_stage_two_is_skipped_when_the_schema_asks_for_nothing() -> None:
    """An action whose schema has no fields runs on its defaults, without a Stage 2 call."""
    llm = ScriptedLLM(
        [taskplan("t"), select("web.crawl", parametersSchema={"fields": []}), stop(), "ok"]
    )
    events = await collect(make_state(), llm)
    llm.assert_complete()
    assert "parameters" not in [c.kind for c in llm.calls]
    act = of(events, "act")[0]
    assert act.method == "web.crawl" and act.parameters["format"] == "markdown"


async def test_stage_two_is_skipped_when_the_defaults_fix_every_field_asked_for() -> None:
    """Optional fields the host's defaults set from the task (here the format, markdown when
    nothing machine-readable was asked for) leave nothing for Stage 2: no call; when the
    request asks for a machine-readable format, the default does not fix it, and Stage 2
    is asked for it."""
    crawl = select("web.crawl", parametersSchema={"fields": [{"name": "format"}]})
    llm = ScriptedLLM([taskplan("t"), crawl, stop(), "ok"])
    events = await collect(make_state(), llm)
    llm.assert_complete()
    assert "parameters" not in [c.kind for c in llm.calls]
    assert of(events, "act")[0].parameters["format"] == "markdown"
    llm = ScriptedLLM([taskplan("t"), crawl, params(format="text"), stop(), "ok"])
    events = await collect(make_state(prompt="Crawl it and give me the pages as JSON."), llm)
    llm.assert_complete()
    assert [c.kind for c in llm.calls].count("parameters") == 1
    assert of(events, "act")[0].parameters["format"] == "text"


async def test_the_review_is_skipped_only_when_refine_met_the_criteria_with_evidence() -> None:
    """criteria met and the steps bear it out: success without a review call. Criteria met
    but the last action failed: the review is asked (and grounded)."""
    llm = one_search_round()
    events = await collect(make_state(), llm)
    assert "review" not in [c.kind for c in llm.calls]
    review_event = of(events, "review")[0]
    assert review_event.status == "success" and "Criteria met after web.search" in (
        review_event.reason
    )
    assert review_event.metCriteria == ["It is done."]

    async def failing(params, ctx) -> ActionResult:
        return ActionResult(success=False, error="the provider answered 500")

    failing_tools = FakeToolExecutor({"web.search": failing})
    llm = ScriptedLLM([taskplan("t"), select(), params(query="a"), stop(), review()])
    events = await collect(make_state(), llm, tools=failing_tools)
    llm.assert_complete()
    assert "review" in [c.kind for c in llm.calls]
    assert of(events, "task")[-1].status == "failed"


async def test_the_task_plan_may_carry_the_first_action() -> None:
    """React mode: the plan's first action is task 1's first step, checked like Stage 1, so
    a one-action task costs task plan, Stage 2, refine and the answer."""
    llm = ScriptedLLM([taskplan("t", first=select()), params(query="a"), stop(), "ok"])
    events = await collect(make_state(), llm)
    llm.assert_complete()
    assert [c.kind for c in llm.calls] == ["taskplan", "parameters", "refine", "final"]
    assert '"firstAction": the first action of task 1' in llm.calls[0].messages[0]["content"]
    opened = of(events, "step")[0]
    assert (opened.status, opened.method) == ("started", "web.search")
    assert of(events, "plan")[0].selection.action == "web.search"
    assert of(events, "round")[-1].status == "completed"


async def test_a_first_action_that_breaks_stage_one_rules_is_said_and_chosen_again() -> None:
    """A first action outside the task's catalog is not valid in the plan's schema: the
    corrective retry names the allowed actions, and the corrected plan's action runs."""
    policy = Policy(denied={"*": ["web.crawl"]})
    llm = ScriptedLLM(
        [
            taskplan("t", first=select("web.crawl")), taskplan("t", first=select()),
            params(query="a"), stop(), "ok",
        ]
    )  # fmt: skip
    events = await collect(make_state(policy=policy), llm)
    llm.assert_complete()
    error = of(events, "error")[0]
    assert error.retrying and "in the first action, the action must be 'web.search'" in (
        error.message
    )
    assert [p.selection.action for p in of(events, "plan")] == ["web.search"]


async def test_a_task_plan_whose_first_action_carries_parameter_values_is_rejected() -> None:
    """The first action in the task plan keeps Stage 1's rule: no parameter values; the
    corrective retry follows."""
    with_values = {**select(), "parameters": {"query": "PowerOn"}}
    llm = ScriptedLLM(
        [taskplan("t", first=with_values), taskplan("t", first=select()), params(query="a"),
         stop(), "ok"]
    )  # fmt: skip
    events = await collect(make_state(), llm)
    llm.assert_complete()
    error = of(events, "error")[0]
    assert error.retrying and "must not include `parameters`" in error.message
    assert [c.kind for c in llm.calls] == ["taskplan", "taskplan", "parameters", "refine", "final"]


async def test_a_runaway_model_field_is_rejected_and_retried() -> None:
    """A 1 MB actionObjective is refused with an error the corrective retry can act on; it
    is never stored in an event nor sent on to Stage 2."""
    from workflows.engine.records.state import Budgets

    huge = select(actionObjective="x" * 1_000_000)
    llm = ScriptedLLM([taskplan("t"), huge, select(), params(query="a"), stop(), "ok"])
    # (its 250,000 tokens count: a smaller budget would end the round, as it should)
    events = await collect(make_state(budgets=Budgets(tokens=1_000_000)), llm)
    llm.assert_complete()
    error = of(events, "error")[0]
    assert error.retrying and "the objective is too long (at most 1000 characters)" in (
        error.message
    )
    correction = llm.calls[2].messages[-1]["content"]
    assert "at most 1000 characters" in correction and len(correction) < 2_000
    assert all(len(e.model_dump_json()) < 20_000 for e in events)
    assert of(events, "round")[-1].status == "completed"


async def test_a_search_uses_the_users_own_key_when_stage_one_names_no_connection() -> None:
    """The user's Tavily connection is used for web.search even when Stage 1 leaves
    requiredConnection empty (the key then never reached the search)."""
    from tests.support.fake_tools import fake_tools

    tools = fake_tools()
    for tool in tools:
        if tool.name == "web.search":
            tool.connection_kind = "tavily"
    executor = FakeToolExecutor(tools=tools)
    state = make_state(connections=[ConnectionInfo(label="my-tavily", kind="tavily")])
    llm = ScriptedLLM([taskplan("t"), select(), params(query="q"), stop(), "ok"])
    controls = AutoControls(secrets={"my-tavily": "tvly-users-own"})
    await collect(state, llm, tools=executor, controls=controls)
    assert [call.ctx.connection_secret for call in executor.calls] == ["tvly-users-own"]
