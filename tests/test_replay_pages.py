"""A socket's replay comes a page at a time: at most POWERON_REPLAY_PAGE stored events, then
a notice with the seq to ask after, and the next page only when the client asks for it
(twenty sockets replaying 9,000 events each pushed everyone's sign-in to seconds)."""

import pytest
from channels.db import database_sync_to_async

from tests.live import connect, receive, store_events
from workflows import services
from workflows.events import broadcast
from workflows.live.consumer import SOCKET_COMMAND_BURST

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = 10


@pytest.fixture(autouse=True)
def pages(settings):
    settings.POWERON_REPLAY_PAGE = PAGE


@database_sync_to_async
def make_workflow(owner):
    return services.workflow_create(owner=owner, title="Long")


async def page_of(communicator) -> tuple[list[int], int | None]:
    """The seqs of one page and the `more` that ends it (None: the page reached the end and
    nothing else came)."""
    seqs: list[int] = []
    while True:
        if await communicator.receive_nothing(timeout=0.5):
            return seqs, None
        event = await receive(communicator)
        if event["type"] == "notice":
            return seqs, event["payload"]["more"]
        seqs.append(event["seq"])


async def test_a_long_replay_comes_a_page_at_a_time_as_the_client_asks(alice):
    """25 stored events, pages of 10: 1-10 and more=10, nothing until the client asks, then
    11-20 and more=20, then 21-25 with no notice; the next live event follows at once."""
    workflow = await make_workflow(alice)
    await store_events(workflow, 25)
    communicator = await connect(alice, workflow.pk)
    assert await page_of(communicator) == (list(range(1, 11)), 10)
    assert await communicator.receive_nothing(timeout=0.5)  # waits for the client
    await communicator.send_json_to({"action": "resume", "after": 10})
    assert await page_of(communicator) == (list(range(11, 21)), 20)
    await communicator.send_json_to({"action": "resume", "after": 20})
    assert await page_of(communicator) == (list(range(21, 26)), None)
    (live,) = await store_events(workflow, 1)
    await broadcast.broadcast(live)
    assert (await receive(communicator))["seq"] == 26
    await communicator.disconnect()


async def test_live_events_wait_for_their_page(alice):
    """An event stored and broadcast while the socket reads its first page is not sent out of
    turn: it comes in its page, once, in order."""
    workflow = await make_workflow(alice)
    await store_events(workflow, 15)
    communicator = await connect(alice, workflow.pk)
    assert await page_of(communicator) == (list(range(1, 11)), 10)
    (live,) = await store_events(workflow, 1)
    await broadcast.broadcast(live)
    assert await communicator.receive_nothing(timeout=0.5)
    await communicator.send_json_to({"action": "resume", "after": 10})
    assert await page_of(communicator) == (list(range(11, 17)), None)
    await communicator.disconnect()


async def test_the_next_page_is_served_past_the_sockets_rate(alice):
    """A client that spent its socket's burst still gets the next page of its replay: a page
    at a time is the pace it reads at."""
    workflow = await make_workflow(alice)
    await store_events(workflow, 15)
    communicator = await connect(alice, workflow.pk)
    assert await page_of(communicator) == (list(range(1, 11)), 10)
    for _ in range(SOCKET_COMMAND_BURST + 5):
        await communicator.send_to(text_data="not a command")
    await communicator.send_json_to({"action": "resume", "after": 10})
    seqs = []
    while len(seqs) < 5:
        event = await receive(communicator)
        if event["type"] != "notice":
            seqs.append(event["seq"])
    assert seqs == list(range(11, 16))
    await communicator.disconnect()


async def test_a_resume_far_behind_is_a_page_too(alice):
    """A resume from far back (once a second) replays one page and says there is more."""
    workflow = await make_workflow(alice)
    await store_events(workflow, 8)
    communicator = await connect(alice, workflow.pk)
    assert await page_of(communicator) == (list(range(1, 9)), None)
    await store_events(workflow, 30)  # not broadcast: as if the layer lost them
    await communicator.send_json_to({"action": "resume", "after": 3})
    assert await page_of(communicator) == (list(range(4, 14)), 13)
    await communicator.disconnect()


async def test_the_page_asks_for_the_next_page_by_the_notices_data(alice):
    """In HTML the notice that ends a page is data for the page's script (its `more`), not a
    toast for the reader."""
    workflow = await make_workflow(alice)
    await store_events(workflow, 12)
    communicator = await connect(alice, workflow.pk, "after=0")
    frames = [await communicator.receive_from(timeout=5) for _ in range(PAGE + 1)]
    assert 'data-more="10"' in frames[-1]
    assert "toast" not in frames[-1]
    await communicator.disconnect()
