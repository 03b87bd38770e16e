"""Edit and resend, regenerate, and ratings that stay: over the real socket, with the real
openai client against the localhost fake model server."""

import pytest
from channels.db import database_sync_to_async

from tests.live import connect, is_final, receive, receive_until
from tests.support.chat_app import workflow_with_upload
from tests.support.replies import extract_step, stop, taskplan
from workflows.events.contract import Envelope
from workflows.events.rendering import render_event
from workflows.models import ChatDocument, ChatMessage, WorkflowEvent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("durable")]

FIRST_ANSWER = "Revenue grew 12 percent, the notes say."
SECOND_ANSWER = "Round two's answer: spending went down."


def one_round(upload_label: str, answer: str) -> list:
    return [taskplan("Summarise"), *extract_step(f"docList:{upload_label}"), stop(), answer]


def prompt_text(body) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


async def run(communicator, command) -> list:
    await communicator.send_json_to(command)
    return await receive_until(communicator, is_final)


@database_sync_to_async
def uploads_of(workflow, round):
    return list(
        ChatDocument.objects.filter(
            workflow=workflow, round=round, source=ChatDocument.Source.UPLOADED
        ).values_list("label", "name", "sha256")
    )


async def test_edit_and_regenerate_rerun_a_round_with_its_uploads_and_only_earlier_history(
    alice, model
):
    """An edited message runs as a new round with copies of the round's uploads, seeing
    neither that round nor what came after; regenerating a rerun goes back as far; a plain
    message sees everything. Every earlier round stays."""
    workflow, upload = await workflow_with_upload(alice)
    communicator = await connect(alice, workflow.pk)
    model.add(*one_round("round1_upload", FIRST_ANSWER))
    await run(
        communicator, {"action": "send", "text": "Summarise the notes", "documents": [upload.pk]}
    )
    asked = len(model.requests)

    model.add(*one_round("round2_upload", SECOND_ANSWER))
    events = await run(
        communicator, {"action": "send", "text": "Only the costs, please", "reruns": "1"}
    )
    opened = events[0]
    assert (opened["type"], opened["round"]) == ("message", 2)
    assert (opened["payload"]["reruns"], opened["payload"]["edited"]) == (1, True)
    assert [d["name"] for d in opened["payload"]["documents"]] == ["notes.md"]
    assert events[-1]["payload"]["status"] == "completed"
    (original,) = await uploads_of(workflow, 1)
    assert await uploads_of(workflow, 2) == [("round2_upload", "notes.md", original[2])]
    round2 = [prompt_text(body) for body in model.requests[asked:]]
    assert not any(FIRST_ANSWER in text or "round1_task1" in text for text in round2)
    asked = len(model.requests)

    model.add(*one_round("round3_upload", "Costs fell, again."))
    events = await run(communicator, {"action": "regenerate", "round": 2})
    opened = events[0]
    assert opened["payload"]["content"] == "Only the costs, please"
    assert (opened["payload"]["reruns"], opened["payload"]["edited"]) == (2, False)
    round3 = [prompt_text(body) for body in model.requests[asked:]]
    assert not any(FIRST_ANSWER in text or SECOND_ANSWER in text for text in round3)
    asked = len(model.requests)

    model.add(*one_round("round1_upload", "All of it."))
    await run(communicator, {"action": "send", "text": "And now everything"})
    round4 = "\n".join(prompt_text(body) for body in model.requests[asked:])
    assert FIRST_ANSWER in round4 and SECOND_ANSWER in round4  # a plain round sees all
    users = ChatMessage.objects.filter(workflow=workflow, role=ChatMessage.Role.USER)
    reruns = [m.reruns async for m in users.order_by("round")]
    assert reruns == [None, 1, 2, None]
    model.assert_complete()
    await communicator.disconnect()


async def test_a_rerun_of_a_round_that_does_not_exist_is_refused(alice, model):
    workflow, _ = await workflow_with_upload(alice)
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to({"action": "regenerate", "round": 1})
    refusal = await receive(communicator)
    assert refusal["type"] == "notice" and refusal["payload"]["level"] == "error"
    assert refusal["payload"]["text"] == "Round 1 is not a round of this workflow."
    await communicator.send_json_to({"action": "send", "text": "Edited", "reruns": 3})
    refusal = await receive(communicator)
    assert refusal["payload"]["text"] == "Round 3 is not an earlier round of this workflow."
    await workflow.arefresh_from_db()
    assert (workflow.status, workflow.current_round) == ("idle", 0)  # nothing was claimed
    assert not await ChatMessage.objects.filter(workflow=workflow).aexists()
    await communicator.disconnect()


async def test_a_rating_is_an_event_that_a_reload_shows_again(alice, model):
    """The latest rating and its comment come back with the replay, marked on the answer."""
    workflow, upload = await workflow_with_upload(alice)
    communicator = await connect(alice, workflow.pk)
    model.add(*one_round("round1_upload", FIRST_ANSWER))
    events = await run(
        communicator, {"action": "send", "text": "Summarise", "documents": [upload.pk]}
    )
    (answer,) = [
        e for e in events if e["type"] == "message" and e["payload"]["role"] == "assistant"
    ]
    message = answer["payload"]["messageId"]
    await communicator.send_json_to({"action": "feedback", "message": message, "rating": 1})
    await communicator.send_json_to(
        {"action": "feedback", "message": message, "rating": -1, "comment": "Too short"}
    )
    seen = await receive_until(communicator, lambda e: e.get("payload", {}).get("rating") == -1)
    assert [e["type"] for e in seen].count("feedback") == 2
    await communicator.disconnect()

    replay = await connect(alice, workflow.pk, query="format=json&after=0")
    replayed = await receive_until(replay, lambda e: e.get("payload", {}).get("rating") == -1)
    ratings = [e["payload"]["rating"] for e in replayed if e["type"] == "feedback"]
    assert ratings == [1, -1]
    await replay.disconnect()

    row = await WorkflowEvent.objects.filter(workflow=workflow, type="feedback").alast()
    html = await database_sync_to_async(render_event)(Envelope.from_row(row))
    assert f'id="feedback-{message}" hx-swap-oob="true"' in html
    assert (
        'value="-1" class="outline secondary chosen" title="Not helpful" aria-pressed="true"'
        in html
    )
    assert 'value="Too short"' in html
