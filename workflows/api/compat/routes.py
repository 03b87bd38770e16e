"""The OpenAI-compatible operations: PowerOn's modes as models, and a chat completion that
runs the last user message as a round, like a message sent from the page (the same launcher,
limits and durable run; it shows in the page and in admin)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connections
from django.http import Http404, HttpRequest, JsonResponse, StreamingHttpResponse
from django.urls import reverse
from ninja import Router

from workflows import selectors, services
from workflows.api.auth import BearerToken, caller
from workflows.api.schemas import readable
from workflows.engine.records.state import MODES
from workflows.execution import commands, launcher
from workflows.live.feed import Feed, FeedEnded
from workflows.models import ChatWorkflow

from .answer import RoundReading
from .errors import OpenAIError, refusal
from .schemas import ChatCompletion, ChatIn, MessageIn, ModelList, ModelOut

if TYPE_CHECKING:
    from django.contrib.auth.models import User

router = Router(tags=["chat"])

RUN = [BearerToken("run")]
PREFIX = "poweron-"
DESCRIPTIONS = {
    "react": "Plans tasks and solves each step by step: choose an action, run it, look at "
    "the result, decide what next.",
    "actionplan": "Plans each task's actions up front, then runs them.",
    "reasoning": "Thinks a task through in numbered thoughts, without actions.",
}
CREATED = 1_767_225_600
"""When these models were first offered (2026-01-01), for clients that sort by it."""
MAX_TEXT = next(
    int(rule.max_length)
    for rule in commands.Send.model_fields["text"].metadata
    if hasattr(rule, "max_length")
)
"""The longest message the page takes: a round's message here too."""
ROLES = {"system": "System", "developer": "System", "user": "User", "assistant": "Assistant"}
EARLIER = "Earlier in this conversation (sent with this message):"
GONE = "The workflow was deleted while the round ran."


def model_out(mode: str) -> dict[str, Any]:
    return {
        "id": PREFIX + mode,
        "object": "model",
        "created": CREATED,
        "owned_by": "poweron",
        "description": DESCRIPTIONS.get(mode, ""),
    }


@router.get("/models", response=ModelList, auth=RUN, operation_id="list_models")
def list_models(request: HttpRequest) -> dict[str, Any]:
    """PowerOn's modes, each as a model: the one named in a chat completion runs its round."""
    return {"object": "list", "data": [model_out(mode) for mode in MODES]}


@router.get("/models/{model}", response=ModelOut, auth=RUN, operation_id="get_model")
def get_model(request: HttpRequest, model: str) -> dict[str, Any]:
    """One of the modes, by its model name."""
    return model_out(mode_of(model))


def mode_of(model: str) -> str:
    mode = model.removeprefix(PREFIX)
    if not model.startswith(PREFIX) or mode not in MODES:
        names = ", ".join(PREFIX + each for each in MODES)
        raise OpenAIError(
            404, f"The model `{model}` does not exist here; the models are {names}.",
            param="model", code="model_not_found",
        )  # fmt: skip
    return mode


def text_of(message: MessageIn, index: int) -> str:
    """A message's text (its text parts, joined); anything else is refused."""
    content = message.content
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for part in content:
        if part.type != "text" or part.text is None:
            raise OpenAIError(
                400, f"PowerOn reads text; a `{part.type}` part cannot be sent here (upload "
                "files through /api/v1/workflows/<id>/uploads).",
                param=f"messages.{index}.content",
            )  # fmt: skip
        texts.append(part.text)
    return "\n\n".join(texts)


def round_text(messages: list[MessageIn], *, with_earlier: bool) -> str:
    """The round's message: the last user message, after the earlier messages quoted (the
    latest that fit in one message; a named workflow has its own history instead)."""
    last = len(messages) - 1
    if messages[last].role != "user":
        raise OpenAIError(
            400, "The last message must be the user's: it is what the round answers.",
            param=f"messages.{last}.role",
        )  # fmt: skip
    text = text_of(messages[last], last)
    try:
        readable(text)
    except ValueError as error:
        raise OpenAIError(400, f"The message {error}.", param=f"messages.{last}.content") from None
    if not text.strip():
        raise OpenAIError(400, "The message is empty.", param=f"messages.{last}.content")
    if len(text) > MAX_TEXT:
        raise OpenAIError(
            400, f"The message is longer than {MAX_TEXT:,} characters.",
            param=f"messages.{last}.content",
        )  # fmt: skip
    if not with_earlier:
        return text
    quoted: list[str] = []
    room = MAX_TEXT - len(text) - len(EARLIER) - 200
    for index in range(last - 1, -1, -1):
        said = readable(text_of(messages[index], index).replace("\x00", "")).strip()
        line = f"{ROLES.get(messages[index].role, messages[index].role.capitalize())}: {said}"
        if not said:
            continue
        if len(line) + 2 > room:
            left = index + 1
            quoted.insert(0, f"({left} earlier message{'s' if left != 1 else ''} left out.)")
            break
        quoted.insert(0, line)
        room -= len(line) + 2
    if not quoted:
        return text
    return "\n\n".join([EARLIER, *quoted, "---", text])


