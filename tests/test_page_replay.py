"""Long workflows replayed into a model of the page, as the browser receives them: every
out-of-band swap finds its target, no id is on the page twice, and every step, task and
round reads in the order things happened.

The events come from the real engine (scripted model replies) and the host's real services:
the round opened with its user message, every event stored and read back as the page's
socket replays it, the run ended by the same settling as every run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from django.urls import reverse

from tests.support.fake_tools import FakeToolExecutor
from tests.support.page import Element, Page
from tests.support.replies import cont, params, review, select, stop, taskplan
from workflows import selectors, services
from workflows.engine.loop.controls import AutoControls
from workflows.engine.loop.round import run_round
from workflows.engine.records.events import Event, RoundEvent
from workflows.engine.records.state import Policy, RoundState
from workflows.engine.testing import MemoryStore, ScriptedLLM
from workflows.events.contract import Envelope, RunEvent
from workflows.events.rendering import render_event
from workflows.execution import recording, settle

pytestmark = pytest.mark.django_db

Stop = Callable[[Event], bool]


def engine_events(state: RoundState, replies: list, controls: AutoControls, until: Stop | None):
    """A round's events from the engine; with `until`, the round is cut off after the first
    event it accepts (the user stopped it there)."""

    async def collect() -> list[Event]:
        events: list[Event] = []
        rounds = run_round(
            state,
            llm=ScriptedLLM(replies),
            tools=FakeToolExecutor(),
            store=MemoryStore(),
            controls=controls,
        )
        async for event in rounds:
            events.append(event)
            if until and until(event):
                break
        await rounds.aclose()
        return events

    return asyncio.run(collect())


def run(
    workflow,
    text: str,
    replies: list,
    *,
    mode: str = "react",
    max_steps: int = 3,
    controls: AutoControls | None = None,
    policy: Policy | None = None,
    until: Stop | None = None,
    reruns: int | None = None,
) -> None:
    """One round as the host runs it: opened, its events stored in order, settled."""
    opened, _, _ = services.round_open(
        workflow_id=workflow.pk, owner=workflow.owner, text=text, document_ids=[], reruns=reruns
    )
    number = opened.current_round
    recording.record(workflow.pk, RunEvent(round=number, status="running"))
    state = RoundState(
        round=number, prompt=text, mode=mode, max_steps=max_steps, policy=policy or Policy()
    )
    events = engine_events(state, replies, controls or AutoControls(), until)
    for event in events:
        recording.record(workflow.pk, event)
    last = events[-1]
    if until is not None:
        settle.run_end(workflow.pk, "stopped")
    else:
        assert isinstance(last, RoundEvent) and last.status in ("completed", "failed")
        settle.run_end(workflow.pk, last.status, last.reason)


def replayed(client, workflow) -> Page:
    """The workflow's page after its socket replayed every stored event into it; every swap
    found its target and no id was ever on the page twice."""
    page = Page(client.get(reverse("workflows:detail", args=[workflow.pk])).content.decode())
    assert page.repeated_ids() == {}
    for row in selectors.event_list_after(workflow_id=workflow.pk, after_seq=0):
        envelope = Envelope.from_row(row)
        missing = page.apply(render_event(envelope))
        assert missing == [], (envelope.seq, envelope.type, missing)
        assert page.repeated_ids() == {}, (envelope.seq, envelope.type)
    return page


def in_order(container: Element) -> list[int]:
    """The seqs of what a step, task or round holds, in the order it shows them (an approval
    card stands before the action it asks about: it is left out)."""
    return [
        int(child.attrs["data-seq"])
        for child in container.elements
        if child.attrs.get("data-seq") and "approval" not in child.classes()
    ]


def assert_reads_in_order(page: Page) -> None:
    """Every step, task and round of the page shows what it holds in seq order."""
    containers = page.root.find(
        lambda e: (
            e.tag == "details"
            and "step" in e.classes()
            or e.id.startswith("task-")
            and e.id.endswith("-steps")
            or e.id.startswith("round-")
            and e.id.endswith("-tasks")
        )
    )
    assert containers
    for container in containers:
        seqs = in_order(container)
        assert seqs == sorted(seqs), container.id


KINDS = (
    "step", "ask", "ask-answer", "notice-line", "review", "error", "phase-plan", "phase-act",
    "approval", "phase-observe", "document-line", "summary", "phase-refine", "step-end",
    "thought", "actionplan", "taskplan", "task",
)  # fmt: skip
"""The classes that say what a thing in a step, task or round is."""


def kinds(container: Element) -> list[str]:
    """What a container shows, one word per thing, in order."""
    return [
        next((k for k in KINDS if k in child.classes()), child.attrs.get("class", child.tag))
        for child in container.elements
        if child.tag != "summary"  # a step's own line
    ]


def test_a_retried_task_with_step_limit_questions_replays_with_unique_ids(alice, alice_client):
    """A task asks for more steps, is retried, and asks again at the same step count: both
    questions keep their own answers, each where it was asked, and each input its label."""
    workflow = services.workflow_create(owner=alice, title="Long")
    first = [select(), params(query="a"), cont(), select(), params(query="b"), stop(False)]
    second = [select(), params(query="c"), cont(), select(), params(query="d"), stop(True)]
    replies = [taskplan("Find"), *first, review("retry", ["Look harder"]), *second, "Found."]
    run(workflow, "Find", replies, max_steps=1, controls=AutoControls(extra_steps=[1, 1]))
    page = replayed(alice_client, workflow)
    assert_reads_in_order(page)
    task = page.by_id("task-1-1-steps")
    attempt = ["step", "ask-answer", "notice-line", "step", "review"]
    assert kinds(task) == attempt * 2
    answers = [e.text for e in task.elements if "ask-answer" in e.classes()]
    assert (
        answers
        == ["Task 1 reached 1 step. Continue for more steps? — continued for 1 more step."] * 2
    )


APPROVE = Policy(approval=["web.*"])
SEARCH = [select(), params(query="q")]
THINK = select(
    "ai.process",
    parametersSchema={"fields": [{"name": "aiPrompt", "type": "string", "required": True}]},
)
PLANNED = {
    "action": "web.search",
    "actionObjective": "find",
    "requiredInputDocuments": [],
    "parameters": {"query": "q"},
    "resultLabel": "found",
}


def thought(more: bool) -> dict:
    """A Reasoning mode thought."""
    plan = [{"description": "Solve", "status": "Done"}]
    return {"current_thinking": "Think.", "planning": plan, "next_thought_needed": more}


def test_approvals_rejections_errors_stops_and_reruns_replay_in_order(alice, alice_client):
    """Many rounds of one workflow, in every mode, with approvals, a rejection, invalid model
    answers, stops while a question or an approval waits, and a rerun: the page holds them
    all with unique ids, each box in the order things happened."""
    workflow = services.workflow_create(owner=alice, title="Long")
    run(workflow, "Approved", [taskplan("t"), *SEARCH, stop(), "ok"], policy=APPROVE)
    rejected = [taskplan("t"), *SEARCH, stop(False, "Rejected."), review("failed"), "no"]
    run(workflow, "Rejected", rejected, policy=APPROVE, controls=AutoControls(approve=False))
    invalid = ["not json", taskplan("t"), "not json", '{"action": 42}', review("failed"), "no"]
    run(workflow, "Invalid", invalid)
    run(workflow, "Stage two", [taskplan("t"), THINK, params(), params(), review("failed"), "no"])
    at_approval = [taskplan("t"), *SEARCH]
    run(workflow, "Stop", at_approval, policy=APPROVE, until=lambda e: e.type == "approval")
    at_question = [taskplan("t"), *SEARCH, cont()]
    run(workflow, "Stop", at_question, max_steps=1, until=lambda e: e.type == "ask")
    again = [taskplan("t"), *SEARCH, stop(), "ok again"]
    run(workflow, "Approved", again, policy=APPROVE, reruns=1)
    run(
        workflow,
        "Planned",
        [taskplan("t"), {"actions": [PLANNED]}, review(), "done"],
        mode="actionplan",
    )
    reasoned = [thought(True), thought(True), thought(False)]
    extend = AutoControls(extra_steps=[1])
    run(workflow, "Reasoned", reasoned, mode="reasoning", max_steps=1, controls=extend)

    page = replayed(alice_client, workflow)
    assert_reads_in_order(page)
    # An approved action: the card, answered, stands before the action it let run.
    assert kinds(page.by_id("step-1-1-1")) == [
        "phase-plan", "approval", "phase-act", "document-line", "phase-observe", "summary",
        "phase-refine", "step-end",
    ]  # fmt: skip
    assert "approval-approved" in page.by_id("step-1-1-1-approval").classes()
    # A rejected one says so; its action never ran (app.css hides its Act after the card).
    assert "approval-rejected" in page.by_id("step-2-1-1-approval").classes()
    steps = ["phase-plan", "approval", "phase-act", "error", "phase-refine", "step-end"]
    assert kinds(page.by_id("step-2-1-1")) == steps
    # The model's invalid answers show where they happened: the task plan's in the round
    # before its tasks, Stage 1's in the step before anything else, Stage 2's after its plan.
    assert kinds(page.by_id("round-3-tasks")) == ["error", "taskplan", "task"]
    assert kinds(page.by_id("step-3-1-1")) == ["error", "error", "step-end"]
    assert kinds(page.by_id("step-4-1-1")) == ["phase-plan", "error", "error", "step-end"]
    # A stop while the user was asked leaves the card or the question answered by the stop.
    assert "approval-cancelled" in page.by_id("step-5-1-1-approval").classes()
    assert kinds(page.by_id("task-6-1-steps")) == ["step", "ask-answer"]
    assert page.by_id("ask-6-1-open") is None
    assert kinds(page.by_id("task-8-1-steps"))[0] == "actionplan"
    thoughts = ["thought", "thought", "ask-answer", "notice-line", "thought", "notice-line"]
    assert kinds(page.by_id("task-9-1-steps")) == thoughts
