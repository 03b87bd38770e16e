"""What the OpenAI-compatible endpoint reads and answers, in the shapes of OpenAI's chat
completions: the request is read leniently (a client's sampling parameters and other fields
it sends are accepted and not used: a round has its own models and limits), the answers
are what the official clients parse."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from workflows.engine.records.state import MODES


class Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class ContentPart(Lenient):
    """A part of a message's content; only text is read."""

    type: str
    text: str | None = None


class MessageIn(Lenient):
    """One message of the conversation."""

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None


class StreamOptions(Lenient):
    include_usage: bool = False
    """Send a last chunk with the round's usage (and no choice), as OpenAI does."""


class ChatIn(Lenient):
    """A chat completion request: its last message, the user's, opens a round."""

    model: str = Field(
        description="Which of PowerOn's modes runs the round: "
        + ", ".join(f"`poweron-{mode}`" for mode in MODES)
        + " (GET /v1/models)."
    )
    messages: list[MessageIn] = Field(
        min_length=1,
        description="The conversation; the last is the user's message the round answers. "
        "For a new workflow the earlier ones are quoted before it, in the message the round "
        "reads; a workflow named in `metadata` has its own history, and they are not used.",
    )
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    metadata: dict[str, Any] | None = Field(
        default=None,
        description='`{"workflow": "<id>"}` runs the round in that workflow of yours (a new '
        "one otherwise).",
    )
    n: int | None = Field(default=None, ge=1, le=1, description="One answer only.")


class ModelOut(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str
    description: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelOut]


class PromptDetails(BaseModel):
    cached_tokens: int


class Usage(BaseModel):
    """The tokens of the round: every model call it made, summed."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptDetails


class AnswerMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int
    message: AnswerMessage
    finish_reason: Literal["stop", "length"]
    """`stop` when the round completed; `length` when it did not (failed or stopped), its
    content then saying so in its first line."""
    logprobs: None = None


class Round(BaseModel):
    """Where the answer comes from in PowerOn."""

    workflow: int
    round: int
    status: Literal["completed", "failed", "stopped"]
    reason: str
    page: str
    """The workflow's page, where every step of the round shows."""
    events: str
    """The workflow's event stream (SSE), every step typed."""


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    poweron: Round


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class Error(BaseModel):
    """OpenAI's error body."""

    error: ErrorDetail
