"""The tools' inputs and outputs. Their JSON Schemas (self-contained: no `$ref`) are what
clients and their models see, so every field says what it takes."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from workflows.execution.commands import Send

MAX_TEXT = Send.model_fields["text"].metadata[-1].max_length
"""The longest message the page takes: a task here too."""
Id = Annotated[int, Field(ge=1, le=2**63 - 1)]
Mode = Literal["react", "actionplan", "reasoning"]


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InlineDocument(Input):
    """A file sent with the task, its bytes in base64."""

    name: str = Field(min_length=1, max_length=255, description="The file's name, e.g. q3.csv.")
    contentBase64: str = Field(description="The file's bytes, base64-encoded (standard alphabet).")
    mimeType: str = Field(
        default="", max_length=127, description="Its media type; guessed from the name if empty."
    )

    @field_validator("contentBase64")
    @classmethod
    def _decodes(cls, value: str) -> str:
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("not valid base64") from None
        return value

    @property
    def data(self) -> bytes:
        return base64.b64decode(self.contentBase64)


class UploadedDocument(Input):
    """A file uploaded earlier to the workflow (HTTP API: POST /api/v1/workflows/{id}/uploads)
    and not sent with a message yet."""

    uploadId: Id = Field(description="The upload's document id.")


class RunTaskIn(Input):
    """Arguments of run_task."""

    task: str = Field(
        min_length=1,
        max_length=MAX_TEXT,
        description="What PowerOn should do, written as a user would write it in its chat: "
        "the goal, what a good answer holds, any constraints.",
    )
    mode: Mode = Field(
        default="react",
        description="How the agent works: react plans tasks and solves each step by step "
        "(choose an action, run it, observe, decide what next); actionplan plans each task's "
        "actions up front, then runs them; reasoning thinks in numbered thoughts, without "
        "actions. A continued workflow keeps its own mode.",
    )
    workflow: Id | None = Field(
        default=None,
        description="Continue this workflow (an id from list_workflows or an earlier run_task): "
        "the round reads its history and documents. Omit to start a new workflow.",
    )
    documents: list[InlineDocument | UploadedDocument] = Field(
        default_factory=list,
        max_length=20,
        description="Files for the task: each either inline (name and contentBase64) or the "
        "uploadId of a file uploaded earlier to the workflow named in `workflow`.",
    )


class ListWorkflowsIn(Input):
    """Arguments of list_workflows."""

    query: str = Field(
        default="",
        max_length=200,
        description="Words every listed workflow holds in its title or messages "
        "(case-insensitive); empty lists them all.",
    )
    limit: int = Field(default=20, ge=1, le=100, description="At most this many.")
    offset: int = Field(default=0, ge=0, le=10**9, description="Skip this many first.")


class WorkflowIn(Input):
    """Arguments naming one workflow."""

    workflow: Id = Field(description="The workflow's id (from list_workflows or run_task).")


class DocumentOut(BaseModel):
    """A document of a workflow."""

    id: int
    name: str
    mimeType: str
    size: int = Field(description="Bytes.")
    source: Literal["uploaded", "produced", "fetched"]
    round: int
    uri: str = Field(description="Read it with resources/read.")


class RunTaskOut(BaseModel):
    """What run_task returns when the round has ended."""

    workflow: int = Field(description="The workflow's id: pass it as `workflow` to go on.")
    round: int
    status: Literal["completed", "failed", "stopped"]
    reason: str = Field(description="Why the round ended so, when it did not complete.")
    answer: str = Field(description="The agent's answer, Markdown.")
    documents: list[DocumentOut] = Field(description="The documents the round produced.")
    page: str = Field(description="The workflow's page in PowerOn, where every step shows.")


class WorkflowSummary(BaseModel):
    """One workflow in a list."""

    id: int
    title: str
    mode: Mode
    status: str = Field(description="idle, queued, running, stopping, completed, failed, stopped.")
    currentRound: int
    updated: datetime


class WorkflowList(BaseModel):
    """What list_workflows returns: newest activity first."""

    workflows: list[WorkflowSummary]
    count: int = Field(description="How many match in all.")
    limit: int
    offset: int


class Question(BaseModel):
    """What a running round waits for."""

    kind: Literal["extend", "approve"] = Field(
        description="extend: the step-limit question; approve: an action awaiting approval."
    )
    text: str


class WorkflowDetail(BaseModel):
    """What get_workflow returns."""

    id: int
    title: str
    mode: Mode
    status: str = Field(
        description="idle, queued, running, waiting (for an answer), stopping, completed, "
        "failed, stopped."
    )
    statusReason: str
    currentRound: int
    rounds: int = Field(description="Rounds run so far (a round per message).")
    lastTask: str = Field(description="The last message sent to the agent.")
    lastAnswer: str = Field(description="The last answer, Markdown (cut at 4,000 characters).")
    question: Question | None = Field(description="What the run waits for, if it does.")
    tokens: int = Field(description="Prompt and completion tokens spent, all rounds.")
    documents: list[DocumentOut]
    export: str = Field(description="The whole workflow as Markdown: read with resources/read.")
    page: str
    updated: datetime


class StopOut(BaseModel):
    """What stop_run returns."""

    workflow: int
    status: str = Field(description="stopping (winding down) or stopped.")
    message: str


def schema_of(
    model: type[BaseModel], *, mode: Literal["validation", "serialization"]
) -> dict[str, Any]:
    """A model's JSON Schema with every `$ref` replaced by its definition."""
    schema = model.model_json_schema(mode=mode)
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(definitions[node["$ref"].rsplit("/", 1)[-1]])
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    # Ignored for mypy below: a JSON Schema is JSON, a dict at its root.
    return inline(schema)  # type: ignore[no-any-return]
