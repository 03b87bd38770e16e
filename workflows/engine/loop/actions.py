"""Running one action: Stage 2 parameter checks, then, each in a function of its own, the
inputs resolved, the approval, the tool, its documents, the observation and its record."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from workflows.engine.loop.core import Out, Rejected, RoundContext, Step, StepTrace, TaskState
from workflows.engine.loop.deadline import TimeBudgetSpent, within
from workflows.engine.loop.defaults import DefaultsContext, apply_defaults
from workflows.engine.loop.guards import (
    UnsafeParameter,
    needs_approval,
    sanitize_parameters,
    sends_offsite,
)
from workflows.engine.loop.observe import build_observation, render_observation_markdown, summarize
from workflows.engine.records.events import (
    ApprovalEvent,
    DocumentEvent,
    ErrorEvent,
    Event,
    MessageEvent,
    ObserveEvent,
)
from workflows.engine.records.protocols import (
    ActionContext,
    ActionResult,
    AnswerSink,
    Completion,
    DocumentRef,
    Message,
    T,
    TextCompletion,
    Tool,
    Usage,
)
from workflows.engine.records.references import (
    ReferenceNotFound,
    resolve_references,
    result_label,
)
from workflows.engine.records.schemas import FORBIDDEN_PARAMETER_NAMES, Observation
from workflows.engine.records.state import HistoryEntry


def find_tool(ctx: RoundContext, name: str) -> Tool | None:
    """The tool called `name`, if the executor has it."""
    return next((tool for tool in ctx.tools.tools() if tool.name == name), None)


def own_connection(ctx: RoundContext, name: str) -> str | None:
    """The user's connection an action works with when Stage 1 named none (their own Tavily
    key for web.search): the first of the tool's kind, if they have one."""
    tool = find_tool(ctx, name)
    kind = tool.connection_kind if tool is not None else None
    return next((c.label for c in ctx.state.connections if kind and c.kind == kind), None)


@dataclass
class Prepared:
    """Stage 2 output made ready to run: validated, defaulted, sanitised."""

    params: BaseModel
    values: dict[str, Any]
    applied: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def prepare_parameters(tool: Tool, raw: dict[str, Any], ctx: DefaultsContext) -> Prepared:
    """Validate Stage 2 values against the tool's real model; raise Rejected or ValueError."""
    forbidden = sorted(FORBIDDEN_PARAMETER_NAMES & raw.keys())
    if forbidden:
        raise Rejected(
            f"parameters must not include {', '.join(forbidden)}: business parameters only",
            kind="validation",
        )
    known = tool.Parameters.model_fields
    dropped = [name for name in raw if name not in known]
    values, applied = apply_defaults(
        tool.Parameters, {k: v for k, v in raw.items() if k in known}, ctx
    )
    try:
        values = sanitize_parameters(values)
    except UnsafeParameter as error:
        raise Rejected(str(error), kind="validation") from error
    params = tool.Parameters.model_validate(values)
    return Prepared(params, values, applied, dropped)


def task_text(ctx: RoundContext, task: TaskState, objective: str = "") -> str:
    """What defaults are derived from: the objectives, criteria and user prompt."""
    return " ".join([objective, task.item.objective, *task.item.successCriteria, ctx.state.prompt])


