"""What a real Daphne sends over the live socket: close codes the WebSocket library accepts,
and no frame over its 1 MiB message limit (the page would reconnect for ever)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from websockets.exceptions import ConnectionClosed

from tests.support.sockets import connect

from .conftest import LiveApp, start_app, stop

pytestmark = pytest.mark.timeout(600)

WAIT_SECONDS = 120
"""The longest wait for one frame (a busy test machine can take seconds per answer)."""
FRAMES_MOST = 700
"""More frames than the workflow has events: a socket still sending after them is a failure."""

STORE = """
from workflows.engine.records.events import MessageEvent
from workflows.events.contract import TitleEvent, payload_of
from workflows.events.log import event_append

def store(event):
    try:
        event_append(workflow_id={workflow}, event=event)
    except TypeError:  # the log's earlier signature
        event_append(
            workflow_id={workflow}, type=event.type, payload=payload_of(event), round=event.round
        )
"""
STORE_EVENTS = (
    STORE
    + """
for index in range({count}):
    store(TitleEvent(round=0, title=f"t{{index}}"))
"""
)
STORE_ANSWER = (
    STORE
    + """
content = "{text}" * {times}
store(MessageEvent(round=1, key="round1_answer", role="assistant", content=content))
store(TitleEvent(round=0, title="after the answer"))
"""
)


@pytest.fixture
def unpaged_app(tmp_path) -> Iterator[LiveApp]:
    """A Daphne that replays without pages (POWERON_REPLAY_PAGE=0): a resume far behind is
    closed there, where with pages it is sent the first page (`tests/test_replay_pages.py`)."""
    app = start_app(tmp_path, POWERON_DEMO_DELAY_MS="0", POWERON_REPLAY_PAGE="0")
    try:
        yield app
    finally:
        stop(app.processes)


async def test_a_viewer_far_behind_is_closed_with_4013_and_nothing_is_logged(
    unpaged_app: LiveApp,
):
    """A resume more than 500 events back closes the socket with 4013 (try again later, in
    the applications' range): the client gets that code, not 1011, and Daphne logs no
    traceback (the library refuses to send 1013). Each wait is bounded: a socket left open
    fails the test rather than hanging it."""
    cookie, workflow = unpaged_app.signed_in_workflow()
    unpaged_app.shell(STORE_EVENTS.format(count=600, workflow=workflow))
    url = unpaged_app.socket_url(workflow, "format=json&after=600")
    received = []
    async with connect(url, additional_headers={"Cookie": cookie}) as socket:
        await socket.send(json.dumps({"action": "resume", "after": 0}))
        with pytest.raises(ConnectionClosed) as closed:
            for _ in range(FRAMES_MOST):
                received.append(await asyncio.wait_for(socket.recv(), WAIT_SECONDS))
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4013, received[-3:]
    assert received == []  # nothing was replayed before the close
    assert "Traceback" not in unpaged_app.log()


@pytest.mark.parametrize(
    ("view", "text", "times"),
    [
        ("json", "x", 1_500_000),
        ("html", "x", 1_500_000),
        ("json", "é", 600_000),  # 2 bytes each in UTF-8
        ("html", "<", 150_000),  # escaped twice in the page's fragment: 8 bytes each
    ],
)
async def test_an_event_too_large_for_one_frame_is_sent_shortened(
    live_app: LiveApp, view, text, times
):
    """A stored answer too large for one WebSocket message reaches the page as a frame under
    1 MiB that says it was cut and where the whole is; the socket stays open and the next
    event follows (on today's code the send fails and the page reconnects in a loop)."""
    cookie, workflow = live_app.signed_in_workflow()
    live_app.shell(STORE_ANSWER.format(text=text, times=times, workflow=workflow))
    url = live_app.socket_url(workflow, f"format={view}&after=0")
    headers = {"Cookie": cookie}
    # No keepalive pings: a busy machine may take longer than their timeout to answer.
    async with connect(url, additional_headers=headers, max_size=None, ping_interval=None) as ws:
        answer, after = await ws.recv(), await ws.recv()
    assert len(answer.encode()) <= 1_000_000
    assert f"cut here for the live page ({times:,} characters in all)" in answer
    assert "after the answer" in after
    if view == "json":
        assert json.loads(answer)["payload"]["content"].startswith(text * 1000)
