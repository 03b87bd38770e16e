"""The host grounds the truth: outcomes, answers and the closing of open work follow the facts,
not the model's claims."""

from __future__ import annotations

import pytest

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
from tests.engine.test_modes import planned, with_plan
from tests.support.fake_tools import FakeToolExecutor
from tests.support.texts import people_texts
from workflows.engine.loop.closing import OpenWork
from workflows.engine.loop.controls import AutoControls
from workflows.engine.records.events import (
    AskEvent,
    DeltaEvent,
    MessageEvent,
    PlanEvent,
    RoundEvent,
    StepEvent,
    TaskEvent,
)
from workflows.engine.records.protocols import ActionResult, ProducedDocument
from workflows.engine.records.schemas import ActionSelection
from workflows.engine.records.state import Budgets, Policy
from workflows.engine.testing import MemoryStore, ScriptedLLM

CANARY = "The report 'Canary Report' is attached as canary_report.pdf."


async def failing_search(params, ctx) -> ActionResult:
    return ActionResult(success=False, error="the search provider answered 500")


async def test_a_review_cannot_turn_a_failed_step_into_a_success() -> None:
    """The only step failed; the review says success; the task and the round fail anyway."""
    llm = ScriptedLLM([taskplan("t"), select(), params(query="q"), stop(), review("success")])
    tools = FakeToolExecutor({"web.search": failing_search})
    events = await collect(make_state(), llm, tools=tools)
    llm.assert_complete()  # no final-answer call: nothing succeeded
    verdict = of(events, "review")[0]
    assert verdict.status == "failed"
    assert verdict.reason.startswith("Not done: no action succeeded")
    assert of(events, "task")[-1].status == "failed"
    assert events[-1].type == "round" and events[-1].status == "failed"


async def test_a_failed_task_is_explained_by_what_happened_not_by_the_models_words() -> None:
    """The user rejects the only action; refine still says "Done." with the criteria met.
    No status claims the criteria met, and the answer and the round name the rejection,
    not the model's "Done."."""
    llm = ScriptedLLM([taskplan("t"), select(), params(query="q"), stop(), review("success")])
    state = make_state(policy=Policy(approval=["web.*"]))
    events = await collect(state, llm, controls=AutoControls(approve=False))
    statuses = of(events, "status")
    assert [s.code for s in statuses] == ["no_improvement"]
    assert statuses[0].reason == "Refine judged the criteria met, but the user rejected web.search."
    reviewed = of(events, "review")[0]  # the review did say success: the sentence says so
    assert reviewed.reason == (
        "Not done: the user rejected web.search, although the review judged it a success."
    )
    rejected = "web.search was rejected by the user."
    answer = [e for e in of(events, "message") if e.role == "assistant"][-1]
    assert f"- Task 1 (t): {rejected}" in answer.content and "Done." not in answer.content
    assert events[-1].reason == f"The task did not succeed: Task 1: {rejected}"


@pytest.mark.parametrize("approved", [False, None])
async def test_an_actionplan_step_the_user_did_not_approve_is_said_as_such(approved) -> None:
    """Actionplan, its one action rejected (or not approved in time), and a review that says
    "failed": every text says what happened; none claims a review judged it a success, and
    the step's outcome reads as its badge does (rejected, stopped), not "failed"."""
    plan = with_plan([planned("web.search", "search", query="PowerOn")], "t")
    llm = ScriptedLLM([plan, {**review("failed"), "reason": "The search did not run."}, "answer"])
    state = make_state(mode="actionplan", policy=Policy(approval=["web.*"]))
    events = await collect(state, llm, controls=AutoControls(approve=approved))
    texts = [text for event in events for text in people_texts(event)]
    assert not [text for text in texts if "although the review" in text]
    step = of(events, "step")[-1]
    assert step.status == ("rejected" if approved is False else "stopped")
    (status,) = of(events, "status")
    ended = "was rejected by the user" if approved is False else "was not approved in time"
    assert status.reason == f"Action 1 (web.search) {ended}; the plan stops here."
    action = [e for e in of(events, "message") if e.role == "action"][-1]
    assert action.content.startswith(
        "**web.search** rejected by the user" if approved is False else "**web.search** not run"
    )
    assert of(events, "review")[0].reason == "The search did not run."


