"""Actionplan and Reasoning modes, and the demo model."""

from __future__ import annotations

import pytest

from tests.engine.conftest import collect, make_state, of, params, review, taskplan
from tests.support.fake_tools import FakeToolExecutor
from workflows.engine.demo.policy import DEMO_LABEL, DemoLLM
from workflows.engine.loop.controls import AutoControls
from workflows.engine.model.request import Facts
from workflows.engine.testing import MemoryStore, ScriptedLLM


def planned(action: str, label: str, docs: list[str] | None = None, **parameters) -> dict:
    return {
        "action": action,
        "actionObjective": f"do {action}",
        "requiredInputDocuments": docs or [],
        "parameters": parameters,
        "resultLabel": label,
    }


async def test_actionplan_plans_upfront_then_executes_with_the_same_events(store) -> None:
    llm = ScriptedLLM(
        [
            taskplan("t"),
            {"actions": [
                planned("document.extract", "extract", ["docList:round1_uploads"], aiPrompt="key"),
                planned("document.generateReport", "report",
                        ["docList:round1_task1_action1_extract"], title="Report"),
            ]},
            review(),
            "done",
        ]
    )  # fmt: skip
    events = await collect(make_state(mode="actionplan"), llm, store=store)
    llm.assert_complete()
    assert [c.kind for c in llm.calls] == ["taskplan", "actionplan", "review", "final"]
    plan = of(events, "actionplan")[0]
    assert [s.action for s in plan.actions] == ["document.extract", "document.generateReport"]
    assert events.index(plan) < events.index(of(events, "plan")[0])  # shown before it runs
    types = [e.type for e in events if e.task == 1 and e.action == 2 and e.type != "usage"]
    assert types == ["step", "plan", "act", "document", "observe", "message", "step"]
    closed = [s for s in of(events, "step") if s.status != "started"]
    assert [(s.status, s.method) for s in closed] == [
        ("success", "document.extract"),
        ("success", "document.generateReport"),
    ]
    assert all(s.durationMs >= 0 and s.tokens >= 0 for s in closed)
    labels = [e.document.label for e in of(events, "document")]
    assert labels == ["round1_task1_action1_extract", "round1_task1_action2_report"]
    assert of(events, "status")[0].code == "plan_complete"
    assert of(events, "task")[-1].status == "success"


async def test_actionplan_rejects_a_plan_with_a_denied_action_or_bad_parameters() -> None:
    bad_action = {"actions": [planned("web.teleport", "x", query="q")]}
    bad_params = {"actions": [planned("web.search", "x", documentList=["docList:y"], query="q")]}
    llm = ScriptedLLM([taskplan("t"), bad_action, bad_params, review("failed")])
    events = await collect(make_state(mode="actionplan"), llm)
    llm.assert_complete()
    errors = of(events, "error")
    assert "in action 1, the action must be 'web.search'" in errors[0].message
    assert errors[0].retrying
    assert "documentList" in errors[1].message and not errors[1].retrying
    assert of(events, "status")[0].code == "step_failed"
    assert [s.status for s in of(events, "step")] == ["started", "failed"]
    assert events[-1].status == "failed"


async def test_actionplan_stops_at_the_first_failed_action() -> None:
    llm = ScriptedLLM(
        [
            taskplan("t"),
            {"actions": [planned("document.extract", "x", aiPrompt="p"),
                         planned("web.search", "y", query="q")]},
            review("failed"),
            "no",
        ]
    )  # fmt: skip
    tools = FakeToolExecutor()
    events = await collect(make_state(mode="actionplan"), llm, tools=tools)
    assert [c.name for c in tools.calls] == ["document.extract"]
    assert of(events, "status")[0].code == "step_failed"


def thought(text: str, more: bool, status: str = "Pending") -> dict:
    return {
        "current_thinking": text,
        "planning": [
            {"description": "Understand", "status": "Done", "result": "ok"},
            {"description": "Solve", "status": status,
             "sub_steps": [{"description": "Check", "status": status}]},
        ],
        "next_thought_needed": more,
    }  # fmt: skip


