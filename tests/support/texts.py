"""What people read of a run, and the faults no such text may have: an internal label, a code
written for programs, a reason that repeats itself. The engine's and the host's reason tests
hold every text they generate to these checks."""

from __future__ import annotations

import re
from typing import Any

from workflows.engine.records.events import (
    ApprovalEvent,
    AskEvent,
    ErrorEvent,
    MessageEvent,
    ReviewEvent,
    RoundEvent,
    StatusEvent,
    StepEvent,
    TaskEvent,
)
from workflows.events.contract import RunEvent

INTERNAL_LABEL = re.compile(r"\b[at]\d+\b")
"""The labels the model's prompts give steps and tasks ("a1 web.search", "t2")."""
CODE = re.compile(r"(?<![\w.`/:@-])[a-z]+(?:_[a-z]+)+(?![\w`/-]|\.\w)")
"""A code written for programs ("step_failed", "max_steps"); result labels hold digits and
file names an extension, so neither is one."""
STUTTER = re.compile(r"\b(\w{3,})\b[^.:;!?\n]{0,10}:\s+(?:\w+\s+)?\1\b", re.IGNORECASE)
"""A reason whose next part starts with its own last words again ("stopped: step: Step 1
failed", "step failed: Step 1 failed")."""
DOUBLED = re.compile(r"(?<!\.)\.\.(?!\.)|::|\.\s+\.|[.:][;,]|:\s*[.;]|\(\s*\)|\s[,;]")
"""Punctuation doubled where two reasons were joined ("reached..", "spent.;", "( )")."""
_CODE_SPANS = re.compile(r"`[^`\n]*`|https?://\S+")


def faults(text: str) -> list[str]:
    """What is wrong with a text people read ([] when nothing is)."""
    plain = _CODE_SPANS.sub("`…`", text)  # labels and URLs shown as code are meant as such
    found = [f"internal label {m.group()!r}" for m in INTERNAL_LABEL.finditer(plain)]
    found += [f"code {m.group()!r}" for m in CODE.finditer(plain)]
    found += [f"stutter {m.group()!r}" for m in STUTTER.finditer(plain)]
    found += [f"doubled {m.group()!r}" for m in DOUBLED.finditer(plain)]
    return found


def people_texts(event: Any) -> list[str]:
    """The texts of an event that people read: reasons, errors, questions, answers and action
    records (not what the user wrote)."""
    match event:
        case ErrorEvent():
            texts = [event.message]
        case StatusEvent() | StepEvent() | TaskEvent() | ReviewEvent() | RoundEvent():
            texts = [event.reason]
        case RunEvent():
            texts = [event.reason]
        case AskEvent():
            texts = [event.question, event.reason]
        case ApprovalEvent():
            texts = [event.reason]
        case MessageEvent() if event.role != "user":
            texts = [event.content, event.summary]
        case _:
            texts = []
    return [text for text in texts if text]


def reason_faults(events: list[Any]) -> list[tuple[str, str]]:
    """Every (text, fault) of the events' texts for people."""
    return [(text, fault) for e in events for text in people_texts(e) for fault in faults(text)]
