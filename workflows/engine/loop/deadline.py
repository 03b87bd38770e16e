"""The round's time budget over its model calls: a call in flight when the budget runs out is
cut there, not left to run to its own timeout, so a round ends in its budget (bar the moment
closing it takes). The round then ends as a spent budget does, keeping what was done
(`round.run_round`)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from workflows.engine.loop.guards import Budget

T = TypeVar("T")


class TimeBudgetSpent(Exception):
    """The round's time budget ran out during a model call (or before one could start)."""

    def __init__(self, budget: Budget) -> None:
        self.reason = budget.time_spent()
        super().__init__(self.reason)


def left(budget: Budget) -> float | None:
    """Seconds a call may still take (None: no time limit); none left raises."""
    seconds = budget.remaining_seconds()
    if seconds is not None and seconds <= 0:
        raise TimeBudgetSpent(budget)
    return seconds


async def within(budget: Budget, call: Awaitable[T]) -> T:
    """Await `call`, cut off (cancelled) when the time budget runs out."""
    try:
        seconds = left(budget)
    except TimeBudgetSpent:
        if inspect.iscoroutine(call):
            call.close()  # never started: nothing to cancel
        raise
    if seconds is None:
        return await call
    cut = asyncio.timeout(seconds)
    try:
        async with cut:
            return await call
    except TimeoutError as error:
        if cut.expired():
            raise TimeBudgetSpent(budget) from error
        raise  # the call's own timeout, not the budget's


async def stream_within(budget: Budget, stream: AsyncIterator[T]) -> AsyncIterator[T]:
    """The items of `stream`, cut off when the time budget runs out between two of them."""
    try:
        while True:
            try:
                item = await within(budget, anext(stream))
            except StopAsyncIteration:
                return
            yield item
    finally:
        closing = getattr(stream, "aclose", None)
        if closing is not None:
            await closing()
