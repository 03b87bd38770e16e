"""The WebSocket consumer: who may connect, replay by seq, live events, commands."""

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from tests.live import connect, receive, store_events
from workflows import services
from workflows.engine.records.events import DeltaEvent
from workflows.events import broadcast
from workflows.events.contract import Envelope, RunEvent
from workflows.execution import recording
from workflows.models import ChatMessage

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def make_workflow(owner):
    return services.workflow_create(owner=owner, title="Live")


async def test_anonymous_is_closed_with_4401(alice):
    """Without a session the socket is closed with code 4401."""
    workflow = await make_workflow(alice)
    communicator = await connect(None, workflow.pk)
    assert (await communicator.receive_output(timeout=2))["code"] == 4401


async def test_other_users_are_closed_with_4404(alice, bob):
    """Someone else's workflow looks like no workflow at all: code 4404."""
    workflow = await make_workflow(alice)
    communicator = await connect(bob, workflow.pk)
    assert (await communicator.receive_output(timeout=2))["code"] == 4404


async def test_bad_after_is_closed_with_4400(alice):
    """A replay position that is not a number is refused."""
    workflow = await make_workflow(alice)
    communicator = await connect(alice, workflow.pk, "format=json&after=abc")
    assert (await communicator.receive_output(timeout=2))["code"] == 4400


async def test_replay_from_k_then_live_without_gap_or_duplicate(alice):
    """After seq 4 of 10 the client gets 5..10 in order, then live ones, each exactly once."""
    workflow = await make_workflow(alice)
    await store_events(workflow, 10)
    communicator = await connect(alice, workflow.pk, "format=json&after=4")
    replayed = [(await receive(communicator))["seq"] for _ in range(6)]
    assert replayed == [5, 6, 7, 8, 9, 10]

    (eleven,) = await store_events(workflow, 1)
    await broadcast.broadcast(eleven)
    assert (await receive(communicator))["seq"] == 11

    await broadcast.broadcast(eleven.model_copy(update={"seq": 7}))  # a duplicate is dropped
    twelve, thirteen = await store_events(workflow, 2)
    await broadcast.broadcast(thirteen)  # 12 was never broadcast: filled from the DB
    assert [(await receive(communicator))["seq"] for _ in range(2)] == [12, 13]
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


async def test_events_sent_together_arrive_in_order_each_once(alice):
    """Events of a run sent in one layer message reach the viewer one by one, in seq order:
    one it has is dropped, one the message skipped is filled from the database."""
    workflow = await make_workflow(alice)
    first, second = await store_events(workflow, 2)
    communicator = await connect(alice, workflow.pk)
    assert [(await receive(communicator))["seq"] for _ in range(2)] == [1, 2]
    three, four, five = await store_events(workflow, 3)
    piece = DeltaEvent(round=1, key="answer", text="Hello", offset=0, attempt="a1")
    frame = Envelope(workflow=workflow.pk, seq=None, event=piece)  # a live frame: no seq
    await broadcast.broadcast_many([second, three, frame, five])  # 2 is had, 4 is not sent
    received = [await receive(communicator) for _ in range(4)]
    assert [event["seq"] for event in received] == [3, None, 4, 5]
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


async def test_live_events_go_on_while_a_catch_up_waits_for_the_database(
    alice, settings, monkeypatch
):
    """A viewer that heard nothing for a while asks the database what it missed; while that
    read waits (a busy process), live events still reach it, and what they brought is not
    sent again when the read comes back."""
    from workflows.live import follow

    settings.POWERON_CATCH_UP_SECONDS = 0.2
    workflow = await make_workflow(alice)
    await store_events(workflow, 1)
    communicator = await connect(alice, workflow.pk)
    assert (await receive(communicator))["seq"] == 1
    reading, answer = asyncio.Event(), asyncio.Event()
    read = follow.stored_events

    async def slow_read(*args):  # the real read, once the test lets it answer
        reading.set()
        await answer.wait()
        return await read(*args)

    monkeypatch.setattr(follow, "stored_events", slow_read)
    (two,) = await store_events(workflow, 1)  # stored; the viewer hears nothing of it
    await asyncio.wait_for(reading.wait(), 10)  # the catch-up reads the database
    try:
        await broadcast.broadcast(two)  # then it arrives after all
        assert (await receive(communicator))["seq"] == 2
    finally:
        answer.set()
    assert await communicator.receive_nothing(timeout=1.0)  # nothing twice
    await communicator.disconnect()


