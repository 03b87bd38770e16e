"""A model call's request: its messages, and the facts they were written from.

A real model reads the messages. A model that answers from data (the demo model, a scripted
one) reads the facts instead of parsing the prompt's layout: the kind of call, the user's
words, the documents, the catalog, the task's steps, the results. `Request` is a list of
messages, so every wrapper of a model (the durable one, the metered one, the staged one)
hands it on unchanged; a plain list of messages carries no facts (`facts_of` gives empty
ones).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from workflows.engine.records.protocols import DocumentRef, Message
from workflows.engine.records.schemas import Observation

SENT_LABEL = "round{round}_upload"
"""The label of the files sent with a round's message (the host's upload label)."""


@dataclass(frozen=True)
class StepFact:
    """One step of the task, as the call's prompt lists it."""

    name: str
    """The action it ran ("" when none was chosen)."""
    success: bool


@dataclass(frozen=True)
class Facts:
    """What a call's prompt was written from, as data."""

    kind: str = ""
    request: str = ""
    """The user's words."""
    round: int = 1
    task: int = 1
    first_action: int = 1
    """The number the first action this call may plan gets (its documents' label says it)."""
    documents: tuple[DocumentRef, ...] = ()
    """The workflow's documents, oldest first."""
    catalog: tuple[str, ...] = ()
    """The actions the call may choose from."""
    steps: tuple[StepFact, ...] = ()
    """The task's steps so far, as listed (the newest ones)."""
    latest: Observation | None = None
    """The task's latest observation."""
    answering: bool = False
    """The call's answer also carries the answer to the user."""
    asks_first_action: bool = False
    """A task plan that may carry the first action of task 1 (React)."""
    asks_plan: bool = False
    """A task plan that may carry task 1's whole action list (Actionplan)."""
    objective: str = ""
    """What the action whose parameters are asked for is to do (else the task's objective)."""
    parameters: tuple[str, ...] = ()
    """The parameters asked for."""
    texts: tuple[tuple[str, str], ...] = ()
    """(name, extracted text) of the documents read for a thought."""
    results: tuple[tuple[str, str], ...] | None = None
    """(name, text) of what the steps produced, for the final answer; None for an answer
    written without any action."""

    def sent_label(self) -> str:
        """The label of the files sent with this round's message."""
        return SENT_LABEL.format(round=self.round)


class Request(list[Message]):
    """Messages for a model, with the facts they were written from."""

    def __init__(self, messages: Iterable[Message], facts: Facts) -> None:
        super().__init__(messages)
        self.facts = facts


def facts_of(messages: Sequence[Message], kind: str = "") -> Facts:
    """The facts a request carries (empty ones, of this `kind`, for plain messages)."""
    if isinstance(messages, Request):
        return messages.facts
    return Facts(kind=kind)
