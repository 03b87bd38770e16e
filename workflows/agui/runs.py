"""What one RunAgentInput does: start a round, resume one from its interrupt, or replay a run
asked for again; who may do it; and the AG-UI runs this remembers.

A thread is a workflow: the one its earlier runs were (the same user's), the workflow whose
id it is (digits: another user's is 404), or a new one. A run is a round: one this endpoint
has served (the same `threadId` and `runId`) is replayed from its stored events and needs a
token with `read`; anything else starts or resumes a round and needs `run`, with the same
claim of the workflow, limits and durable run as a message sent from the page.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ag_ui.core import RunAgentInput
from channels.db import database_sync_to_async
from django.db import IntegrityError
from django.http import HttpRequest

from workflows import selectors, services
from workflows.api import tokens
from workflows.api.auth import BearerToken, Principal
from workflows.api.errors import Problem, invalid
from workflows.api.routes.messages import refusal
from workflows.engine.records.events import ApprovalEvent, AskEvent
from workflows.execution import launcher
from workflows.models import ChatWorkflow, WorkflowEvent

from .inputs import Options, read_options, round_message
from .interrupts import Answer, parse_id, read_answer
from .models import AguiRun

if TYPE_CHECKING:
    from django.contrib.auth.models import User

NO_TOKEN = "Send Authorization: Bearer <token> with a personal API token."


@dataclass
class Plan:
    """What a request does, and where its run's events are."""

    principal: Principal
    kind: Literal["start", "resume", "replay"]
    workflow: ChatWorkflow | None = None
    options: Options = field(default_factory=Options)
    text: str = ""
    title: str = ""
    answers: list[Answer] = field(default_factory=list)
    round: int = 0
    run_after: int = 0
    """The seq after which the run's own events begin."""
    round_start: int = 0
    """The seq after which the round's events begin (read for the state)."""
    emit_after: int = 0
    """The seq after which events are sent (a reconnect's Last-Event-ID)."""


def authenticate(request: HttpRequest, run: RunAgentInput) -> tuple[Principal, AguiRun | None]:
    """The caller, by their token (401, 403 for a missing scope, 429), and the run of theirs
    this asks for again, if any: that needs `read`, anything else `run`."""
    header = request.headers.get("Authorization", "")
    if not header:
        raise Problem("unauthenticated", NO_TOKEN)
    scheme, _, secret = header.partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret:
        BearerToken("run")(request)  # refuses a malformed header as the API does
    try:
        owner = tokens.token_authenticate(secret).owner
    except tokens.TokenRefused:
        owner = None  # refused below, with the reason
    served = AguiRun.objects.filter(owner=owner, thread_id=run.thread_id, run_id=run.run_id)
    existing = served.select_related("workflow").first() if owner is not None else None
    principal = BearerToken("read" if existing else "run").authenticate(request, secret)
    return principal, existing


def thread_workflow(user: User, thread_id: str) -> ChatWorkflow | None:
    """The workflow a thread is (404 for digits that are not one of the user's), or None."""
    earlier = AguiRun.objects.filter(owner=user, thread_id=thread_id).order_by("-created")
    if found := earlier.select_related("workflow").first():
        return found.workflow
    if thread_id.isdigit() and len(thread_id) <= 18:
        return selectors.workflow_get(user=user, workflow_id=int(thread_id))
    return None


def round_start(workflow_id: int, round: int, default: int) -> int:
    """The seq after which the round's events begin."""
    first = (
        WorkflowEvent.objects.filter(workflow_id=workflow_id, round=round)
        .order_by("seq")
        .values_list("seq", flat=True)
        .first()
    )
    return first - 1 if first is not None else default


def prepare(request: HttpRequest, run: RunAgentInput) -> Plan:
    """Read the request and decide what it does (nothing is stored yet)."""
    principal, existing = authenticate(request, run)
    user = principal.user
    if existing is not None:
        return replay_plan(request, run, principal, existing)
    options = read_options(run)
    workflow = thread_workflow(user, run.thread_id)
    if run.resume:
        return resume_plan(run, principal, workflow)
    text, title = round_message(run, new_workflow=workflow is None)
    return Plan(principal, "start", workflow, options, text=text, title=title)


def replay_plan(
    request: HttpRequest, run: RunAgentInput, principal: Principal, existing: AguiRun
) -> Plan:
    """A run asked for again: its events from its start, or after the seq the client has."""
    options = read_options(run)
    wanted = request.headers.get("Last-Event-ID", "")
    after = int(wanted) if wanted.isdigit() and len(wanted) <= 18 else options.after
    workflow = existing.workflow
    start = round_start(workflow.pk, existing.round, existing.after)
    emit = min(max(existing.after, after or 0), workflow.last_seq)
    return Plan(principal, "replay", workflow, options, round=existing.round,
                run_after=existing.after, round_start=start, emit_after=emit)  # fmt: skip


