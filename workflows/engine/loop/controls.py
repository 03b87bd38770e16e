"""How the user steers a running round: more steps, approvals, notes, connection secrets."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class Controls(Protocol):
    """Implemented by the host; the engine emits an event before awaiting any answer.

    `timeout` is what is left of the round's time budget (None: no limit); an answer that
    does not come in time is None, which the engine treats as "no" and says so.
    """

    async def ask_continue(
        self, *, task: int, steps_done: int, timeout: float | None
    ) -> int | None:
        """At max steps: how many more steps the user grants (0 stops the task)."""
        ...

    async def approve(
        self,
        *,
        action: str,
        parameters: dict[str, Any],
        task: int,
        step: int,
        timeout: float | None,
    ) -> bool | None:
        """Whether an action the policy marks for approval may run (`step`: its action
        number in the task, so each question has its own answer)."""
        ...

    async def steering(self) -> list[str]:
        """Drain the notes the user sent since the last call."""
        ...

    def resolve_connection(self, label: str) -> str | None:
        """The secret behind a connection label; never put into an event or a prompt."""
        ...


class AutoControls:
    """Controls for runs nobody watches: fixed answers, scripted notes and secrets."""

    def __init__(
        self,
        *,
        extra_steps: Iterable[int] = (),
        approve: bool = True,
        notes: Iterable[str] = (),
        secrets: dict[str, str] | None = None,
    ) -> None:
        self.extra_steps = list(extra_steps)
        self.approval = approve
        self.notes = list(notes)
        self.secrets = dict(secrets or {})
        self.asked: list[tuple[int, int]] = []
        self.approvals: list[tuple[str, dict[str, Any]]] = []

    async def ask_continue(self, *, task: int, steps_done: int, timeout: float | None) -> int:
        """The next scripted grant, 0 when none is left."""
        self.asked.append((task, steps_done))
        return self.extra_steps.pop(0) if self.extra_steps else 0

    async def approve(
        self,
        *,
        action: str,
        parameters: dict[str, Any],
        task: int,
        step: int,
        timeout: float | None,
    ) -> bool:
        """The fixed approval answer."""
        self.approvals.append((action, parameters))
        return self.approval

    async def steering(self) -> list[str]:
        """Every scripted note, once."""
        notes, self.notes = self.notes, []
        return notes

    def resolve_connection(self, label: str) -> str | None:
        """The scripted secret for the label."""
        return self.secrets.get(label)