async def test_reasoning_loops_thought_by_thought_and_the_last_is_the_answer() -> None:
    llm = ScriptedLLM([thought("Plan first.", True), thought("The answer is 42.", False, "Done")])
    events = await collect(make_state(mode="reasoning"), llm)
    llm.assert_complete()
    thoughts = of(events, "thought")
    assert [t.number for t in thoughts] == [1, 2]
    assert thoughts[0].nextThoughtNeeded and not thoughts[1].nextThoughtNeeded
    assert "  - [Done] Check" in thoughts[1].plan
    second = llm.calls[1].messages[-1]["content"]
    assert "Thought 1: Plan first." in second and "- [Pending] Solve" in second
    answer = of(events, "message")[-1]
    assert answer.content == "The answer is 42." and answer.role == "assistant"
    assert events[-1].status == "completed"


async def test_reasoning_that_stops_with_its_plan_pending_is_not_done() -> None:
    """A last thought that needs no other, while its own plan still has pending steps, does
    not complete the round: the task fails naming the steps left, and the answer keeps the
    thought's words with that reason after them."""
    llm = ScriptedLLM([thought("Probably 42.", False)])
    events = await collect(make_state(mode="reasoning"), llm)
    reason = "The reasoning ended with 2 plan steps not done: Solve; Check."
    assert of(events, "status")[0].reason == reason
    assert of(events, "task")[-1].status == "failed"
    assert of(events, "message")[-1].content == f"Probably 42.\n\n**Not finished:** {reason}"
    assert events[-1].status == "failed"


async def test_reasoning_retries_an_invalid_thought_once_then_fails() -> None:
    llm = ScriptedLLM([{"current_thinking": "x"}, "nonsense"])
    events = await collect(make_state(mode="reasoning"), llm)
    assert [e.retrying for e in of(events, "error")] == [True, False]
    assert of(events, "status")[0].code == "step_failed"
    assert events[-1].status == "failed"


async def test_reasoning_asks_to_continue_at_its_thought_limit() -> None:
    llm = ScriptedLLM([thought("a", True), thought("b", True), thought("c", False)])
    controls = AutoControls(extra_steps=[1])
    events = await collect(make_state(mode="reasoning", max_steps=1), llm, controls=controls)
    asks = of(events, "ask")
    assert [(a.status, a.granted) for a in asks] == [("waiting", 0), ("answered", 1)]
    assert len(of(events, "thought")) == 3


# --- the demo model ---------------------------------------------------------------------------


async def test_the_demo_model_extracts_reports_and_summarises(store) -> None:
    events = await collect(make_state(prompt="Summarise my notes."), DemoLLM(), store=store)
    assert [p.selection.action for p in of(events, "plan")] == [
        "document.extract",
        "document.generateReport",
    ]
    assert of(events, "plan")[0].selection.requiredInputDocuments == ["docList:round1_uploads"]
    assert of(events, "plan")[1].selection.requiredInputDocuments == [
        "docList:round1_task1_action1_extract"
    ]
    assert of(events, "status")[0].code == "criteria_met"
    answer = of(events, "message")[-1]
    assert "PowerOn is a web chat. An agent solves tasks in a loop." in answer.content
    assert "demo model" in answer.content
    assert events[0].model == DEMO_LABEL and {u.model for u in of(events, "usage")} == {DEMO_LABEL}


async def test_the_demo_model_says_it_cannot_answer_without_documents() -> None:
    """Without a document to read the demo model has nothing to do: it says so, and the
    round fails (it never ends "completed" for work it did not do)."""
    events = await collect(make_state(prompt="Hello"), DemoLLM(), store=MemoryStore())
    assert of(events, "taskplan")[0].tasks == [] and not of(events, "plan")
    answer = of(events, "message")[-1]
    assert "No language model is configured, so the demo model cannot answer this." in (
        answer.content
    )
    assert "ask the administrator to configure a model" in answer.content
    assert answer.status == "failed" and events[-1].status == "failed"


async def test_the_demo_model_runs_actionplan_and_reasoning(store) -> None:
    state = make_state(mode="actionplan", prompt="Summarise my notes.")
    planned_events = await collect(state, DemoLLM(), store=store)
    assert [d.document.label for d in of(planned_events, "document")][-1].endswith("_report")
    assert planned_events[-1].status == "completed"
    state = make_state(mode="reasoning", prompt="Summarise my notes.")
    reasoned = await collect(state, DemoLLM(), store=store)
    assert len(of(reasoned, "thought")) == 1 and reasoned[-1].status == "completed"
    answer = of(reasoned, "message")[-1].content
    assert answer.startswith("> Summary by the demo model (extractive):")
    assert "PowerOn is a web chat." in answer