def resume_plan(run: RunAgentInput, principal: Principal, workflow: ChatWorkflow | None) -> Plan:
    """A run that answers the interrupts of the previous one (the questions of one round)."""
    assert run.resume is not None
    answers: list[tuple[Answer, int]] = []
    for index, entry in enumerate(run.resume):
        where = f"resume.{index}.interruptId"
        workflow_id, seq = parse_id(entry.interrupt_id, where)
        asked = (
            WorkflowEvent.objects.filter(
                workflow_id=workflow_id, workflow__owner=principal.user, seq=seq,
                type__in=("approval", "ask"), payload__status="waiting",
            ).select_related("workflow").first()
        )  # fmt: skip
        if asked is None:
            raise invalid(where, "no question of yours has this id.")
        if workflow is None:
            workflow = asked.workflow
        if asked.workflow_id != workflow.pk or (answers and asked.round != answers[0][1]):
            raise invalid(where, "the interrupt is not one of this thread's current run.")
        answers.append((read_answer(entry, index, asked.type), asked.round))
    assert workflow is not None
    after = max(answer.seq for answer, _ in answers)
    round = answers[0][1]
    start = round_start(workflow.pk, round, after)
    return Plan(principal, "resume", workflow, read_options(run), round=round,
                answers=[answer for answer, _ in answers], run_after=after,
                round_start=start, emit_after=after)  # fmt: skip


async def begin(plan: Plan, run: RunAgentInput) -> Plan:
    """Do what the plan says (start the round, or send the answers) and remember the run."""
    if plan.kind == "start":
        await start(plan)
    elif plan.kind == "resume":
        assert plan.workflow is not None
        for answer in plan.answers:
            if await database_sync_to_async(still_asked)(answer, plan.round):
                # Answered meanwhile (on the page): the run goes on as it was told.
                with contextlib.suppress(launcher.CommandRefused):
                    await launcher.answer(
                        workflow_id=plan.workflow.pk, kind=answer.kind, value=answer.value
                    )
    if plan.kind != "replay":
        await database_sync_to_async(remember)(plan, run)
    return plan


async def start(plan: Plan) -> None:
    """Open the round on the thread's workflow, or on a new one (deleted again when the round
    is refused: nothing half-stored)."""
    user, options = plan.principal.user, plan.options
    created = plan.workflow is None
    if plan.workflow is None:
        plan.workflow = await database_sync_to_async(services.workflow_create)(
            owner=user, title=plan.title, mode=options.mode, max_steps=options.maxSteps
        )
    workflow = plan.workflow
    after = await ChatWorkflow.objects.filter(pk=workflow.pk).values_list(
        "last_seq", flat=True
    ).aget()  # fmt: skip
    try:
        await launcher.start_round(
            workflow_id=workflow.pk, user=user, text=plan.text, document_ids=options.documents
        )
    except launcher.CommandRefused as refused:
        if created:
            await database_sync_to_async(services.workflow_delete)(workflow=workflow)
        raise refusal(refused, reruns_in_path=False) from refused
    plan.workflow = await ChatWorkflow.objects.aget(pk=workflow.pk)
    plan.round = plan.workflow.current_round
    plan.run_after = plan.round_start = plan.emit_after = after


def still_asked(answer: Answer, round: int) -> bool:
    """Whether the question the answer is for still waits (the round's latest of its kind)."""
    kind = "approval" if answer.kind == "approve" else "ask"
    latest = (
        WorkflowEvent.objects.filter(workflow_id=answer.workflow, round=round, type=kind)
        .order_by("-seq")
        .first()
    )
    if latest is None or latest.seq != answer.seq:
        return False
    match latest.envelope.event:
        case AskEvent(status="waiting") | ApprovalEvent(status="waiting"):
            return True
    return False


def remember(plan: Plan, run: RunAgentInput) -> None:
    """Note the run: the thread's workflow, the round, where its events begin."""
    assert plan.workflow is not None
    with contextlib.suppress(IntegrityError):  # the same run sent twice at once: kept once
        AguiRun.objects.create(
            owner=plan.principal.user, thread_id=run.thread_id, run_id=run.run_id,
            workflow=plan.workflow, round=plan.round, after=plan.run_after,
        )  # fmt: skip
