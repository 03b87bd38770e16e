"""Every frame a socket sends fits the WebSocket's message limit.

Daphne refuses to send a WebSocket message over 1 MiB (`--websocket_max_message_size`): the
send fails, the page reconnects, replays the same event and fails again, for ever. An event
whose JSON or HTML would not fit is sent shortened instead: its longest texts are cut, each
with a note saying so and where the whole is (the workflow's export, a document's download).
The stored event keeps everything; only what one socket frame carries is shortened.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from workflows.events.contract import Envelope, event_from, payload_of
from workflows.events.rendering import render_event

FRAME_MOST = 1_000_000
"""Bytes one socket frame may carry: under Daphne's 1 MiB (1,048,576) with room to spare."""
CUT_NOTE = (
    "\n\n> Note from PowerOn: cut here for the live page ({size:,} characters in all); "
    "the whole is in the workflow's export (Markdown or JSON)."
)


def fits(text: str) -> bool:
    """Whether a frame's text is within FRAME_MOST bytes (UTF-8)."""
    return len(text) * 4 <= FRAME_MOST or len(text.encode("utf-8", "surrogatepass")) <= FRAME_MOST


def compact(data: dict[str, Any]) -> str:
    """An event's JSON text as a socket sends it."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def fitted(envelope: Envelope, render: Callable[[Envelope], str]) -> str:
    """The frame `render` makes of the event, its longest texts cut until it fits."""
    text = render(envelope)
    sizes: dict[tuple[Any, ...], int] = {}
    while not fits(text):
        longest = _longest(payload_of(envelope.event))
        if longest is None or len(longest[1]) < 256:
            return render(_placeholder(envelope))
        path, value = longest
        note = CUT_NOTE.format(size=sizes.setdefault(path, len(value)))
        kept = value.removesuffix(note)
        share = FRAME_MOST / len(text.encode("utf-8", "surrogatepass"))
        keep = int(len(kept) * min(share, 1.0) * 0.9)  # shorter each time: it ends
        envelope = _with(envelope, path, kept[:keep] + note)
        text = render(envelope)
    return text


def fitted_json(envelope: Envelope) -> str:
    """The event's JSON frame, within the limit."""
    return fitted(envelope, lambda each: compact(each.as_json()))


def fitted_html(envelope: Envelope) -> str:
    """The event's HTML frame, within the limit."""
    return fitted(envelope, render_event)


def _longest(value: Any, path: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...], str] | None:
    """The path and text of the longest string in a payload."""
    if isinstance(value, str):
        return path, value
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    best = None
    for key, item in items:
        found = _longest(item, (*path, key))
        if found is not None and (best is None or len(found[1]) > len(best[1])):
            best = found
    return best


def _with(envelope: Envelope, path: tuple[Any, ...], text: str) -> Envelope:
    """The envelope with the string at `path` of its payload replaced by `text`."""
    payload = json.loads(json.dumps(payload_of(envelope.event)))
    holder = payload
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = text
    event = envelope.event
    typed = event_from(event.type, payload, round=event.round, task=event.task, action=event.action)
    return envelope.model_copy(update={"event": typed})


def _placeholder(envelope: Envelope) -> Envelope:
    """A notice in place of an event that no cutting makes fit (very many short texts)."""
    from workflows.events.contract import NoticeEvent

    event = envelope.event
    notice = NoticeEvent(
        round=event.round,
        level="info",
        text=f"A {event.type} event too large for the live page was left out; "
        "the workflow's export has it.",
    )
    return envelope.model_copy(update={"event": notice})
