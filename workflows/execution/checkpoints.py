"""The engine's protocols made durable: each model call and tool action is a DBOS step whose
JSON result is checkpointed, so a recovered round replays what was done and repeats only the
step that was cut off. A document write needs no checkpoint of its own: it is keyed by its
place in the round, so writing it again finds the document stored the first time.

Replay must be deterministic, so everything the loop branches on comes from recorded values:
the clock is the time the recorded steps took, the documents index grows by recorded saves,
and the user's notes and answers are DBOS messages. Step results never hold secrets.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from channels.db import database_sync_to_async
from dbos import DBOS
from pydantic import BaseModel

from workflows import services
from workflows.engine.loop.actions import MeteredLLM
from workflows.engine.records.protocols import (
    LLM,
    ActionContext,
    ActionResult,
    AnswerSink,
    Completion,
    DocumentRef,
    InvalidModelOutput,
    Message,
    ModelUnavailable,
    ProducedDocument,
    T,
    TextCompletion,
    Tool,
    ToolExecutor,
    Usage,
)
from workflows.models import ChatDocument, ChatWorkflow
from workflows.tools.registry import variables_named

Piece = Callable[[str, str, int, str], Awaitable[None]]
"""Receives a live piece of a streamed message: (key, text, offset, attempt)."""


class Checkpoints:
    """Runs steps for one round and keeps its clock: the sum of the time its recorded steps
    took, so a resumed round neither counts the downtime nor reads a different time.

    `before` is awaited before each step begins (the runner stores the events emitted since
    the last one, so what viewers see is committed before the round waits on anything).
    """

    def __init__(self, *, before: Callable[[], Awaitable[None]] | None = None) -> None:
        self.elapsed = 0.0
        self._depth = 0
        self._before = before

    def clock(self) -> float:
        """The round's clock for the engine (seconds of recorded work)."""
        return self.elapsed

    async def step(self, name: str, call: Callable[[], Awaitable[Any]]) -> Any:
        """Run `call` as a checkpointed step (preemptible: a stop cancels it at once). Inside
        another step (a tool's own model calls) it simply runs: the outer step records it."""
        if self._depth:
            return await call()
        if self._before is not None:
            await self._before()

        async def timed() -> dict[str, Any]:
            started = time.monotonic()
            value = await call()
            return {"value": value, "seconds": time.monotonic() - started}

        self._depth += 1
        try:
            recorded = await DBOS.run_step_async({"name": name, "preemptible": True}, timed)
        finally:
            self._depth -= 1
        self.elapsed += float(recorded["seconds"])
        return recorded["value"]


class DurableLLM:
    """The round's model; a stream broadcasts its pieces live from inside its step."""

    def __init__(self, llm: LLM, checkpoints: Checkpoints, on_piece: Piece) -> None:
        self._llm = llm
        self._checkpoints = checkpoints
        self._on_piece = on_piece
        self.label = llm.label

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        output: type[T],
        kind: str,
        key: str = "",
        on_answer: AnswerSink | None = None,
    ) -> Completion[T]:
        """A structured answer, recorded as JSON and validated again on replay. With `key`,
        its `answer` field is broadcast live as that message, tagged with this attempt (a
        model that cannot stream simply answers whole)."""

        async def call() -> dict[str, Any]:
            attempt, offset = uuid.uuid4().hex[:8], 0

            async def send(piece: str) -> None:
                nonlocal offset
                await self._on_piece(key, piece, offset, attempt)
                offset += len(piece)

            try:
                done = await self._llm.complete(
                    messages, output=output, kind=kind, key=key, on_answer=send if key else None
                )
            except InvalidModelOutput as error:
                usage = error.usage.model_dump() if error.usage else None
                return {
                    "invalid": str(error),
                    "told": error.told,
                    "raw": error.raw,
                    "usage": usage,
                    "cause": error.cause,
                    "advice": error.advice,
                }
            except ModelUnavailable as error:
                return unavailable(error)
            value = done.value.model_dump(mode="json", by_alias=True)
            return {"value": value, "usage": done.usage.model_dump()}

        data = await self._checkpoints.step(f"model.{kind}", call)
        _raise_recorded(data)
        return Completion(output.model_validate(data["value"]), Usage(**data["usage"]))

    async def complete_text(self, messages: Sequence[Message], *, kind: str) -> TextCompletion:
        """A plain-text answer, recorded."""

        async def call() -> dict[str, Any]:
            try:
                done = await self._llm.complete_text(messages, kind=kind)
            except ModelUnavailable as error:
                return unavailable(error)
            return {"text": done.text, "usage": done.usage.model_dump()}

        data = await self._checkpoints.step(f"model.{kind}", call)
        _raise_recorded(data)
        return TextCompletion(data["text"], Usage(**data["usage"]))

    async def stream_text(
        self, messages: Sequence[Message], *, kind: str, key: str = ""
    ) -> AsyncIterator[str | Usage]:
        """The streamed answer: pieces go to viewers live, tagged with this attempt; the
        whole text is recorded and handed to the engine in one piece."""

        async def call() -> dict[str, Any]:
            attempt, text = uuid.uuid4().hex[:8], ""
            usage: Usage | None = None
            try:
                async for piece in self._llm.stream_text(messages, kind=kind, key=key):
                    if isinstance(piece, Usage):
                        usage = piece
                    elif piece:
                        await self._on_piece(key, piece, len(text), attempt)
                        text += piece
            except ModelUnavailable as error:
                return {**unavailable(error), "text": text}
            return {"text": text, "usage": usage.model_dump() if usage else None}

        data = await self._checkpoints.step(f"model.{kind}", call)
        if data.get("text"):
            yield data["text"]
        _raise_recorded(data)
        if data.get("usage"):
            yield Usage(**data["usage"])