async def test_an_actionplan_review_that_says_success_over_a_rejection_is_overruled_plainly():
    """The same rejection with a review that says "success": the task fails, and the review's
    reason says what happened and that the review said otherwise."""
    plan = with_plan([planned("web.search", "search", query="PowerOn")], "t")
    llm = ScriptedLLM([plan, review("success"), "answer"])
    state = make_state(mode="actionplan", policy=Policy(approval=["web.*"]))
    events = await collect(state, llm, controls=AutoControls(approve=False))
    assert of(events, "review")[0].reason == (
        "Not done: the user rejected web.search, although the review judged it a success."
    )
    assert of(events, "task")[-1].status == "failed"


async def test_a_stage_two_failure_fails_the_task_whatever_the_review_says() -> None:
    """Parameters invalid twice: the step fails; the review's "success" is overruled."""
    llm = ScriptedLLM([taskplan("t"), select(), params(), params(), review("success")])
    events = await collect(make_state(), llm)
    llm.assert_complete()
    assert of(events, "step")[-1].status == "failed"
    assert of(events, "review")[0].status == "failed"
    assert of(events, "task")[-1].status == "failed"
    assert events[-1].status == "failed"


async def test_every_invalid_selection_fails_the_round_and_the_answer_claims_nothing() -> None:
    """A model that never writes valid JSON: failed round, and an answer from the facts that
    names no document."""
    llm = ScriptedLLM([taskplan("t"), "not json", "still not json", review("success")])
    store = MemoryStore()
    events = await collect(make_state(), llm, store=store)
    llm.assert_complete()
    answer = of(events, "message")[-1]
    assert answer.role == "assistant" and answer.status == "failed" and answer.documents == []
    assert answer.content.startswith("I could not complete this request. No step succeeded.")
    assert "No document was produced." in answer.content
    assert "attached" not in answer.content
    assert events[-1].status == "failed"


async def test_the_answer_lists_only_real_documents_and_flags_invented_ones() -> None:
    """The prompt names the produced documents; a file the model invents is pointed out."""
    llm = ScriptedLLM([taskplan("t"), select(), params(query="q"), stop(), f"Found it. {CANARY}"])
    events = await collect(make_state(), llm)
    final_prompt = llm.calls[-1].messages[0]["content"]
    assert "## Documents produced\n- search_results.json (application/json)" in final_prompt
    answer = of(events, "message")[-1]
    assert [d.name for d in answer.documents] == ["search_results.json"]
    assert answer.content.startswith(f"Found it. {CANARY}")
    assert "no document named “canary_report.pdf” exists" in answer.content
    assert answer.status == "completed"


async def test_an_answer_claiming_an_attachment_when_none_exists_is_corrected() -> None:
    """Nothing was produced (the search keeps no document here): "attached" gets a note."""

    async def no_documents(params, ctx) -> ActionResult:
        return ActionResult(success=True, notes=["3 results"])

    llm = ScriptedLLM(
        [taskplan("t"), select(), params(query="q"), stop(), "The report is attached."]
    )
    events = await collect(make_state(), llm, tools=FakeToolExecutor({"web.search": no_documents}))
    answer = of(events, "message")[-1]
    assert "this round produced no document, so nothing is attached" in answer.content
    assert "(none: no document was produced" in llm.calls[-1].messages[0]["content"]


