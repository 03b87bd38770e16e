"""Reading AG-UI streams in tests: the events of an SSE body, the protocol's ordering rules
(as the official client's verifier states them), and the state the deltas build."""

from __future__ import annotations

import copy
from typing import Any

from ag_ui.core import Event as AguiEvent
from pydantic import TypeAdapter

from tests.api.sse import Event, Parser

EVENTS: TypeAdapter[Any] = TypeAdapter(AguiEvent)


def event_of(sse: Event) -> dict[str, Any] | None:
    """An SSE event's AG-UI event, as JSON with the `id:` it came with (`_id`), checked
    against the protocol's own models (None for a comment line)."""
    if sse.comment is not None or not sse.data:
        return None
    event = sse.json
    EVENTS.validate_python(event)
    return {**event, "_id": sse.id}


def events_of(body: str) -> list[dict[str, Any]]:
    """Every AG-UI event of an SSE body."""
    return [found for sse in Parser().feed(body) if (found := event_of(sse)) is not None]


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def verify(events: list[dict[str, Any]]) -> None:
    """The rules an AG-UI client enforces: one run, started first and ended last; a step, a
    text message, a tool call or reasoning closed only once open, and all closed before
    RUN_FINISHED."""
    assert events[0]["type"] == "RUN_STARTED", events[0]
    assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"), events[-1]
    steps: set[str] = set()
    messages: set[str] = set()
    calls: set[str] = set()
    reasoning: set[str] = set()
    for event in events[1:-1]:
        kind = event["type"]
        assert kind not in ("RUN_STARTED", "RUN_FINISHED", "RUN_ERROR"), event
        if kind == "STEP_STARTED":
            assert event["stepName"] not in steps, event
            steps.add(event["stepName"])
        elif kind == "STEP_FINISHED":
            steps.remove(event["stepName"])
        elif kind == "TEXT_MESSAGE_START":
            assert event["messageId"] not in messages, event
            messages.add(event["messageId"])
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert event["messageId"] in messages, event
        elif kind == "TEXT_MESSAGE_END":
            messages.remove(event["messageId"])
        elif kind == "TOOL_CALL_START":
            calls.add(event["toolCallId"])
        elif kind in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            assert event["toolCallId"] in calls, event
            if kind == "TOOL_CALL_END":
                calls.remove(event["toolCallId"])
        elif kind == "REASONING_START":
            reasoning.add(event["messageId"])
        elif kind == "REASONING_END":
            reasoning.remove(event["messageId"])
    if events[-1]["type"] == "RUN_FINISHED":
        assert not (steps or messages or calls or reasoning), (steps, messages, calls, reasoning)


def pointer(path: str) -> list[str]:
    return [part.replace("~1", "/").replace("~0", "~") for part in path.split("/")[1:]]


def apply_patch(document: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 add, remove and replace (what PowerOn's deltas use)."""
    document = copy.deepcopy(document)
    for op in ops:
        *parents, last = pointer(op["path"])
        target = document
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            if op["op"] == "add":
                index = len(target) if last == "-" else int(last)
                target.insert(index, op["value"])
            elif op["op"] == "replace":
                target[int(last)] = op["value"]
            else:
                del target[int(last)]
        elif op["op"] == "remove":
            del target[last]
        else:
            assert op["op"] == "add" or last in target, op  # replace: it must be there
            target[last] = op["value"]
    return document


def state_of(events: list[dict[str, Any]]) -> Any:
    """The state a client holds at the end: the last snapshot, then every delta after it."""
    state: Any = None
    for event in events:
        if event["type"] == "STATE_SNAPSHOT":
            state = event["snapshot"]
        elif event["type"] == "STATE_DELTA":
            state = apply_patch(state, event["delta"])
    return state


def text_of(events: list[dict[str, Any]]) -> str:
    """The streamed text messages' content, joined."""
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
