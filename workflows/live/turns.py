"""Turns at replaying: how many sockets of one process are sent a page of stored events at
once.

Sending stored events renders each on the event loop, which every request of the process
shares: twenty sockets replaying thousands of events each kept it busy long enough that a
sign-in waited half a minute. A socket is replayed a page at a time (`Follower.next_page`),
and a page waits for its turn here; the others wait without using the processor, so the
process's other work (a sign-in, live events) runs between the pages' events.
"""

from __future__ import annotations

import asyncio
import weakref

AT_ONCE = 1
"""Pages sent at once in one process."""

_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def replay_turn() -> asyncio.Semaphore:
    """The running loop's turns (`async with replay_turn(): …` sends one page)."""
    loop = asyncio.get_running_loop()
    turns = _turns.get(loop)
    if turns is None:
        turns = _turns[loop] = asyncio.Semaphore(AT_ONCE)
    return turns
