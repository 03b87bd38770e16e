"""Two models behind one LLM: the main model plans, chooses and refines; a small one answers
the small jobs (Stage 2's parameters of one action, the review).

The two stages are what make the split possible: Stage 2 sees one action's schema and a short
context, the review ticks criteria — work a small, cheap model does well (and on a local
server a grammar makes it exact), while task planning, Stage 1 and refine keep the main model.
Every usage says which model answered it, so the host prices each call by its own model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from workflows.engine.model.formats import ResponseFormat
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.records.protocols import (
    LLM,
    AnswerSink,
    Closable,
    Completion,
    InvalidModelOutput,
    Message,
    T,
    TextCompletion,
    Usage,
    Warmable,
)

SMALL_KINDS = frozenset({"parameters", "review"})
"""The call kinds the small model answers: Stage 2 and the task review (which, in an
Actionplan round of one task, writes the answer too). Action summaries and workflow titles
are written by the host without a model call."""


def stamped(usage: Usage, model: str) -> Usage:
    """The usage with the model that answered it (kept when it already names one)."""
    return usage if usage.model else usage.model_copy(update={"model": model})


class StagedLLM:
    """contracts.LLM over a main and a small model, chosen by the kind of call. Its label is
    the main model's; every usage names the model that answered."""

    def __init__(self, main: LLM, small: LLM, *, small_kinds: frozenset[str] = SMALL_KINDS):
        self.main, self.small, self.small_kinds = main, small, small_kinds
        self.label = main.label

    def model_for(self, kind: str) -> LLM:
        """The model that answers calls of this kind."""
        return self.small if kind in self.small_kinds else self.main

    @property
    def response_format(self) -> ResponseFormat:
        """The main model's way of asking for a structured answer (json_schema for a model
        that is not an OpenAI-compatible client)."""
        main = self.main
        return main.response_format if isinstance(main, OpenAICompatibleLLM) else "json_schema"

    @property
    def models(self) -> tuple[str, str]:
        """The labels of the main and the small model."""
        return self.main.label, self.small.label

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        output: type[T],
        kind: str,
        key: str = "",
        on_answer: AnswerSink | None = None,
    ) -> Completion[T]:
        """The structured answer of the model for this kind."""
        model = self.model_for(kind)
        try:
            done = await model.complete(
                messages, output=output, kind=kind, key=key, on_answer=on_answer
            )
        except InvalidModelOutput as error:
            if error.usage is not None:
                error.usage = stamped(error.usage, model.label)
            raise
        return Completion(done.value, stamped(done.usage, model.label))

    async def complete_text(self, messages: Sequence[Message], *, kind: str) -> TextCompletion:
        """The plain-text answer of the model for this kind."""
        model = self.model_for(kind)
        done = await model.complete_text(messages, kind=kind)
        return TextCompletion(done.text, stamped(done.usage, model.label))

    async def stream_text(
        self, messages: Sequence[Message], *, kind: str, key: str = ""
    ) -> AsyncIterator[str | Usage]:
        """The streamed answer of the model for this kind."""
        model = self.model_for(kind)
        async for piece in model.stream_text(messages, kind=kind, key=key):
            yield stamped(piece, model.label) if isinstance(piece, Usage) else piece

    async def warm(self) -> None:
        """Rehearse both models' clients (those that can)."""
        for model in (self.main, self.small):
            if isinstance(model, Warmable):
                await model.warm()

    async def aclose(self) -> None:
        """Release what both models hold of their own."""
        for model in (self.main, self.small):
            if isinstance(model, Closable):
                await model.aclose()

    async def __aenter__(self) -> StagedLLM:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