async def test_event_json_shape(alice):
    """Each event carries workflow, seq, type, round, task, action, payload and time."""
    workflow = await make_workflow(alice)
    await store_events(workflow, 1)
    communicator = await connect(alice, workflow.pk)
    event = await receive(communicator)
    assert set(event) == {"workflow", "seq", "type", "round", "task", "action", "payload", "at"}
    payload = {"code": "info", "reason": "n0"}
    assert (event["workflow"], event["seq"], event["payload"]) == (workflow.pk, 1, payload)
    await communicator.disconnect()


async def test_html_format_sends_fragments_with_seq(alice):
    """The default format is an HTML fragment that carries its seq for de-duplication."""
    workflow = await make_workflow(alice)
    await store_events(workflow, 1)
    communicator = await connect(alice, workflow.pk, "after=0")
    html = await communicator.receive_from(timeout=5)
    assert html.startswith('<div id="event-meta" hx-swap-oob="true" hidden data-seq="1"')
    await communicator.disconnect()


async def test_resume_replays_after_the_given_seq(alice):
    """A client that already has events up to 8 can ask to resume from there."""
    workflow = await make_workflow(alice)
    await store_events(workflow, 10)
    communicator = await connect(alice, workflow.pk, "format=json&after=10")
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.send_json_to({"action": "resume", "after": 8})
    assert [(await receive(communicator))["seq"] for _ in range(2)] == [9, 10]
    await communicator.disconnect()


async def test_resumes_are_bounded_and_an_after_past_the_end_counts_as_the_end(alice, settings):
    """A resume comes at most once a second and replays at most a fell-behind's worth (a
    client resuming in a loop without reading filled the server's memory); an `after` past
    the last stored event counts as the end, so the events that come next still arrive (the
    socket went silent). Without pages (`tests/test_replay_pages.py` has them)."""
    from workflows.live.consumer import FELL_BEHIND_EVENTS, RESUMING_TOO_OFTEN

    settings.POWERON_REPLAY_PAGE = 0
    workflow = await make_workflow(alice)
    await store_events(workflow, 3)
    communicator = await connect(alice, workflow.pk, "format=json&after=999")
    assert await communicator.receive_nothing(timeout=0.2)
    (four,) = await store_events(workflow, 1)
    await broadcast.broadcast(four)
    assert (await receive(communicator))["seq"] == 4  # not taken for an old one

    await communicator.send_json_to({"action": "resume", "after": 2})
    assert [(await receive(communicator))["seq"] for _ in range(2)] == [3, 4]
    await communicator.send_json_to({"action": "resume", "after": 0})
    assert (await receive(communicator))["payload"]["text"] == RESUMING_TOO_OFTEN

    await store_events(workflow, FELL_BEHIND_EVENTS + 5)
    await asyncio.sleep(1.0)
    await communicator.send_json_to({"action": "resume", "after": 0})
    output = await communicator.receive_output(timeout=5)
    while output["type"] != "websocket.close":  # the live ones broadcast meanwhile, if any
        output = await communicator.receive_output(timeout=5)
    assert output["code"] == 4013


async def test_a_command_nested_too_deep_is_answered_and_the_socket_stays(alice):
    """JSON nested a thousand deep gets a notice (it closed the socket with 1011)."""
    workflow = await make_workflow(alice)
    communicator = await connect(alice, workflow.pk)
    deep = '{"action": "stop", "x": ' + "[" * 3000 + "]" * 3000 + "}"
    await communicator.send_to(text_data=deep)
    assert (await receive(communicator))["type"] == "notice"
    await communicator.send_json_to({"action": "stop"})
    nothing = "Nothing is running in this workflow."
    assert (await receive(communicator))["payload"]["text"] == nothing
    await communicator.disconnect()


