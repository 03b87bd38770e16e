"""A round's events read as AG-UI events (`workflows.agui.translate`), without a server: the
order a client must see, the interrupt a question makes and where a resumed run picks up,
the state its deltas build, and how a run ends."""

from __future__ import annotations

import json
from typing import Any

from tests.agui.protocol import apply_patch, state_of, text_of, types, verify
from workflows.agui.state import diff
from workflows.agui.translate import Translator
from workflows.engine.records.events import (
    ActEvent,
    ApprovalEvent,
    AskEvent,
    DeltaEvent,
    DocumentEvent,
    ErrorEvent,
    MessageEvent,
    ObserveEvent,
    PlanEvent,
    RefineEvent,
    RoundEvent,
    StepEvent,
    TaskEvent,
    TaskPlanEvent,
    ThoughtEvent,
    UsageEvent,
)
from workflows.engine.records.protocols import DocumentRef
from workflows.engine.records.schemas import ActionSelection, Observation, TaskItem
from workflows.events.contract import Envelope, RunEvent

WORKFLOW = 7
DOC = DocumentRef(id="9", name="notes.md", mime="text/markdown", label="round1_upload")


def step(*, approval: bool = False) -> list[Any]:
    """One React step of task 1 of round 1 (with an approval before the action runs)."""
    at = {"round": 1, "task": 1, "action": 1}
    events: list[Any] = [
        StepEvent(**at, status="started", step=1),
        UsageEvent(**at, kind="select", promptTokens=100, completionTokens=10, model="m"),
        PlanEvent(**at, step=1, selection=ActionSelection(action="document.extract")),
        ActEvent(**at, method="document.extract", parameters={"pages": [1, 2]}),
    ]
    if approval:
        events += [
            ApprovalEvent(**at, method="document.extract", parameters={}, status="waiting",
                          documents=[DOC]),
            ApprovalEvent(**at, method="document.extract", parameters={}, status="approved"),
        ]  # fmt: skip
    return events + [
        DocumentEvent(**at, document=DOC),
        ObserveEvent(**at, observation=Observation(success=True, resultLabel="r")),
        RefineEvent(**at, decision="stop", reason="Done.", criteriaMet=True),
        StepEvent(**at, status="success", step=1, method="document.extract", tokens=110),
    ]


def round_events(*, approval: bool = False, end: str = "completed") -> list[Any]:
    answer = {"round": 1, "key": "round1_answer"}
    return [
        MessageEvent(round=1, key="user-1", role="user", content="Summarise"),
        RoundEvent(round=1, status="started"),
        TaskPlanEvent(round=1, tasks=[TaskItem(objective="Summarise", successCriteria=["ok"])]),
        TaskEvent(round=1, task=1, status="running", objective="Summarise"),
        *step(approval=approval),
        TaskEvent(round=1, task=1, status="success", objective="Summarise"),
        DeltaEvent(**answer, text="Revenue ", offset=0, attempt="a"),
        DeltaEvent(**answer, text="grew.", offset=8, attempt="a"),
        MessageEvent(**answer, role="assistant", content="Revenue grew."),
        RunEvent(round=1, status=end, reason="All done." if end != "failed" else "It broke."),
    ]


def envelopes(events: list[Any]) -> list[Envelope]:
    return [
        Envelope(workflow=WORKFLOW, seq=None if e.type == "delta" else n, event=e)
        for n, e in enumerate(events, start=1)
    ]


def translator(run_after: int = 0) -> Translator:
    return Translator(
        workflow=WORKFLOW, round=1, page="/workflows/7/", thread_id="t", run_id="r",
        run_after=run_after,
    )  # fmt: skip


def run(events: list[Envelope], translation: Translator, *, opened: bool = True) -> list[dict]:
    """The run's AG-UI events as a client receives them (as JSON)."""
    out: list[Any] = translation.opening() if opened else []
    for envelope in events:
        out += translation.take(envelope)
        if translation.outcome is not None:
            break
    out += translation.closing()
    started = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    events = [started, *(e.model_dump(mode="json", by_alias=True) for e in out)]
    if opened:  # the patches, applied to the snapshot, give the translator's own state
        assert state_of(events) == json.loads(json.dumps(translation.state))
    return events


def test_a_step_is_phases_and_its_action_a_tool_call():
    """plan, act (the tool call with Stage 2's parameters), observe (its result), refine,
    in order; the answer a text message made of its pieces; RUN_FINISHED last."""
    events = run(envelopes(round_events()), translator())
    verify(events)
    phases = [(e["type"], e.get("stepName")) for e in events if e["type"].startswith("STEP_")]
    assert phases == [
        (kind, name)
        for name in ("plan", "act", "observe", "refine")
        for kind in ("STEP_STARTED", "STEP_FINISHED")
    ]
    calls = [e for e in events if e["type"].startswith("TOOL_CALL")]
    assert types(calls) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
                            "TOOL_CALL_RESULT"]  # fmt: skip
    assert calls[0]["toolCallName"] == "document.extract"
    assert calls[1]["delta"] == '{"pages":[1,2]}'
    assert '"success":true' in calls[3]["content"]
    assert len({c["toolCallId"] for c in calls}) == 1
    assert text_of(events) == "Revenue grew."
    assert types(events)[-1] == "RUN_FINISHED" and "outcome" not in events[-1]
    assert events[-1]["usage"] == [
        {"model": "m", "inputTokens": 100, "outputTokens": 10, "totalTokens": 110,
         "cachedInputTokens": 0}
    ]  # fmt: skip