@database_sync_to_async
def open_workflow(user: User, payload: ChatIn, mode: str, title: str) -> tuple[ChatWorkflow, bool]:
    """The workflow named in the request's metadata (404 unless the caller's, 400 when its
    mode is another), or a new one; whether it is new."""
    named = (payload.metadata or {}).get("workflow")
    if named is None:
        return services.workflow_create(owner=user, title=title, mode=mode), True
    try:
        workflow = selectors.workflow_get(user=user, workflow_id=int(str(named)))
    except (ValueError, OverflowError, Http404):
        raise OpenAIError(
            404, f"You have no workflow {named}.", param="metadata.workflow",
            code="workflow_not_found",
        ) from None  # fmt: skip
    if workflow.mode != mode:
        raise OpenAIError(
            400, f"Workflow {workflow.pk} runs in mode {workflow.mode}: ask for "
            f"{PREFIX}{workflow.mode}.", param="model", code="model_mismatch",
        )  # fmt: skip
    return workflow, False


@router.post(
    "/chat/completions",
    auth=RUN,
    operation_id="create_chat_completion",
    response={200: ChatCompletion},
    openapi_extra={
        "responses": {
            200: {
                "description": "The answer; with `stream`, `chat.completion.chunk`s over "
                "Server-Sent Events, ending with `data: [DONE]`.",
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/ChatCompletion"}},
                    "text/event-stream": {"schema": {"type": "string"}},
                },
            }
        }
    },
)
async def create_chat_completion(
    request: HttpRequest, payload: ChatIn
) -> StreamingHttpResponse | JsonResponse:
    """Run the last user message as a round of a new workflow (or of the one named in
    `metadata`) and answer with the round's answer: streamed as it is written with `stream`,
    whole otherwise. The steps are not in the content; the round shows in the page."""
    user = caller(request).user
    mode = mode_of(payload.model)
    named = bool(payload.metadata and "workflow" in payload.metadata)
    text = round_text(payload.messages, with_earlier=not named)
    last = text_of(payload.messages[-1], len(payload.messages) - 1)
    workflow, created = await open_workflow(user, payload, mode, last.strip().splitlines()[0][:80])
    after = workflow.last_seq
    try:
        await launcher.start_round(workflow_id=workflow.pk, user=user, text=text, document_ids=[])
    except launcher.CommandRefused as refused:
        if created:  # nothing half-stored: the workflow made for this round goes too
            await database_sync_to_async(services.workflow_delete)(workflow=workflow)
        raise refusal(refused) from refused
    started = await ChatWorkflow.objects.aget(pk=workflow.pk)
    page = request.build_absolute_uri(started.get_absolute_url())
    reading = RoundReading(round=started.current_round, page=page)
    head = {
        "id": f"chatcmpl-poweron-{workflow.pk}-{started.current_round}",
        "created": int(time.time()),
        "model": payload.model,
    }
    where = {
        "workflow": workflow.pk,
        "round": started.current_round,
        "page": page,
        "events": request.build_absolute_uri(
            reverse("api-1:stream_events", kwargs={"workflow_id": workflow.pk})
        ),
    }
    # The request's own database connection is not needed while the round runs.
    await sync_to_async(connections.close_all)()
    response: StreamingHttpResponse | JsonResponse
    if payload.stream:
        include_usage = bool(payload.stream_options and payload.stream_options.include_usage)
        chunks = stream(reading, workflow.pk, after, head, where, include_usage=include_usage)
        response = StreamingHttpResponse(chunks, content_type="text/event-stream")
        response["Cache-Control"] = "no-cache, no-store"
        response["X-Accel-Buffering"] = "no"
    else:
        async with Feed(workflow.pk, after=after) as feed:
            async for frame in feed:
                reading.take(frame)
                if reading.ended:
                    break
        if not reading.ended:  # the feed ended first
            reading.status, reading.reason = "failed", GONE
        response = JsonResponse(completion(reading, head, where))
    response["X-PowerOn-Workflow"] = str(workflow.pk)
    return response


def completion(
    reading: RoundReading, head: dict[str, Any], where: dict[str, Any]
) -> dict[str, Any]:
    return {
        **head,
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reading.content()},
                "finish_reason": reading.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": reading.usage(),
        "poweron": {**where, "status": reading.status, "reason": reading.reason},
    }


def chunk(
    head: dict[str, Any], delta: dict[str, Any], finish: str | None = None, **extra: Any
) -> bytes:
    body = {
        **head,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        **extra,
    }
    return f"data: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


async def stream(
    reading: RoundReading,
    workflow_id: int,
    after: int,
    head: dict[str, Any],
    where: dict[str, Any],
    *,
    include_usage: bool,
) -> AsyncIterator[bytes]:
    """The answer as chunks while the round runs, a comment line after every silence, then
    the finish (and the usage), then `[DONE]`. A client that goes away leaves the round
    running (it is in the page)."""
    yield chunk(head, {"role": "assistant", "content": ""}, poweron=where)
    beat = float(settings.POWERON_SSE_HEARTBEAT_SECONDS)
    async with Feed(workflow_id, after=after) as feed:
        while not reading.ended:
            try:
                frame = await feed.get(timeout=beat)
            except FeedEnded:
                reading.status, reading.reason = "failed", GONE
                break
            if frame is None:
                yield b": keepalive\n\n"
            elif piece := reading.take(frame):
                yield chunk(head, {"content": piece})
    if closing := reading.closing():
        yield chunk(head, {"content": closing})
    ended = {**where, "status": reading.status, "reason": reading.reason}
    yield chunk(head, {}, reading.finish_reason, poweron=ended)
    if include_usage:
        usage = {**head, "object": "chat.completion.chunk", "choices": [], "usage": reading.usage()}
        yield f"data: {json.dumps(usage)}\n\n".encode()
    yield b"data: [DONE]\n\n"