async def test_malformed_command_gets_a_clear_error(alice):
    """An unknown command is answered with an error notice naming the problem."""
    workflow = await make_workflow(alice)
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to({"action": "explode"})
    notice = await receive(communicator)
    assert notice["type"] == "notice"
    assert notice["seq"] is None
    assert "Command not understood" in notice["payload"]["text"]
    await communicator.disconnect()


async def test_steer_when_nothing_runs_is_refused(alice):
    """Steering an idle workflow says that nothing is running."""
    workflow = await make_workflow(alice)
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to({"action": "steer", "text": "focus on 2024"})
    nothing = "Nothing is running in this workflow."
    assert (await receive(communicator))["payload"]["text"] == nothing
    await communicator.send_json_to({"action": "stop"})
    assert (await receive(communicator))["payload"]["text"] == nothing
    await communicator.disconnect()


@database_sync_to_async
def answer_of(workflow):
    return services.message_create(
        workflow=workflow, role=ChatMessage.Role.ASSISTANT, content="42", round=1
    )


async def test_feedback_is_stored_on_the_answer(alice):
    """Thumbs down with a comment is kept on the answer message."""
    workflow = await make_workflow(alice)
    answer = await answer_of(workflow)
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to(
        {"action": "feedback", "message": str(answer.pk), "rating": "-1", "comment": "too short"}
    )
    rated = await receive(communicator)  # stored and sent to every viewer, then the thanks
    assert (rated["type"], rated["payload"]) == (
        "feedback",
        {"messageId": answer.pk, "rating": -1, "comment": "too short"},
    )
    assert (await receive(communicator))["payload"]["text"] == "Thanks — your feedback is saved."
    await answer.arefresh_from_db()
    assert (answer.feedback, answer.feedback_comment) == (-1, "too short")
    await communicator.disconnect()


async def test_a_final_status_the_layer_dropped_still_reaches_the_viewer(alice, settings):
    """Stored but never broadcast (a lost message): the viewer asks the database after a
    short silence and gets it, with no later event needed."""
    settings.POWERON_CATCH_UP_SECONDS = 0.2
    workflow = await make_workflow(alice)
    await store_events(workflow, 2)
    communicator = await connect(alice, workflow.pk)
    assert [(await receive(communicator))["seq"] for _ in range(2)] == [1, 2]
    await database_sync_to_async(recording.record)(
        workflow.pk, RunEvent(round=1, status="failed", reason="lost on the way")
    )  # stored, not broadcast
    final = await receive(communicator, timeout=5)
    assert (final["seq"], final["type"], final["payload"]["status"]) == (3, "run", "failed")
    assert await communicator.receive_nothing(timeout=0.5)  # nothing twice
    await communicator.disconnect()


async def test_a_viewer_far_behind_is_closed_to_reconnect_and_replay(alice):
    """Hundreds of events behind the live stream, a viewer is closed with 4013 (the page
    reconnects by itself from where it was), rather than fed everything inline."""
    workflow = await make_workflow(alice)
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to({"action": "explode"})  # answered once connected
    assert (await receive(communicator))["type"] == "notice"
    stored = await store_events(workflow, 502)  # stored, never broadcast to this viewer
    await broadcast.broadcast(stored[-1])
    closed = await communicator.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4013}


