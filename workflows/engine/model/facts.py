"""The facts of a model call, gathered from the round as its prompt was written from it (see
`request.py`): what a model that reads data rather than prose answers from."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from workflows.engine.loop.core import STEPS_SHOWN, RoundContext, TaskState
from workflows.engine.loop.guards import allowed_tools
from workflows.engine.model.request import Facts, StepFact
from workflows.engine.records.schemas import Observation


def _task(ctx: RoundContext, number: int) -> TaskState | None:
    return next((task for task in ctx.tasks if task.number == number), None)


def round_facts(ctx: RoundContext, kind: str) -> Facts:
    """What every call of the round is written from: the user's words and the documents."""
    return Facts(
        kind=kind,
        request=ctx.state.prompt,
        round=ctx.round,
        documents=tuple(ctx.store.index()),
    )


def _parameter_names(output: type[BaseModel]) -> tuple[str, ...]:
    """The parameters a Stage 2 answer holds (its `parameters` model's fields)."""
    field = output.model_fields.get("parameters")
    values: Any = field.annotation if field is not None else None
    if isinstance(values, type) and issubclass(values, BaseModel):
        return tuple(values.model_fields)
    return ()


async def call_facts(
    ctx: RoundContext,
    *,
    kind: str,
    output: type[BaseModel],
    task: int = 0,
    key: str = "",
) -> Facts:
    """The facts of one structured call of `kind` for `task` (0: the round's), whose answer
    is shaped as `output`; `key`: it also writes the answer to the user."""
    facts = replace(round_facts(ctx, kind), answering=bool(key))
    state = ctx.state
    if kind == "taskplan":
        tools = allowed_tools(state.policy, "general", ctx.tools.tools())
        return replace(
            facts,
            catalog=tuple(tool.name for tool in tools),
            asks_first_action=state.mode == "react",
            asks_plan=state.mode == "actionplan" and state.max_steps > 0,
        )
    current = _task(ctx, task)
    if current is None:
        return facts
    tools = allowed_tools(state.policy, current.item.taskType, ctx.tools.tools())
    steps = current.steps[-STEPS_SHOWN:]
    facts = replace(
        facts,
        task=current.number,
        first_action=current.actions + 1,
        catalog=tuple(tool.name for tool in tools),
        steps=tuple(StepFact(step.name, step.observation.success) for step in steps),
        latest=current.steps[-1].observation if current.steps else None,
        objective=current.item.objective,
        parameters=_parameter_names(output) if kind == "parameters" else (),
    )
    if kind == "thought" and current.steps:
        texts = await _extracted(ctx, current.steps[0].observation)
        facts = replace(facts, texts=texts)
    return facts


async def _extracted(ctx: RoundContext, observation: Observation) -> tuple[tuple[str, str], ...]:
    """(name, text) of the documents a reading step produced, capped as a thought's prompt
    holds them (none when it failed)."""
    if not observation.success:
        return ()
    limit = ctx.state.caps.final_context_chars
    texts: list[tuple[str, str]] = []
    for ref in ctx.store.index():
        if ref.label == observation.resultLabel and limit > 0:
            text = (await ctx.store.read(ref)).decode("utf-8", "replace")[:limit]
            limit -= len(text)
            texts.append((ref.name, text))
    return tuple(texts)


def answer_facts(ctx: RoundContext) -> Facts:
    """The facts of the final answer: what every step produced (document previews and web
    findings, as `name: text`), or None when no task ran (a direct answer)."""
    facts = round_facts(ctx, "final")
    if not ctx.tasks:
        return facts
    results: list[tuple[str, str]] = []
    for task in ctx.tasks:
        for step in task.steps:
            obs = step.observation
            results += [(p.name, p.snippet) for p in obs.previews]
            results += [
                (f"{f.title or f.url} ({f.url})", " ".join(f.keyPoints)) for f in obs.findings
            ]
    return replace(facts, results=tuple(results))
