"""One valid event of every type of the contract, placed in round 1, task 1, action 1."""

from __future__ import annotations

from workflows.engine.records.events import (
    ActEvent,
    ActionPlanEvent,
    ApprovalEvent,
    AskEvent,
    BaseEvent,
    DeltaEvent,
    DocumentEvent,
    ErrorEvent,
    MessageEvent,
    ObserveEvent,
    PlanEvent,
    RefineEvent,
    ReviewEvent,
    RoundEvent,
    StatusEvent,
    StepEvent,
    TaskEvent,
    TaskPlanEvent,
    ThoughtEvent,
    UsageEvent,
)
from workflows.engine.records.parts import PlanItem, PlannedStep
from workflows.engine.records.protocols import DocumentRef
from workflows.engine.records.schemas import ActionSelection, Observation, TaskItem
from workflows.events.contract import FeedbackEvent, NoticeEvent, RunEvent, TitleEvent

STEP = {"round": 1, "task": 1, "action": 1}


def samples(document: DocumentRef) -> dict[str, BaseEvent]:
    """Every event type, keyed by type; `document` must exist for the document links."""
    return {
        "round": RoundEvent(round=1, status="started", mode="react", model="m"),
        "taskplan": TaskPlanEvent(round=1, overview="o", tasks=[TaskItem(objective="x")]),
        "task": TaskEvent(round=1, task=1, status="pending", objective="Find X"),
        "actionplan": ActionPlanEvent(
            round=1, task=1, actions=[PlannedStep(action="web.search", objective="look")]
        ),
        "step": StepEvent(**STEP, status="started", step=1),
        "plan": PlanEvent(**STEP, step=1, selection=ActionSelection(action="web.search")),
        "act": ActEvent(**STEP, method="web.search", parameters={"query": "x"}),
        "approval": ApprovalEvent(
            **STEP, method="web.search", parameters={"query": "x"}, status="waiting"
        ),
        "observe": ObserveEvent(
            **STEP, observation=Observation(success=True, resultLabel="round1_task1_action1_r")
        ),
        "document": DocumentEvent(**STEP, document=document),
        "refine": RefineEvent(**STEP, decision="stop", reason="done", criteriaMet=True),
        "message": MessageEvent(**STEP, key="k1", role="action", content="c", summary="s"),
        "review": ReviewEvent(round=1, task=1, status="success", reason="ok"),
        "thought": ThoughtEvent(
            round=1,
            task=1,
            number=1,
            thinking="hm",
            planning=[PlanItem(description="d", subSteps=[PlanItem(description="d.1")])],
            nextThoughtNeeded=True,
        ),
        "delta": DeltaEvent(round=1, key="round1_answer", text="Hel", offset=0),
        "usage": UsageEvent(**STEP, kind="select", promptTokens=10, completionTokens=2),
        "status": StatusEvent(round=1, task=1, code="token_budget", reason="spent"),
        "error": ErrorEvent(**STEP, kind="validation", message="action: Field required"),
        "ask": AskEvent(round=1, task=1, question="More?", stepsDone=5),
        "run": RunEvent(round=1, status="completed", reason="done"),
        "notice": NoticeEvent(round=0, level="info", text="hello"),
        "feedback": FeedbackEvent(round=1, messageId=1, rating=-1, comment="Too short"),
        "title": TitleEvent(round=0, title="Quarterly <b>figures</b>"),
    }