async def test_a_round_where_one_of_two_tasks_fails_says_so_first() -> None:
    """Task 1 succeeds, task 2 fails: the round fails, and the answer opens with the failure."""
    llm = ScriptedLLM(
        [
            taskplan("first", "second"),
            select(), params(query="a"), stop(),
            select(), params(query="b"), stop(), review("success"),
            "Here is what I found.",
        ]
    )  # fmt: skip
    calls = {"n": 0}

    async def second_fails(params, ctx) -> ActionResult:
        calls["n"] += 1
        if calls["n"] == 2:
            return ActionResult(success=False, error="down")
        doc = ProducedDocument(name="r.json", mime="application/json", data=b"[]")
        return ActionResult(success=True, documents=[doc])

    events = await collect(make_state(), llm, tools=FakeToolExecutor({"web.search": second_fails}))
    llm.assert_complete()
    assert [t.status for t in of(events, "task") if t.status in ("success", "failed")] == [
        "success",
        "failed",
    ]
    answer = of(events, "message")[-1]
    assert answer.content.startswith("**Not everything worked:** task 2 (second) failed")
    assert answer.content.endswith("Here is what I found.")
    assert events[-1].status == "failed"
    assert events[-1].reason.startswith("1 of 2 tasks did not succeed: Task 2:")


async def test_a_task_with_no_successful_step_is_failed_even_without_a_review() -> None:
    """No valid review: the stop reason alone cannot make a failed task a success."""
    llm = ScriptedLLM([taskplan("t"), select(), params(query="q"), stop(), "bad", "bad"])
    events = await collect(
        make_state(), llm, tools=FakeToolExecutor({"web.search": failing_search})
    )
    assert of(events, "review")[0].status == "failed"
    assert "no action succeeded" in of(events, "review")[0].reason


async def test_reasoning_reads_the_attached_documents_first(store) -> None:
    """Reasoning extracts this round's attachments as a visible step; thoughts see the text."""
    thought = {"current_thinking": "Done.", "planning": [], "next_thought_needed": False}
    llm = ScriptedLLM([thought])
    store.add("plan.md", "text/markdown", b"# Plan\nShip on Friday.", label="round1_upload")
    events = await collect(make_state(mode="reasoning"), llm, store=store)
    plan = of(events, "plan")[0]
    assert plan.selection.action == "document.extract"
    assert plan.selection.requiredInputDocuments == [
        "docList:round1_uploads",
        "docList:round1_upload",
    ]
    assert [s.status for s in of(events, "step")] == ["started", "success"]
    prompt = llm.calls[0].messages[-1]["content"]
    assert "Ship on Friday." in prompt and "UNTRUSTED DATA" in prompt


async def test_reasoning_says_why_when_it_cannot_read_the_attachments(store) -> None:
    """Without document.extract, the step fails with the reason and the thoughts are told."""
    thought = {"current_thinking": "Done.", "planning": [], "next_thought_needed": False}
    llm = ScriptedLLM([thought])
    store.add("plan.md", "text/markdown", b"# Plan", label="round1_upload")
    tools = FakeToolExecutor()
    tools._tools = [t for t in tools._tools if t.name != "document.extract"]
    events = await collect(make_state(mode="reasoning"), llm, tools=tools, store=store)
    assert "document.extract is not available" in of(events, "error")[0].message
    assert "could not be read" in llm.calls[0].messages[-1]["content"]


def test_open_work_closes_everything_a_cut_off_round_left_open() -> None:
    """Tasks, the step, a question and a streamed answer are closed; a pending task is
    skipped; the round ends as stopped."""
    opened = OpenWork(
        [
            RoundEvent(round=2, status="started", mode="react", model="m"),
            TaskEvent(round=2, task=1, status="pending", objective="a"),
            TaskEvent(round=2, task=2, status="pending", objective="b"),
            TaskEvent(round=2, task=1, status="running", objective="a"),
            StepEvent(round=2, task=1, action=1, status="started", step=1),
            PlanEvent(
                round=2, task=1, action=1, step=1, selection=ActionSelection(action="web.search")
            ),
            AskEvent(round=2, task=1, question="More?", stepsDone=1),
            DeltaEvent(round=2, key="round2_answer", text="Half ", offset=0),
            DeltaEvent(round=2, key="round2_answer", text="an answer", offset=5),
        ]
    )
    closing = opened.closing("stopped", "Stopped by the user.")
    assert [(e.type, getattr(e, "status", "")) for e in closing] == [
        ("message", "stopped"),
        ("ask", "cancelled"),
        ("step", "stopped"),
        ("task", "stopped"),
        ("task", "skipped"),
        ("round", "stopped"),
    ]
    message = closing[0]
    assert isinstance(message, MessageEvent) and message.content == "Half an answer"
    assert closing[2].method == "web.search" and closing[2].reason == "Stopped by the user."
    assert closing[1].reason == "the run stopped before it was answered"  # not "no answer came"