async def test_the_demo_models_reasoning_without_documents_ends_unfinished_not_complete():
    """Reasoning without a document: the demo model's thought says it cannot reason and
    leaves its solving step pending; the host ends the round failed with the step it left,
    and the answer is its own words, not the task read back as "The plan is complete"."""
    state = make_state(mode="reasoning", prompt="Plan a three-day trip to Rome.")
    events = await collect(state, DemoLLM(), store=MemoryStore())
    (thought,) = of(events, "thought")
    assert "Plan a three-day trip" not in thought.thinking
    reason = "The reasoning ended with 1 plan step not done: Solve the problem."
    assert [(s.code, s.reason) for s in of(events, "status")] == [("no_improvement", reason)]
    assert of(events, "task")[-1].status == "failed"
    answer = of(events, "message")[-1].content
    assert answer.startswith("No language model is configured, so the demo model cannot")
    assert answer.endswith(f"**Not finished:** {reason}")
    assert "plan is complete" not in answer.lower()
    assert events[-1].status == "failed" and events[-1].reason == reason


async def test_demo_parameters_fill_only_schema_fields() -> None:
    llm = DemoLLM()
    answer = llm.parameters(Facts(kind="parameters", objective="find x", parameters=("query",)))
    assert answer == {"schema": "parameters_v1", "parameters": {"query": "find x"}}
    assert params()["parameters"] == {}


async def test_actionplan_mode_never_runs_a_first_action_given_with_the_task_plan() -> None:
    """Outside React the task plan is not asked for a first action, and one given anyway is
    not run: the action plan decides."""
    from tests.engine.conftest import select

    llm = ScriptedLLM(
        [
            taskplan("t", first=select("web.crawl")),
            {"actions": [{"action": "web.search", "parameters": {"query": "q"}}]},
            review(),
            "ok",
        ]
    )
    events = await collect(make_state(mode="actionplan"), llm)
    llm.assert_complete()
    assert '"firstAction": the first action' not in llm.calls[0].messages[-1]["content"]
    assert [a.method for a in of(events, "act")] == ["web.search"]


# --- Actionplan in two calls: the plan comes with the task plan, the answer with the review ---

REPORT_PLAN = [
    planned("document.extract", "extract", ["docList:round1_uploads"], aiPrompt="key"),
    planned("document.generateReport", "report", ["docList:round1_task1_action1_extract"],
            title="Report"),
]  # fmt: skip


def with_plan(actions: list[dict], *objectives: str) -> dict:
    return {**taskplan(*(objectives or ("t",))), "firstAction": None, "plan": actions}


async def test_a_single_task_is_planned_with_the_task_plan_and_answered_with_its_review(store):
    """Two calls for the round: the task plan carries the action list (no Actionplan call),
    the review judges success and writes the answer (no final call)."""
    llm = ScriptedLLM([with_plan(REPORT_PLAN), {**review(), "answer": "The report is ready."}])
    events = await collect(make_state(mode="actionplan"), llm, store=store)
    llm.assert_complete()
    assert [c.kind for c in llm.calls] == ["taskplan", "review"]
    assert '"plan": with exactly one task' in llm.calls[0].messages[0]["content"]
    # How a produced document is named: in the instruction, which a narrow layout (a local
    # server's) moves into the system message under "## Answer format".
    assert "docList:round1_task1_action1_extract" in llm.calls[0].messages[0]["content"]
    review_prompt = llm.calls[1].messages[-1]["content"]
    assert review_prompt.startswith("## User request\nTell me about PowerOn.")
    assert '"answer": with "success"' in llm.calls[1].messages[0]["content"]
    assert [a.method for a in of(events, "act")] == ["document.extract", "document.generateReport"]
    assert of(events, "actionplan")[0].actions[1].action == "document.generateReport"
    answer = of(events, "message")[-1]
    assert answer.content == "The report is ready." and answer.status == "completed"
    assert events[-1].status == "completed"