async def test_live_events_and_commands_do_not_wait_for_djangos_sync_thread(alice):
    """While Django's one thread for sync code is busy (a burst of rounds starting writes
    there), live events still reach the viewer, also while a command of its own waits for
    that thread; the command is carried out once the thread is free."""
    workflow = await make_workflow(alice)
    first, second = await store_events(workflow, 2)
    communicator = await connect(alice, workflow.pk, "format=json&after=1")
    assert (await receive(communicator))["seq"] == 2  # replayed: connected and subscribed
    release = threading.Event()
    busy = asyncio.ensure_future(sync_to_async(release.wait)())  # holds the sync thread
    try:
        await broadcast.broadcast(first.model_copy(update={"seq": 3}))  # seq 3, never stored
        assert (await receive(communicator))["seq"] == 3
        await communicator.send_json_to({"action": "steer", "text": "waits for the database"})
        await broadcast.broadcast(second.model_copy(update={"seq": 4}))
        assert (await receive(communicator))["seq"] == 4  # not held up by the command
        assert not busy.done()
    finally:
        release.set()
        await busy
    notice = await receive(communicator)
    assert notice["payload"]["text"] == "Nothing is running in this workflow."
    await communicator.disconnect()


@pytest.mark.parametrize(
    ("frame", "said"),
    [
        ({"text_data": "not json {"}, "send a JSON text frame"),
        ({"bytes_data": b"\x00\x01"}, "send a JSON text frame"),
        ({"text_data": "[1, 2]"}, "a command is a JSON object"),
        ({"text_data": '"stop"'}, "a command is a JSON object"),
        ({"text_data": '{"action": "explode"}'}, "Command not understood"),
        # Files that are not uploads waiting here are refused, not silently left out.
        (
            {"text_data": '{"action": "send", "text": "Summarise", "documents": [999999]}'},
            "Not an upload waiting for this workflow's next message: document 999999.",
        ),
        # A message of spaces and line breaks opens no round (it would spend one on nothing).
        (
            {"text_data": '{"action": "send", "text": "  \\n\\t "}'},
            "text: the message is empty; write what the agent should do",
        ),
        # An approval that is neither yes nor no is refused, not taken for a rejection.
        (
            {"text_data": '{"action": "approve", "approved": "yes please"}'},
            "approve.approved: Input should be a valid boolean",
        ),
        # An empty steering note, and an id no row can have, are refused with the reason.
        (
            {"text_data": '{"action": "steer", "text": " \\n "}'},
            "the note is empty",
        ),
        (
            {"text_data": '{"action": "send", "text": "x", "documents": [9223372036854775808]}'},
            "send.documents.0: Input should be less than or equal to",
        ),
    ],
)
async def test_a_malformed_frame_is_answered_and_the_socket_stays_open(alice, caplog, frame, said):
    """A frame that is not a JSON command object gets an error notice, logs no traceback,
    and the socket still carries commands afterwards."""
    workflow = await make_workflow(alice)
    communicator = await connect(alice, workflow.pk)
    await communicator.send_to(**frame)
    notice = await receive(communicator)
    assert notice["type"] == "notice"
    assert notice["payload"]["level"] == "error"
    assert said in notice["payload"]["text"]
    await communicator.send_json_to({"action": "stop"})
    nothing = "Nothing is running in this workflow."
    assert (await receive(communicator))["payload"]["text"] == nothing
    assert not [record for record in caplog.records if record.exc_info]
    await communicator.disconnect()


async def test_signing_out_closes_the_sessions_sockets_and_a_command_acts_for_nobody(alice):
    """A sign-out (in another tab) closes the sockets of that session at once; a socket whose
    session is gone otherwise (expired, deleted) carries out no command: closed with 4401."""
    from channels.testing import WebsocketCommunicator
    from django.conf import settings
    from django.contrib.sessions.models import Session
    from django.test import Client
    from django.urls import reverse

    from poweron.asgi import application

    workflow = await make_workflow(alice)

    async def open_signed_in() -> tuple[Client, WebsocketCommunicator]:
        client = Client()
        await sync_to_async(client.force_login)(alice)
        cookie = (
            f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        )
        headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
        communicator = WebsocketCommunicator(
            application,
            f"/ws/workflows/{workflow.pk}/?format=json",
            headers=[*headers, (b"cookie", cookie.encode())],
        )
        assert (await communicator.connect())[0]
        return client, communicator

    client, socket = await open_signed_in()
    _, other_session = await open_signed_in()  # another browser of the same user
    await sync_to_async(client.post)(reverse("logout"))
    assert (await socket.receive_output(timeout=2))["code"] == 4401
    assert await other_session.receive_nothing(timeout=0.3)  # its session still holds

    await sync_to_async(Session.objects.all().delete)()  # expired, say
    await other_session.send_json_to({"action": "stop"})
    assert (await other_session.receive_output(timeout=2))["code"] == 4401