def unavailable(error: ModelUnavailable) -> dict[str, Any]:
    """What a model step records of a model that failed (the operator's detail too)."""
    return {"unavailable": str(error), "cause": error.cause, "detail": error.detail}


def _raise_recorded(data: dict[str, Any]) -> None:
    """Raise the failure a model step recorded, as the engine expects it."""
    if "unavailable" in data:
        detail = data.get("detail", "")
        raise ModelUnavailable(data["unavailable"], cause=data["cause"], detail=detail)
    if "invalid" in data:
        usage = Usage(**data["usage"]) if data.get("usage") else None
        raise InvalidModelOutput(  # what a step recorded before cause and advice had none
            data["invalid"],
            raw=data["raw"],
            usage=usage,
            cause=data.get("cause", "invalid"),
            advice=data.get("advice", ""),
            told=data.get("told", ""),
        )


NOT_SET_UP = "it is not set up on this server (the administrator can set it up)"
"""Why a tool the site's settings leave out is missing, in words for everyone."""


class DurableTools:
    """The tool executor; each action is one step, its documents and model usage recorded
    with it (the secret of a connection is passed in, never recorded)."""

    def __init__(self, tools: ToolExecutor, checkpoints: Checkpoints) -> None:
        self._tools = tools
        self._checkpoints = checkpoints

    def tools(self) -> Sequence[Tool]:
        """The usable tools, in catalog order."""
        return self._tools.tools()

    def unavailable(self) -> dict[str, str]:
        """The tools left out of the catalog, with the reason: the model is told, and so are
        people (the answer says what is not available here, and why). A reason that names the
        site's settings is the operator's (the Tools panel shows it to staff): it is said as
        not set up on this server."""
        reasons = self._tools.unavailable()
        return {name: NOT_SET_UP if variables_named(why) else why for name, why in reasons.items()}

    async def execute(self, name: str, params: BaseModel, ctx: ActionContext) -> ActionResult:
        """Run one action as a step; its result (with the model calls it made) is recorded."""

        async def call() -> dict[str, Any]:
            metered = MeteredLLM(ctx.llm)
            action_ctx = replace(ctx, llm=metered)
            result = await self._tools.execute(name, params, action_ctx)
            result = result.model_copy(update={"usage": result.usage or metered.usages})
            return result.model_dump(mode="json")

        return ActionResult.model_validate(await self._checkpoints.step(f"tool.{name}", call))


