"""What a RunAgentInput asks of PowerOn: the round's message, and PowerOn's own options.

The round answers the last message, the user's. A new workflow (a thread PowerOn has not
seen) has no history of its own, so the earlier messages are quoted before it, as the
OpenAI-compatible endpoint does; a thread that is a workflow has its own. PowerOn's options
come in `forwardedProps.poweron`:

    {"mode": "react" | "actionplan" | "reasoning",   # a new workflow's mode (react)
     "maxSteps": 1..50,                               # a new workflow's step limit
     "documents": [ids of uploads],                   # for the round, as the page attaches
     "after": seq}                                    # a reconnect: replay after this seq

The client's `tools`, `context` and `state` are not read: PowerOn's actions are its own.
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import RunAgentInput
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workflows.api.compat.errors import OpenAIError
from workflows.api.compat.routes import round_text
from workflows.api.compat.schemas import MessageIn
from workflows.api.errors import Problem, field_errors, invalid
from workflows.api.schemas import BIGINT
from workflows.engine.records.state import MODES

MAX_ID = 200
"""The longest thread or run id kept."""
ROLES = {"developer", "system", "user", "assistant"}
"""The roles whose text a round may quote (tool results, activity and reasoning are not)."""


class Options(BaseModel):
    """PowerOn's options of a run (`forwardedProps.poweron`)."""

    model_config = ConfigDict(extra="forbid")

    mode: str = "react"
    maxSteps: int | None = Field(default=None, ge=1, le=50)
    documents: list[int] = Field(default_factory=list, max_length=100)
    after: int | None = Field(default=None, ge=0, le=BIGINT)


def read_input(body: bytes) -> RunAgentInput:
    """The request's RunAgentInput (400 when it is not JSON, 422 naming what is wrong)."""
    try:
        data = json.loads(body or b"null")
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise Problem("bad-request", "The body must be a RunAgentInput as JSON.") from None
    try:
        run = RunAgentInput.model_validate(data)
    except ValidationError as error:
        errors = field_errors([dict(e) for e in error.errors()])
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        raise Problem("invalid-input", detail, errors=errors) from None
    for name, value in (("threadId", run.thread_id), ("runId", run.run_id)):
        if not 0 < len(value) <= MAX_ID:
            raise invalid(name, f"between 1 and {MAX_ID} characters.")
    return run


def read_options(run: RunAgentInput) -> Options:
    """PowerOn's options, checked (422 naming the field)."""
    props = run.forwarded_props if isinstance(run.forwarded_props, dict) else {}
    try:
        options = Options.model_validate(props.get("poweron") or {})
    except ValidationError as error:
        first = field_errors([dict(e) for e in error.errors()])[0]
        raise invalid(f"forwardedProps.poweron.{first['field']}", first["message"]) from None
    if options.mode not in MODES:
        raise invalid("forwardedProps.poweron.mode", f"one of {', '.join(MODES)}")
    return options


def text_of(message: Any, index: int) -> str:
    """A message's text: its content, or its text parts joined (422 for anything else)."""
    content = getattr(message, "content", None)
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for part in content:
        if getattr(part, "type", None) != "text":
            raise invalid(
                f"messages.{index}.content",
                "PowerOn reads text; upload files through /api/v1/workflows/<id>/uploads and "
                "name them in forwardedProps.poweron.documents.",
            )
        texts.append(part.text)
    return "\n\n".join(texts)


def round_message(run: RunAgentInput, *, new_workflow: bool) -> tuple[str, str]:
    """The round's message (the last, the user's; for a new workflow after the earlier ones
    quoted) and the user's own text (a new workflow's title)."""
    quoted = [
        (index, message)
        for index, message in enumerate(run.messages)
        if message.role in ROLES
    ]  # fmt: skip
    if not quoted or quoted[-1][1].role != "user":
        raise invalid("messages", "the last message must be the user's: the round answers it.")
    messages = [
        MessageIn.model_validate({"role": m.role, "content": text_of(m, index)})
        for index, m in quoted
    ]
    try:
        text = round_text(messages, with_earlier=new_workflow)
    except OpenAIError as refused:
        raise invalid(f"messages.{quoted[-1][0]}.content", refused.message) from None
    own = messages[-1].content
    assert isinstance(own, str)
    return text, own.strip().splitlines()[0][:80] if own.strip() else ""