@pytest.mark.parametrize("ended_by", ["expiry", "password change"])
async def test_a_socket_whose_session_expired_or_whose_password_changed_acts_for_nobody(
    alice, ended_by
):
    """A session past its expiry date, or one signed in before the password changed (Django
    signs such a session out on its next request), carries out no command: closed with 4401."""
    from datetime import timedelta

    from channels.testing import WebsocketCommunicator
    from django.conf import settings
    from django.contrib.sessions.models import Session
    from django.test import Client
    from django.utils import timezone

    from poweron.asgi import application

    workflow = await make_workflow(alice)
    client = Client()
    await sync_to_async(client.force_login)(alice)
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    socket = WebsocketCommunicator(
        application,
        f"/ws/workflows/{workflow.pk}/?format=json",
        headers=[
            (b"origin", b"http://127.0.0.1"),
            (b"host", b"127.0.0.1"),
            (b"cookie", f"{settings.SESSION_COOKIE_NAME}={key}".encode()),
        ],
    )
    assert (await socket.connect())[0]
    await socket.send_json_to({"action": "stop"})
    assert (await receive(socket))["payload"]["text"] == "Nothing is running in this workflow."

    if ended_by == "expiry":
        past = timezone.now() - timedelta(minutes=1)
        await Session.objects.filter(session_key=key).aupdate(expire_date=past)
    else:
        alice.set_password("a-new-password-1")
        await alice.asave(update_fields=["password"])
    await socket.send_json_to({"action": "stop"})
    assert (await socket.receive_output(timeout=2))["code"] == 4401


async def test_a_send_says_why_the_workflow_cannot_take_it_and_deleting_closes_its_tabs(alice):
    """Stopping, running (a second click of Send with its attachment) and deleted are each
    said as such; a deletion closes the workflow's other tabs (4404)."""
    from django.test import Client
    from django.urls import reverse

    from workflows.models import ChatWorkflow

    @database_sync_to_async
    def refusal(workflow, status, documents=()) -> str:
        ChatWorkflow.objects.filter(pk=workflow.pk).update(status=status)
        try:
            services.round_open(
                workflow_id=workflow.pk, owner=alice, text="Go", document_ids=list(documents)
            )
        except services.WorkflowBusy as busy:
            return str(busy)
        return ""

    workflow = await make_workflow(alice)
    upload = await database_sync_to_async(services.document_upload)(
        workflow=workflow, name="notes.md", data=b"# Notes"
    )
    assert "still stopping" in await refusal(workflow, ChatWorkflow.Status.STOPPING)
    assert "already running" in await refusal(workflow, ChatWorkflow.Status.RUNNING, [upload.pk])
    await refusal(workflow, ChatWorkflow.Status.COMPLETED)  # it opens

    tab = await connect(alice, workflow.pk)
    await database_sync_to_async(ChatWorkflow.objects.filter(pk=workflow.pk).update)(
        status=ChatWorkflow.Status.COMPLETED
    )
    client = Client()
    await sync_to_async(client.force_login)(alice)
    await sync_to_async(client.post)(reverse("workflows:delete", args=[workflow.pk]))
    output = await tab.receive_output(timeout=2)
    while output["type"] == "websocket.send":  # the round opened above, replayed
        output = await tab.receive_output(timeout=2)
    assert output == {"type": "websocket.close", "code": 4404}
    assert "was deleted" in await refusal(workflow, ChatWorkflow.Status.COMPLETED)