def test_open_work_of_a_finished_round_is_empty() -> None:
    """Nothing to close after a round that ended on its own."""
    opened = OpenWork(
        [
            RoundEvent(round=1, status="started"),
            TaskEvent(round=1, task=1, status="pending"),
            TaskEvent(round=1, task=1, status="success"),
            StepEvent(round=1, task=1, action=1, status="started", step=1),
            StepEvent(round=1, task=1, action=1, status="success", step=1),
            RoundEvent(round=1, status="completed"),
        ]
    )
    assert opened.closing("failed", "x") == []


# --- The answer written with refine's stop -------------------------------------------------


def stop_answering(answer: str, criteria_met: bool = True) -> dict:
    return {**stop(criteria_met), "answer": answer}


async def test_refine_stopping_a_single_task_writes_the_answer_without_a_call_of_its_own():
    """Seed 001: refine "decides: stop with final answer". One task, criteria met: its answer
    is the round's, streamed as the answer's delta, and there is no final call."""
    llm = ScriptedLLM(
        [taskplan("t"), select(), params(query="q"), stop_answering("PowerOn is a chat.")]
    )
    events = await collect(make_state(), llm)
    llm.assert_complete()
    assert [call.kind for call in llm.calls] == ["taskplan", "select", "parameters", "refine"]
    assert '"answer": with "stop" and criteriaMet true' in llm.calls[-1].messages[0]["content"]
    answer = of(events, "message")[-1]
    assert answer.content == "PowerOn is a chat." and answer.status == "completed"
    assert [d.name for d in answer.documents] == ["search_results.json"]
    assert "".join(d.text for d in of(events, "delta")) == answer.content
    assert events[-1].status == "completed"


async def test_an_answer_written_with_refine_is_checked_like_any_answer():
    """A file it invents is pointed out below it, by the host."""
    llm = ScriptedLLM([taskplan("t"), select(), params(query="q"), stop_answering(CANARY)])
    events = await collect(make_state(), llm)
    llm.assert_complete()
    answer = of(events, "message")[-1]
    assert answer.content.startswith(CANARY)
    assert "no document named “canary_report.pdf” exists" in answer.content


async def test_an_answer_written_with_refine_is_dropped_when_the_facts_do_not_bear_it_out():
    """The search failed, refine still claims the criteria are met and answers: the review
    runs, the task fails, and the answer comes from the facts, not from refine."""
    llm = ScriptedLLM(
        [taskplan("t"), select(), params(query="q"), stop_answering(CANARY), review("success")]
    )
    tools = FakeToolExecutor({"web.search": failing_search})
    events = await collect(make_state(), llm, tools=tools)
    llm.assert_complete()
    answer = of(events, "message")[-1]
    assert answer.status == "failed" and CANARY not in answer.content
    assert answer.content.startswith("I could not complete this request.")


async def test_with_several_tasks_refine_does_not_answer_and_the_final_call_does():
    """The answer of two tasks needs both their results: refine's schema has no answer, its
    prompt does not ask for one, and the final call writes it."""
    llm = ScriptedLLM(
        [taskplan("a", "b"), select(), params(query="q"), stop(), select(), params(query="r")]
    )
    llm.add(stop(), "Both done.")
    events = await collect(make_state(), llm)
    llm.assert_complete()
    refines = [call for call in llm.calls if call.kind == "refine"]
    assert {call.output for call in refines} == {"RefinementDecision"}
    assert all('"answer"' not in call.messages[-1]["content"] for call in refines)
    assert llm.calls[-1].kind == "final" and of(events, "message")[-1].content == "Both done."


