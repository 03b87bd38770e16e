"""One round read as a chat answer: its answer's text as it is written, the tokens it spent,
and how it ended, from the round's events (a `Feed`), never from its steps.

An answer streams in pieces (`delta` events) and ends as a whole `message`; a piece can
start the answer over (a new attempt, after an interruption or when the agent wrote it
again), which a chat client, whose text only grows, cannot take back. So the text a client
has is kept here: what extends it is sent, and an answer written again differently is sent
whole after a line saying so. The stored message is the answer: a stream's text ends with
it, and a round that did not complete says so (the page's status line).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workflows.engine.records.events import (
    ApprovalEvent,
    AskEvent,
    DeltaEvent,
    MessageEvent,
    UsageEvent,
)
from workflows.events.contract import RunEvent
from workflows.live.follow import Frame

REWRITTEN = "\n\n---\n\n*The answer was written again:*\n\n"


def answer_key(round: int) -> str:
    """The key of a round's answer message and its deltas (the engine's `answer_key`)."""
    return f"round{round}_answer"


def status_line(status: str, reason: str) -> str:
    """How the page says a round ended, as Markdown."""
    return f"**{status.capitalize()}** — {reason}" if reason else f"**{status.capitalize()}**"


@dataclass
class AnswerText:
    """The answer's text as a client that only appends has it."""

    key: str
    attempt: str | None = None
    draft: str = ""
    """The current attempt's text so far."""
    before: str = ""
    """What the client has before the current text (an earlier draft and the line after it)."""
    shown: str = ""
    """Of the current text, what the client has."""

    def show(self, text: str) -> str:
        """What to send so that the client's text ends with `text`."""
        if text.startswith(self.shown):
            piece, self.shown = text[len(self.shown) :], text
            return piece
        if self.shown.startswith(text):  # written again, not past what the client has yet
            return ""
        self.before += self.shown + REWRITTEN
        self.shown = text
        return REWRITTEN + text

    def delta(self, event: DeltaEvent) -> str:
        """A piece of the answer: what it adds for the client."""
        if event.attempt != self.attempt:
            self.attempt, self.draft = event.attempt, ""
        if event.offset > len(self.draft):
            return ""  # a frame that never came: a stored piece or the message brings it
        self.draft = self.draft[: event.offset] + event.text
        return self.show(self.draft)

    @property
    def text(self) -> str:
        return self.before + self.shown


@dataclass
class RoundReading:
    """A round's events as they come: what each adds to the answer, its usage, its end."""

    round: int
    page: str
    answer: AnswerText = field(init=False)
    message: str | None = None
    """The stored answer, once it came."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    status: str = ""
    reason: str = ""

    def __post_init__(self) -> None:
        self.answer = AnswerText(answer_key(self.round))

    @property
    def ended(self) -> bool:
        return bool(self.status)

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    def take(self, frame: Frame) -> str:
        """One event of the workflow: the content it adds to a stream ("" for most)."""
        if frame.type not in {"delta", "message", "usage", "run", "ask", "approval"}:
            return ""  # the steps are not the answer
        event = frame.envelope.event
        if event.round != self.round:
            return ""
        match event:
            case DeltaEvent(key=key) if key == self.answer.key:
                return self.answer.delta(event)
            case MessageEvent(role="assistant", key=key) if key == self.answer.key:
                self.message = event.content
                return self.answer.show(event.content)
            case UsageEvent():
                self.prompt_tokens += event.promptTokens
                self.completion_tokens += event.completionTokens
                self.cached_tokens += event.cachedTokens
            case AskEvent(status="waiting"):
                return (
                    f"\n\n> Waiting for your answer on PowerOn's page: {event.question} "
                    f"{self.page}\n\n"
                )
            case ApprovalEvent(status="waiting"):
                return (
                    f"\n\n> Waiting for your approval of {event.method} on PowerOn's page: "
                    f"{self.page}\n\n"
                )
            case RunEvent() if event.final:
                self.status, self.reason = event.status, event.reason
        return ""

    def content(self) -> str:
        """The whole answer: the stored message (or what was written of it), after the
        status line when the round did not complete."""
        text = self.message if self.message is not None else self.answer.text
        if self.completed:
            return text
        line = status_line(self.status, self.reason)
        return f"{line}\n\n{text}" if text else line

    def closing(self) -> str:
        """What a stream adds at the end: the status line when the round did not complete
        (its text was sent as it came, so the line comes last)."""
        if self.completed:
            return ""
        line = status_line(self.status, self.reason)
        return f"\n\n{line}" if self.answer.text else line

    @property
    def finish_reason(self) -> str:
        return "stop" if self.completed else "length"

    def usage(self) -> dict[str, object]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
        }