async def test_a_plan_given_with_the_task_plan_is_checked_and_planned_again_when_it_fails():
    """Parameters the action does not take: the error says so, the Actionplan call plans
    again (a name outside the catalog is refused by the task plan's own schema)."""
    llm = ScriptedLLM(
        [
            with_plan([planned("web.search", "x", documentList=["docList:y"], query="q")]),
            {"actions": [planned("web.search", "found", query="q")]},
            review(),
            "ok",
        ]
    )
    events = await collect(make_state(mode="actionplan"), llm)
    llm.assert_complete()
    assert [c.kind for c in llm.calls] == ["taskplan", "actionplan", "review", "final"]
    error = of(events, "error")[0]
    assert "The action plan proposed with the task plan was rejected" in error.message
    assert "documentList" in error.message and error.retrying
    assert [a.method for a in of(events, "act")] == ["web.search"]


async def test_with_several_tasks_the_task_plan_plans_none_and_the_review_does_not_answer():
    """A plan given for a round of two tasks is not used; each task plans itself and the
    final call answers."""
    search = {"actions": [planned("web.search", "found", query="q")]}
    llm = ScriptedLLM([with_plan(REPORT_PLAN, "a", "b"), search, review(), search, review(), "ok"])
    events = await collect(make_state(mode="actionplan"), llm)
    llm.assert_complete()
    assert [c.kind for c in llm.calls][-1] == "final"
    assert all('"answer"' not in c.messages[-1]["content"] for c in llm.calls if c.kind == "review")
    assert [a.method for a in of(events, "act")] == ["web.search", "web.search"]


async def test_an_answer_the_review_writes_is_not_used_when_the_facts_fail_the_task():
    """The only action failed; the review still says success and answers: the host fails the
    task, and the answer says what failed instead."""
    from workflows.engine.records.protocols import ActionResult

    async def failing(params, ctx) -> ActionResult:
        return ActionResult(success=False, error="the provider answered 500")

    llm = ScriptedLLM(
        [
            with_plan([planned("web.search", "found", query="q")]),
            {**review(), "answer": "All done, see report.pdf."},
        ]
    )
    events = await collect(
        make_state(mode="actionplan"), llm, tools=FakeToolExecutor({"web.search": failing})
    )
    llm.assert_complete()
    answer = of(events, "message")[-1]
    assert answer.status == "failed" and "All done" not in answer.content
    assert answer.content.startswith("I could not complete this request.")


@pytest.mark.parametrize("mode", ["react", "actionplan", "reasoning"])
async def test_a_long_request_runs_in_every_mode(mode) -> None:
    """A pasted e-mail of 5,000 characters is a request like any other: the task that stands
    for it carries it cut to an objective's length, and the round ends as it would."""
    from workflows.engine.records.schemas import TEXT_MAX

    prompt = "Please answer this e-mail. " + "word " * 1_000
    events = await collect(make_state(prompt=prompt, mode=mode), DemoLLM(), store=MemoryStore())
    assert not [e for e in of(events, "error") if e.kind == "internal"]
    assert of(events, "round")[-1].status in ("completed", "failed")
    assert all(len(task.objective) <= TEXT_MAX for task in of(events, "task"))


async def test_reasoning_says_which_attachments_it_could_not_read() -> None:
    """Reasoning reads the attachments first; one it could not read is named, with why, at
    the head of its answer (the reading step's notes were the only place it showed)."""
    from workflows.engine.records.protocols import ActionResult, ProducedDocument

    async def partly(params, ctx) -> ActionResult:
        return ActionResult(
            success=True,
            documents=[ProducedDocument(name="plan.md", mime="text/markdown", data=b"Friday")],
            unread=["scan.png has an unsupported type (image/png)"],
        )

    store = MemoryStore()
    store.add("plan.md", "text/markdown", b"Friday", label="round1_upload")
    store.add("scan.png", "image/png", b"\x89PNG", label="round1_upload")
    llm = ScriptedLLM([thought("The plan ships Friday.", False, "Done")])
    tools = FakeToolExecutor({"document.extract": partly})
    events = await collect(make_state(mode="reasoning"), llm, tools=tools, store=store)
    answer = of(events, "message")[-1].content
    assert answer == (
        "**Not read:** scan.png has an unsupported type (image/png)\n\nThe plan ships Friday."
    )