class DurableStore:
    """The workflow's documents: the index is recorded at the start and grows by the saves; a
    document is written once per (round, task, action, position), even when a resumed round
    saves it again."""

    def __init__(
        self, workflow: ChatWorkflow, checkpoints: Checkpoints, *, hidden: range = range(0)
    ) -> None:
        self.workflow = workflow
        self.hidden = hidden
        """Rounds whose documents this round does not see (it reruns an earlier round)."""
        self._checkpoints = checkpoints
        self._refs: list[DocumentRef] = []
        self._saved: dict[tuple[int, int, int], int] = {}

    async def load(self) -> None:
        """Read the index as the round found it (recorded)."""
        refs = await self._checkpoints.step("documents.index", self._index)
        self._refs = [DocumentRef.model_validate(ref) for ref in refs]

    @database_sync_to_async
    def _index(self) -> list[dict[str, Any]]:
        # An upload not sent with a message (unticked, or waiting for the next one) is no
        # document of the round: the user has not given it to the agent.
        pending = services.PENDING_UPLOAD_LABEL
        documents = self.workflow.documents.exclude(label=pending).order_by("id")
        if self.hidden:
            documents = documents.exclude(round__in=self.hidden)
        return [document.as_ref().model_dump(mode="json") for document in documents]

    def index(self) -> list[DocumentRef]:
        """Every document of the workflow, oldest first."""
        return list(self._refs)

    async def read(self, ref: DocumentRef) -> bytes:
        """A document's bytes (documents never change, so reading needs no checkpoint)."""
        return await self._read(int(ref.id))

    @database_sync_to_async
    def _read(self, document_id: int) -> bytes:
        document = ChatDocument.objects.get(pk=document_id, workflow=self.workflow)
        with document.file.open("rb") as handle:
            data: bytes = handle.read()
        return data

    async def save(
        self, document: ProducedDocument, *, label: str, round: int, task: int, action: int
    ) -> DocumentRef:
        """Store a produced document once and add it to the index. Not a step: the write is
        idempotent by its key, so a replay reads back the document (and id) of the first run,
        and a checkpoint would only add a few milliseconds per document."""
        where = (round, task, action)
        self._saved[where] = position = self._saved.get(where, 0) + 1
        key = f"{round}:{task}:{action}:{position}"

        @database_sync_to_async
        def write() -> dict[str, Any]:
            stored = ChatDocument.objects.filter(workflow=self.workflow, key=key).first()
            stored = stored or services.document_create(
                workflow=self.workflow,
                name=document.name,
                data=document.data,
                label=label,
                round=round,
                mime_type=document.mime,
                source=document.source,
                source_url=document.sourceUrl or "",
                key=key,
            )
            return stored.as_ref().model_dump(mode="json")

        ref = DocumentRef.model_validate(await write())
        self._refs.append(ref)
        return ref


class DurableControls:
    """The user's notes and answers as DBOS messages: durable, and one topic per question so
    a late answer never answers the next one."""

    def __init__(
        self, checkpoints: Checkpoints, *, connections: dict[str, str], answer_timeout: float
    ) -> None:
        self._checkpoints = checkpoints
        self._connections = connections
        self._answer_timeout = answer_timeout
        self._asked = 0
        """Step-limit questions asked in this round (a replay asks them again in order)."""

    async def ask_continue(
        self, *, task: int, steps_done: int, timeout: float | None
    ) -> int | None:
        """Wait for "continue for N more steps?" (None when no answer comes in time)."""
        self._asked += 1
        topic = question_topic("extend", task, steps_done, asked=self._asked)
        answer = await self._wait(topic, timeout)
        return None if answer is None else int(answer)

    async def approve(
        self,
        *,
        action: str,
        parameters: dict[str, Any],
        task: int,
        step: int,
        timeout: float | None,
    ) -> bool | None:
        """Wait for the user to approve or reject the action (None when no answer comes)."""
        answer = await self._wait(question_topic("approve", task, step), timeout)
        return None if answer is None else bool(answer)

    async def steering(self) -> list[str]:
        """The notes the user sent since the last call (each received once, durably)."""
        notes = []
        while (note := await DBOS.recv_async(STEER_TOPIC, timeout_seconds=0)) is not None:
            notes.append(str(note))
        return notes

    def resolve_connection(self, label: str) -> str | None:
        """The owner's secret for a connection label; never leaves the run."""
        return self._connections.get(label)

    async def _wait(self, topic: str, timeout: float | None) -> Any:
        """Receive one answer; the wait is measured by two recorded clock readings."""
        limit = min(timeout, self._answer_timeout) if timeout is not None else self._answer_timeout
        before = await self._checkpoints.step("clock", _now)
        answer = await DBOS.recv_async(topic, timeout_seconds=max(0.0, limit))
        after = await self._checkpoints.step("clock", _now)
        self._checkpoints.elapsed += max(0.0, after - before)
        return answer


STEER_TOPIC = "steer"


def question_topic(kind: str, task: int, number: int, *, asked: int = 0) -> str:
    """The message topic of one question: extend (task, steps done, and which step-limit
    question of the round it is: a retried task asks at the same steps again, and an answer
    left over from the last question must not answer it) or approve (task, action, whose
    number keeps counting across retries)."""
    return f"{kind}:{task}:{number}:{asked}" if kind == "extend" else f"{kind}:{task}:{number}"


async def _now() -> float:
    return time.time()