class MeteredLLM:
    """The round's model as tools see it: their calls are counted against the budget."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self.label: str = llm.label
        self.usages: list[Usage] = []

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        output: type[T],
        kind: str,
        key: str = "",
        on_answer: AnswerSink | None = None,
    ) -> Completion[T]:
        """Delegate and count (a tool's calls stream nothing: `key` is not passed on)."""
        completion: Completion[T] = await self._llm.complete(messages, output=output, kind=kind)
        self.usages.append(completion.usage)
        return completion

    async def complete_text(self, messages: Sequence[Message], *, kind: str) -> TextCompletion:
        """Delegate and count."""
        completion: TextCompletion = await self._llm.complete_text(messages, kind=kind)
        self.usages.append(completion.usage)
        return completion

    async def stream_text(
        self, messages: Sequence[Message], *, kind: str, key: str = ""
    ) -> AsyncIterator[str | Usage]:
        """Delegate and count."""
        async for item in self._llm.stream_text(messages, kind=kind, key=key):
            if isinstance(item, Usage):
                self.usages.append(item)
            yield item


@dataclass
class ActionCall:
    """One action to run, whichever mode chose it."""

    name: str
    objective: str
    references: list[str]
    connection: str | None
    prepared: Prepared
    learnings: list[str] = field(default_factory=list)
    label: str | None = None
    """The result label suffix; None lets the tool choose it."""


async def execute_action(
    ctx: RoundContext, step: Step, call: ActionCall, out: Out[Observation]
) -> AsyncIterator[Event]:
    """One action, in the order it happens: its input documents resolved, its approval
    asked, the tool run, its documents stored, what it produced observed and recorded."""
    try:  # before any approval: the user approves the documents it will really read
        documents = resolve_references(call.references, ctx.store.index())
    except ReferenceNotFound as error:
        yield ErrorEvent(**step.position(), kind="reference", message=str(error))
        async for event in not_run(ctx, step, call, str(error), "failed", out):
            yield event
        return
    connection = call.connection or own_connection(ctx, call.name)
    sources = [document.source for document in documents]
    offsite = sends_offsite(
        ctx.state.policy, call.name, call.prepared.values, sources, ctx.state.prompt
    )
    if offsite or needs_approval(ctx.state.policy, call.name):
        approval: Out[bool] = Out()
        async for event in ask_approval(ctx, step, call, documents, connection, approval):
            yield event
        if not approval.value:
            async for event in unapproved(ctx, step, call, approval.value, out):
                yield event
            return
    ran = await run_tool(ctx, call, documents, connection)
    for usage in ran.usages:
        yield ctx.usage(usage, task=step.task.number, action=step.action)
    result = ran.result
    if not result.success:
        message = f"{call.name}: {result.error or 'failed'}"
        yield ErrorEvent(**step.position(), kind="tool", message=message)
    label = result_label(ctx.round, step.task.number, step.action, call.label or result.label)
    async for event in store_documents(ctx, step, result, label):
        yield event
    out.value = build_observation(result, label, ctx.state.caps)
    yield ObserveEvent(**step.position(), observation=out.value, durationMs=ran.duration_ms)
    status = "success" if result.success else "failed"
    async for event in record_step(ctx, step, call, out.value, status=status):
        yield event


async def ask_approval(
    ctx: RoundContext,
    step: Step,
    call: ActionCall,
    documents: list[DocumentRef],
    connection: str | None,
    out: Out[bool],
) -> AsyncIterator[Event]:
    """Ask the user to approve the action, with the documents and the connection it will
    use, and say the answer; `out` holds it (None: nobody answered in time)."""
    asked = ApprovalEvent(
        **step.position(),
        method=call.name,
        parameters=call.prepared.values,
        status="waiting",
        documents=documents,
        connection=connection,
    )
    yield asked
    answer = ctx.controls.approve(
        action=call.name,
        parameters=call.prepared.values,
        task=step.task.number,
        step=step.action,
        timeout=ctx.budget.remaining_seconds(),
    )
    out.value = await ctx.wait_for_user(answer)
    decided = {True: "approved", False: "rejected", None: "cancelled"}[out.value]
    yield asked.model_copy(update={"status": decided})


async def unapproved(
    ctx: RoundContext, step: Step, call: ActionCall, answer: bool | None, out: Out[Observation]
) -> AsyncIterator[Event]:
    """An action the user rejected (False), or that nobody approved in time (None): said,
    and recorded as not run."""
    if answer is False:
        reason, status = f"{call.name} was rejected by the user.", "rejected"
    else:
        reason, status = f"{call.name} was not run: nobody approved it in time.", "stopped"
    yield ErrorEvent(**step.position(), kind="rejected", message=reason)
    async for event in not_run(ctx, step, call, reason, status, out):
        yield event


async def not_run(
    ctx: RoundContext, step: Step, call: ActionCall, reason: str, status: str, out: Out[Observation]
) -> AsyncIterator[Event]:
    """Record an action that did not run, with why, as its observation."""
    label = result_label(ctx.round, step.task.number, step.action, "results")
    result = ActionResult(success=False, error=reason)
    out.value = build_observation(result, label, ctx.state.caps)
    async for event in record_step(ctx, step, call, out.value, status=status):
        yield event


@dataclass(frozen=True)
class Ran:
    """What running a tool gave: its result, how long it took, the model calls it made."""

    result: ActionResult
    duration_ms: int
    usages: list[Usage]


async def run_tool(
    ctx: RoundContext, call: ActionCall, documents: list[DocumentRef], connection: str | None
) -> Ran:
    """Run the tool with its context (documents, the connection's secret, the round's model,
    counted); a tool that raises fails the action, never the round. The round's time budget
    running out cuts it (TimeBudgetSpent)."""
    metered = MeteredLLM(ctx.llm)
    action_ctx = ActionContext(
        documents=documents,
        store=ctx.store,
        llm=metered,
        language=ctx.state.language,
        connection_secret=ctx.controls.resolve_connection(connection) if connection else None,
        objective=call.objective,
    )
    started = ctx.clock()
    try:  # cut, with its model calls, where the round's time budget runs out
        result = await within(
            ctx.budget, ctx.tools.execute(call.name, call.prepared.params, action_ctx)
        )
    except TimeBudgetSpent:
        raise  # the round ends as a spent budget does (`cutoff`)
    except Exception as error:  # a tool bug must not end the round; CancelledError passes
        result = ActionResult(success=False, error=f"{type(error).__name__}: {error}")
    duration = int((ctx.clock() - started) * 1000)
    return Ran(result, duration, result.usage or metered.usages)


async def store_documents(
    ctx: RoundContext, step: Step, result: ActionResult, label: str
) -> AsyncIterator[Event]:
    """Store the documents the action produced under its result label, and show each."""
    for document in result.documents:
        ref = await ctx.store.save(
            document, label=label, round=ctx.round, task=step.task.number, action=step.action
        )
        yield DocumentEvent(**step.position(), document=ref)


async def record_step(
    ctx: RoundContext,
    step: Step,
    call: ActionCall | None,
    observation: Observation,
    *,
    status: str,
    name: str = "",
) -> AsyncIterator[Event]:
    """Emit the action's complete message (with its summary) and remember the step."""
    name = call.name if call else name
    objective = call.objective if call else ""
    learnings = call.learnings if call else []
    summary = summarize(name, observation)
    documents = [
        ref
        for ref in ctx.store.index()
        if ref.label == observation.resultLabel and observation.documentsCount
    ]
    refs = [f"docItem:{ref.id}:{ref.name}" for ref in documents]
    label = observation.resultLabel if refs else ""
    method, _, action_name = name.partition(".")
    step.status, step.method = status, name
    task = step.task
    yield MessageEvent(
        **step.position(),
        key=f"round{ctx.round}_task{task.number}_action{step.action}",
        role="action",
        content=render_observation_markdown(name, objective, observation, status=status),
        summary=summary,
        documentsLabel=label,
        documents=documents,
        success=observation.success,
        learnings=learnings,
        notes=observation.notes,
        method=method,
        name=action_name,
        status=status,
    )
    ctx.entries.append(
        HistoryEntry(
            role="action",
            round=ctx.round,
            task=task.number,
            action=step.action,
            method=name,
            summary=summary,
            documents_label=label,
            documents=[f"docList:{label}", *refs] if label else [],
            notes=observation.notes,
            learnings=learnings,
            success=observation.success,
        )
    )
    task.steps.append(
        StepTrace(step.action, name, objective, observation, summary, step.number, status)
    )


def failed_observation(ctx: RoundContext, step: Step, reason: str) -> Observation:
    """The observation of a step that never ran."""
    label = result_label(ctx.round, step.task.number, step.action, "results")
    return Observation(success=False, resultLabel=label, error=reason[:600])
