"""One structured model call with exactly one corrective retry, its answer streamed where a
host can, and the error event for work a call proposed ahead that broke a rule."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from workflows.engine.loop.core import Out, Rejected, RoundContext
from workflows.engine.loop.deadline import TimeBudgetSpent, left, within
from workflows.engine.model.facts import call_facts
from workflows.engine.model.formats import holds_json, valid_values
from workflows.engine.model.reports import TIMEOUT_HINT
from workflows.engine.model.request import Request
from workflows.engine.prompting.narrowed import asked_as, plain
from workflows.engine.prompting.prompts import (
    cache_first,
    correction,
    format_first,
    unfinished_correction,
)
from workflows.engine.prompting.selection import unavailable_actions
from workflows.engine.prompting.shared import SHARED_KINDS, answers_section, now_line, shared_layout
from workflows.engine.records.events import DeltaEvent, ErrorEvent, Event
from workflows.engine.records.protocols import (
    Completion,
    InvalidModelOutput,
    Message,
    T,
    describe_error,
)
from workflows.engine.records.wording import explain_error

CALL_NAMES = {
    "taskplan": "task plan",
    "select": "action selection",
    "parameters": "action parameters",
    "refine": "refinement decision",
    "review": "task review",
    "actionplan": "action plan",
    "thought": "thought",
}
"""What each kind of model call is called when people read about it."""


def with_cause(reason: str, cause: str) -> str:
    """A failure's reason for people, with the model call's last error after it (which says
    what to fix, when there is something to fix), as one sentence."""
    cause = " ".join(cause.split()).rstrip(".")
    if len(cause) > 400:
        cause = cause[:399] + "…"
    return f"{reason} — {cause}." if cause else f"{reason}."


def unavailable_hint(ctx: RoundContext, raw: str) -> str:
    """Why an answer naming a tool of a server that failed could not have it: the server's
    reason ("" when the answer names none)."""
    hints = [
        f"{key[:-2]}'s tools cannot be used now: {reason}"
        for key, reason in unavailable_actions(ctx).items()
        if key.endswith(".*") and f'"{key[:-1]}' in raw
    ]
    return "".join(f" ({hint})" for hint in hints[:2])


def rejected_proposal(
    ctx: RoundContext, task: int, error: Rejected, what: str, then: str, *, action: int = 0
) -> ErrorEvent:
    """The error event for work a call proposed ahead (a first action, a next action, a
    plan) that broke a rule: `what` was rejected because of `error`, and `then` happens."""
    return ErrorEvent(
        round=ctx.round,
        task=task,
        action=action,
        # Ignored for mypy below: a rejection's kind is one of ErrorEvent's kinds.
        kind=error.kind,  # type: ignore[arg-type]
        message=f"{what} was rejected: {error.told[:1_500]}. {then}",
        retrying=True,
    )


async def complete_streaming(
    ctx: RoundContext,
    prompt: Sequence[Message],
    *,
    output: type[T],
    kind: str,
    key: str,
    attempt: int,
    out: Out[Any],
) -> AsyncIterator[DeltaEvent]:
    """One structured call; with `key`, the pieces of its `answer` field are yielded as
    deltas of that message while the call runs (an attempt of their own), and the completion
    is left in `out`. Errors propagate; a cancelled round cancels the call, and so does the
    round's time budget running out (TimeBudgetSpent)."""
    if not key:
        out.value = await within(ctx.budget, ctx.llm.complete(prompt, output=output, kind=kind))
        return
    left(ctx.budget)  # none left: the call does not start
    pieces: asyncio.Queue[str] = asyncio.Queue()
    call = asyncio.ensure_future(
        ctx.llm.complete(prompt, output=output, kind=kind, key=key, on_answer=pieces.put)
    )
    tag, text = f"{kind}-{attempt}", ""
    try:
        while not (call.done() and pieces.empty()):
            if pieces.empty():
                getter = asyncio.ensure_future(pieces.get())
                seconds = ctx.budget.remaining_seconds()  # the call is cut where it runs out
                done, _ = await asyncio.wait(
                    {call, getter}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
                )
                if not done:
                    getter.cancel()
                    raise TimeBudgetSpent(ctx.budget)
                if not getter.done():
                    getter.cancel()
                    continue
                piece = getter.result()
            else:
                piece = pieces.get_nowait()
            yield DeltaEvent(round=ctx.round, key=key, text=piece, offset=len(text), attempt=tag)
            text += piece
            ctx.streamed[key] = (tag, text)
        out.value = call.result()
    finally:
        if not call.done():
            call.cancel()
            call.add_done_callback(lambda task: task.cancelled() or task.exception())


