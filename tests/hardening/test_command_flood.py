"""Floods of commands against a real Daphne (issue 31: feedback, steering notes and renames
wrote 3,000 events in 9 s): a socket's own rate, the user's minute across their sockets, and
parallel renames through HTTP, counted under the user's lock."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.sockets import connect
from workflows.live.consumer import SOCKET_COMMAND_BURST

from .attacks import Session
from .conftest import LiveApp, start_app, stop

pytestmark = pytest.mark.timeout(900)

PER_MINUTE = 5
ANSWERS = """
from workflows import services
from workflows.models import ChatMessage, ChatWorkflow
for pk in {workflows}:  # in the order given (the model's own ordering is by last update)
    workflow = ChatWorkflow.objects.get(pk=pk)
    answer = services.message_create(workflow=workflow, role="assistant", content="42", round=1)
    print(answer.pk)
"""
COUNT = """
from workflows.models import WorkflowEvent
print(WorkflowEvent.objects.filter(type="{type}").count())
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Iterator[LiveApp]:
    app = start_app(
        tmp_path_factory.mktemp("flood"),
        POWERON_DEMO_DELAY_MS="0",
        POWERON_COMMANDS_PER_MINUTE=str(PER_MINUTE),
    )
    try:
        yield app
    finally:
        stop(app.processes)


@pytest.fixture(autouse=True)
def unspent_minute(app: LiveApp) -> None:
    """Each test starts with alice's minute unspent (the app serves the whole module, and the
    limit counts every command of the user's, whichever test gave it)."""
    app.shell("from workflows.models import RateMark\nRateMark.objects.all().delete()")


def count(app: LiveApp, type_: str) -> int:
    return int(app.shell(COUNT.format(type=type_)).strip().splitlines()[-1])


async def heard(socket, *, most: int) -> list[str]:
    """What a socket receives (notices by their text, events by their type) until `most`
    frames came or none comes for a few seconds."""
    frames = []
    for _ in range(most):
        try:
            event = json.loads(await asyncio.wait_for(socket.recv(), 5))
        except TimeoutError:
            break
        frames.append(event["payload"]["text"] if event["type"] == "notice" else event["type"])
    return frames


async def test_a_socket_flooding_frames_is_cut_at_its_own_rate(app: LiveApp):
    """200 frames at once on one socket: its burst is answered, the rest dropped with one
    notice; the socket stays open."""
    cookie, workflow = app.signed_in_workflow()
    url = app.socket_url(workflow)
    async with connect(url, additional_headers={"Cookie": cookie}, ping_interval=None) as ws:
        for _ in range(200):
            await ws.send("not a command")
        frames = await heard(ws, most=300)
        await asyncio.sleep(1.5)  # the rate refills: the socket takes commands again
        await ws.send("still not a command")
        after = await heard(ws, most=2)
    understood = [f for f in frames if f.startswith("Command not understood")]
    assert len(understood) <= SOCKET_COMMAND_BURST + 2  # refilled while the flood arrived
    assert len([f for f in frames if f.startswith("Too many commands")]) == 1
    assert after and after[0].startswith("Command not understood")


async def test_a_users_sockets_together_stay_within_their_minute(app: LiveApp):
    """Four sockets in four workflows, two ratings each (each socket within its own rate):
    five stored, three refused saying when to try again."""
    session = Session(app.base)
    workflows = session.workflows(4)
    answers = [int(line) for line in app.shell(ANSWERS.format(workflows=workflows)).split() if line]
    before = count(app, "feedback")
    headers = {"Cookie": session.cookie_header}
    sockets = [
        await connect(
            app.socket_url(w), additional_headers=headers, ping_interval=None
        ).__aenter__()
        for w in workflows
    ]
    try:
        for socket, answer in zip(sockets, answers, strict=True):
            for rating in (1, -1):
                await socket.send(
                    json.dumps({"action": "feedback", "message": answer, "rating": rating})
                )
        said = [frame for socket in sockets for frame in await heard(socket, most=6)]
    finally:
        for socket in sockets:
            await socket.close()
    assert count(app, "feedback") - before == PER_MINUTE
    refused = [f for f in said if f.startswith(f"Too many changes at once: at most {PER_MINUTE}")]
    assert len(refused) == 8 - PER_MINUTE


def test_parallel_renames_count_exactly(app: LiveApp):
    """Twenty renames at once through HTTP (a thread each in the Daphne): exactly the
    minute's five are stored, counted under the user's lock."""
    session = Session(app.base)
    (workflow,) = session.workflows(1)
    before = count(app, "title")

    def rename(number: int) -> int:
        with session.client() as client:
            answer = client.post(
                f"/workflows/{workflow}/rename/",
                data={"title": f"Renamed {number}"},
                headers={"X-CSRFToken": session.cookies["csrftoken"], "HX-Request": "true"},
            )
        return answer.status_code

    with ThreadPoolExecutor(20) as pool:
        statuses = list(pool.map(rename, range(20)))
    assert set(statuses) == {200}
    assert count(app, "title") - before == PER_MINUTE
