"""The engine's Controls for a live run: the user's answers and notes, over the control group."""

from __future__ import annotations

import asyncio
from typing import Any


class LiveControls:
    """The engine's Controls: the user's answers and notes, arriving over the control group."""

    def __init__(self, *, connections: dict[str, str], answer_timeout: float) -> None:
        self._connections = connections
        self._notes: list[str] = []
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._timeout = answer_timeout

    async def _wait(self, key: str, default: Any) -> Any:
        future = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            return await asyncio.wait_for(future, self._timeout)
        except TimeoutError:
            return default
        finally:
            self._pending.pop(key, None)

    async def ask_continue(self, *, task: int, steps_done: int) -> int:
        """Wait for the user's answer to "continue for N more steps?" (0 when none comes)."""
        return int(await self._wait("extend", 0))

    async def approve(self, *, action: str, parameters: dict[str, Any]) -> bool:
        """Wait for the user to approve or reject the action (rejected when none comes)."""
        return bool(await self._wait("approve", False))

    def steering(self) -> list[str]:
        """Notes the user sent since the last action selection."""
        notes, self._notes = self._notes, []
        return notes

    def resolve_connection(self, label: str) -> str | None:
        """The owner's secret for a connection label; never leaves the run."""
        return self._connections.get(label)

    def handle(self, command: dict[str, Any]) -> None:
        """Apply one control message (stop is handled by the run itself)."""
        match command.get("action"):
            case "steer":
                self._notes.append(str(command["text"]))
            case "extend":
                self._answer("extend", int(command["steps"]))
            case "approve":
                self._answer("approve", bool(command["approved"]))

    def _answer(self, key: str, value: Any) -> None:
        future = self._pending.get(key)
        if future is not None and not future.done():
            future.set_result(value)