async def ask(
    ctx: RoundContext,
    messages: Sequence[Message],
    *,
    output: type[T],
    kind: str,
    out: Out[Any],
    check: Callable[[T], Any] | None = None,
    task: int = 0,
    action: int = 0,
    key: str = "",
    now: str = "",
) -> AsyncIterator[Event]:
    """One structured model call with exactly one corrective retry (`key`: the message the
    output's `answer` field is, streamed live by hosts that can; `now`: what applies to this
    call alone, said at the end of a prompt laid out with the shared head).

    The prompt goes with the facts it was written from (`request.Request`), for a model
    that answers from data. `output` may be a model built for this call
    (narrowed.selection_output …); the value handed to `check` and left in `out` is the
    plain model it narrows. `check` may transform the value or raise Rejected/ValueError;
    the error is fed back to the model once, with the valid values. An answer that held no
    JSON (cut off at its token limit, looping, timed out, prose) is not shown to the model
    again: the retry asks for a shorter answer instead. After a second failure `out.value`
    stays None and the caller fails the step visibly.
    ModelUnavailable propagates.
    """
    facts = await call_facts(ctx, kind=kind, output=output, task=task, key=key)
    layout = ctx.layout(kind)
    if layout == "shared" and kind in SHARED_KINDS:  # one head for every kind
        answers = answers_section(language=ctx.state.language)
        line = now_line(kind, answering=bool(key), extra=now)
        messages = shared_layout(messages, answers=answers, now=line)
        output = asked_as(output, "answer_after" if key else "object")
    elif layout != "narrow":  # a hosted provider: laid out for its prompt cache
        messages = cache_first(messages)
    else:  # a local server: how the answer is written before the data, for its prefix cache
        messages = format_first(messages)
    prompt = list(messages)
    for attempt in (1, 2):
        raw, kind_of_error, unfinished, advice = "", "validation", False, ""
        try:
            done: Out[Completion[T]] = Out()
            async for event in complete_streaming(
                ctx,
                Request(prompt, facts),
                output=output,
                kind=kind,
                key=key,
                attempt=attempt,
                out=done,
            ):
                yield event
            assert done.value is not None
            completion = done.value
        except InvalidModelOutput as error:
            if error.usage is not None:
                yield ctx.usage(error.usage, task=task, action=action)
            message, raw, advice = describe_error(error), error.raw, error.advice
            told = error.told
            if error.cause == "timeout" and advice:  # the setting to raise is for staff
                told = f"{told}; {TIMEOUT_HINT}"
            unfinished = error.cause != "invalid" or not holds_json(raw)
        else:
            yield ctx.usage(completion.usage, task=task, action=action)
            raw = completion.value.model_dump_json(by_alias=True)
            try:
                value = plain(completion.value)
                out.value, out.error = (check(value) if check else value), ""
                return
            except Rejected as error:
                message, kind_of_error, told = str(error), error.kind, error.told
            except ValueError as error:  # an action's parameters, checked by its own model
                message = describe_error(error)
                told = explain_error(error, parameters=kind == "parameters")
        hint = unavailable_hint(ctx, raw)
        message, told = message + hint, told + hint
        verdict = "was not valid" if kind_of_error == "validation" else "was rejected"
        what = f"The model's answer for the {CALL_NAMES.get(kind, kind)} {verdict}"
        if unfinished:
            what = f"The model produced no valid answer for the {CALL_NAMES.get(kind, kind)}"
        told = told[:1_500]  # in words for people; the retry below reads the model's
        out.error = told
        yield ErrorEvent(
            round=ctx.round,
            task=task,
            action=action,
            kind=kind_of_error,  # type: ignore[arg-type]  # one of ErrorEvent's kinds, chosen above
            message=f"{what}: {told}",
            retrying=attempt == 1,
            detail=advice,
        )
        valid = valid_values(output)  # only a corrective message needs them
        if unfinished:
            prompt = [*messages, unfinished_correction(message, valid)]
        else:
            prompt = [
                *messages,
                {"role": "assistant", "content": raw[:4_000]},
                correction(message, valid),
            ]