def test_the_deltas_build_the_rounds_state():
    """The snapshot then every delta: the checklist, the step's telemetry, the document,
    the spend and the final status."""
    state = state_of(run(envelopes(round_events()), translator()))
    assert [(t["objective"], t["status"]) for t in state["tasks"]] == [("Summarise", "success")]
    assert [(s["method"], s["status"], s["tokens"]) for s in state["steps"]] == [
        ("document.extract", "success", 110)
    ]
    assert [d["name"] for d in state["documents"]] == ["notes.md"]
    assert state["usage"]["promptTokens"] == 100 and state["status"] == "completed"


def test_an_approval_ends_the_run_with_an_interrupt_and_the_next_run_picks_up():
    """The approval waiting: RUN_FINISHED with an interrupt naming the action's tool call,
    everything closed. A run resumed after it reads the round up to the question, opens
    with the state and the phase open, and brings the tool call's result and the rest."""
    events = envelopes(round_events(approval=True))
    first = run(events, translator())
    verify(first)
    (interrupt,) = first[-1]["outcome"]["interrupts"]
    asked = next(e.seq for e in events if e.type == "approval")
    assert interrupt["id"] == f"poweron-{WORKFLOW}-{asked}" and interrupt["reason"] == "approval"
    call = next(e for e in first if e["type"] == "TOOL_CALL_START")["toolCallId"]
    assert interrupt["toolCallId"] == call
    assert "TOOL_CALL_RESULT" not in types(first) and "TEXT_MESSAGE_START" not in types(first)

    resumed = translator(run_after=asked)
    folded = [resumed.take(e) for e in events if e.seq is not None and e.seq <= asked]
    assert resumed.outcome is None and folded  # the question itself is the earlier run's
    second = run([e for e in events if e.seq is None or e.seq > asked], resumed)
    verify(second)
    assert second[1]["type"] == "STATE_SNAPSHOT" and second[1]["snapshot"]["question"]
    assert (second[2]["type"], second[2]["stepName"]) == ("STEP_STARTED", "act")
    result = next(e for e in second if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == call
    assert text_of(second) == "Revenue grew." and "outcome" not in second[-1]
    assert state_of(second)["question"] is None


def test_the_step_limit_question_is_an_interrupt_with_its_answer_schema():
    """The question asks for `steps` (0 to stop)."""
    at = {"round": 1, "task": 1}
    events = envelopes(
        [RoundEvent(round=1, status="started"),
         AskEvent(**at, question="Go on for more steps?", stepsDone=3)]
    )  # fmt: skip
    last = run(events, translator())[-1]
    (interrupt,) = last["outcome"]["interrupts"]
    assert interrupt["reason"] == "step_limit" and interrupt["message"].startswith("Go on")
    assert interrupt["responseSchema"]["required"] == ["steps"]


def test_how_a_run_ends():
    """Stopped: RUN_FINISHED cancelled; failed: RUN_ERROR with the reason; the feed gone:
    RUN_ERROR. What was open is closed first (the action's tool call gets a result)."""
    stopped = run(envelopes(round_events(end="stopped")), translator())
    assert stopped[-1]["outcome"] == {"type": "cancelled"}
    failed = run(envelopes(round_events(end="failed")), translator())
    assert (failed[-1]["type"], failed[-1]["message"]) == ("RUN_ERROR", "It broke.")
    cut = translator()
    for envelope in envelopes(round_events())[:8]:  # into the step, the action called
        cut.take(envelope)
    closing = [e.model_dump(mode="json", by_alias=True) for e in cut.closing(gone="Deleted.")]
    assert types(closing) == ["TOOL_CALL_RESULT", "STEP_FINISHED", "RUN_ERROR"]
    assert closing[-1]["message"] == "Deleted."


def test_a_reconnect_opens_with_the_answer_so_far():
    """A run read up to the middle of the answer opens with its message and the text so
    far, then goes on with what follows, so the client's text is the whole answer."""
    events = envelopes(round_events())
    middle = next(i for i, e in enumerate(events) if e.type == "delta")
    reader = translator()
    for envelope in events[: middle + 1]:
        reader.take(envelope)
    rest = run(events[middle + 1 :], reader)
    verify(rest)
    assert text_of(rest) == "Revenue grew."


def test_other_rounds_and_the_round_before_the_run_only_bring_the_state():
    """Events of another round are not the run's; thoughts are reasoning; errors custom."""
    at = {"round": 1, "task": 1}
    events = envelopes(
        [RoundEvent(round=2, status="started"),
         ThoughtEvent(round=1, number=1, thinking="Think first.", nextThoughtNeeded=False),
         ErrorEvent(**at, kind="model", message="Bad JSON.", retrying=True),
         RunEvent(round=1, status="completed")]
    )  # fmt: skip
    events_out = run(events, translator())
    verify(events_out)
    assert types(events_out)[1:7] == [
        "STATE_SNAPSHOT", "REASONING_START", "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
    ]  # fmt: skip
    custom = next(e for e in events_out if e["type"] == "CUSTOM")
    assert custom["name"] == "poweron.error" and custom["value"]["message"] == "Bad JSON."


def test_the_patch_turns_one_state_into_the_other():
    """Keys added, removed and changed, a list grown and one shrunk."""
    before = {"a": 1, "gone": True, "list": [1, {"x": 1}], "short": [1, 2], "o": {"k/~": 1}}
    after = {"a": 2, "new": None, "list": [1, {"x": 2}, 3], "short": [1], "o": {"k/~": 2}}
    assert apply_patch(before, diff(before, after)) == after
    assert diff(after, after) == []