async def test_a_retried_task_forgets_the_answer_of_its_first_attempt():
    """Refine answers but the review asks for a retry (the last step had failed); the second
    attempt stops without the criteria met and its review says success: the final call writes
    the answer, the first attempt's is not used."""
    outcomes = iter([False, True])

    async def flaky(params, ctx) -> ActionResult:
        if next(outcomes):
            return ActionResult(success=True, notes=["found"])
        return ActionResult(success=False, error="the provider answered 500")

    llm = ScriptedLLM(
        [taskplan("t"), select(), params(query="q"), stop_answering("First try."), review("retry")]
    )
    llm.add(select(), params(query="q2"), stop(criteria_met=False), review("success"))
    llm.add("Second try.")
    events = await collect(make_state(), llm, tools=FakeToolExecutor({"web.search": flaky}))
    llm.assert_complete()
    assert of(events, "message")[-1].content == "Second try."


async def test_a_task_cut_short_with_work_left_is_incomplete_whatever_the_review_says() -> None:
    """ "Stop here" at the step limit while the last refinement said to continue: the step
    that ran succeeded and the review says success, ticking every criterion. The agent itself
    judged the work unfinished, so the task is incomplete (not a success), the round is not
    completed, and the answer opens with what was not done (the round read "Completed — Task
    1 success: The maximum of 1 step was reached.")."""
    plan = {
        "overview": "plan",
        "tasks": [{"objective": "t", "successCriteria": ["A is read.", "B is written."]}],
    }
    ticked = {**review("success"), "metCriteria": ["A is read.", "B is written."]}
    llm = ScriptedLLM(
        [plan, select(), params(query="a"), cont("B is still to write."), ticked, "All done."]
    )
    events = await collect(make_state(max_steps=1), llm, controls=AutoControls())
    llm.assert_complete()
    said = "The maximum of 1 step was reached. Its last refinement said more was needed: “B is "
    verdict = of(events, "review")[0]
    assert verdict.status == "incomplete" and verdict.reason.startswith(said)
    task = of(events, "task")[-1]
    assert task.status == "incomplete" and task.reason.startswith(said)
    assert events[-1].type == "round" and events[-1].status == "failed"
    assert events[-1].reason.startswith("The task was not finished: Task 1: " + said)
    answer = of(events, "message")[-1]
    assert answer.content.startswith("**Not finished:** task 1 (t) — " + said)
    assert answer.status == "failed" and answer.success is False


async def test_a_budget_that_cuts_a_task_short_with_work_left_makes_it_incomplete() -> None:
    """The token budget runs out after a refinement that asked to continue: the task is
    incomplete (no review can be asked), and the answer says the budget stopped it."""
    llm = ScriptedLLM([taskplan("t"), select(), params(query="a"), cont("More to read.")])
    events = await collect(make_state(budgets=Budgets(tokens=2_200)), llm)
    llm.assert_complete()
    task = of(events, "task")[-1]
    assert task.status == "incomplete"
    assert "Its last refinement said more was needed: “More to read.”" in task.reason
    assert events[-1].status == "failed" and events[-1].reason.startswith("The task was not")
    assert of(events, "message")[-1].content.startswith("I stopped early: This round's token")


async def test_inputs_an_action_could_not_read_are_said_in_the_answer() -> None:
    """An action that succeeded with some inputs unread (an image among notes, say) is no
    silent partial success: the answer opens with what was not read, and why."""

    async def partly(params, ctx) -> ActionResult:
        return ActionResult(
            success=True,
            documents=[ProducedDocument(name="notes.md", mime="text/markdown", data=b"# N")],
            notes=["pic.png has an unsupported type (image/png)"],
            unread=["pic.png has an unsupported type (image/png)"],
        )

    llm = ScriptedLLM([taskplan("t"), select(), params(query="q"), stop(), "Here it is."])
    events = await collect(make_state(), llm, tools=FakeToolExecutor({"web.search": partly}))
    llm.assert_complete()
    assert of(events, "observe")[0].observation.unread == [
        "pic.png has an unsupported type (image/png)"
    ]
    answer = [e for e in of(events, "message") if e.role == "assistant"][-1]
    assert answer.content.startswith(
        "**Not read:** pic.png has an unsupported type (image/png)\n\nHere it is."
    )
    assert events[-1].status == "completed"  # what was read, was done
