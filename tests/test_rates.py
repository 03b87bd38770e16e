"""Per-user rates over the last hour: uploads are refused with 429, and a message that
would start one round too many is refused on the socket, both saying when to try again."""

from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from tests.live import connect, receive
from workflows import rates, services
from workflows.models import ChatDocument, ChatMessage, ChatWorkflow


def upload(client, workflow, *names: str):
    files = [SimpleUploadedFile(name, b"data", "text/plain") for name in names]
    return client.post(reverse("workflows:upload", args=[workflow.pk]), {"files": files})


@pytest.mark.django_db
def test_uploads_past_the_hourly_limit_are_refused(alice_client, alice, settings):
    """With 3 files an hour, a second upload of two files after two is refused with 429
    and the limit and wait, and nothing more is stored."""
    settings.POWERON_MAX_UPLOADS_PER_HOUR = 3
    workflow = services.workflow_create(owner=alice)
    assert upload(alice_client, workflow, "a.txt", "b.txt").status_code == 200
    refused = upload(alice_client, workflow, "c.txt", "d.txt")
    assert refused.status_code == 429
    text = refused.content.decode()
    assert "Upload limit reached: at most 3 files an hour. Try again in 60 minutes." in text
    assert workflow.documents.count() == 2
    assert upload(alice_client, workflow, "c.txt").status_code == 200


@pytest.mark.django_db
def test_a_reruns_copies_of_earlier_uploads_are_not_uploads(alice_client, alice, settings):
    """Edit and Regenerate copy the earlier round's files into the new round: those copies
    do not use up the hourly upload limit (they counted, and refused real uploads)."""
    settings.POWERON_MAX_UPLOADS_PER_HOUR = 2
    workflow = services.workflow_create(owner=alice)
    assert upload(alice_client, workflow, "a.txt", "b.txt").status_code == 200
    first, second = workflow.documents.order_by("id")
    services.round_open(
        workflow_id=workflow.pk, owner=alice, text="Go", document_ids=[first.pk, second.pk]
    )
    ChatWorkflow.objects.filter(pk=workflow.pk).update(status=ChatWorkflow.Status.COMPLETED)
    for _ in range(3):  # three reruns of round 1, each copying its two files
        services.round_open(
            workflow_id=workflow.pk, owner=alice, text="Go", document_ids=[], reruns=1
        )
        ChatWorkflow.objects.filter(pk=workflow.pk).update(status=ChatWorkflow.Status.COMPLETED)
    assert workflow.documents.count() == 8
    assert rates.upload_refusal(user=alice, adding=0, limit=2) is None  # the two real ones
    assert rates.upload_refusal(user=alice, adding=1, limit=2) is not None


@pytest.mark.django_db
def test_uploads_older_than_an_hour_and_other_users_do_not_count(client, alice, bob, settings):
    """The window is the last hour, and each user has their own count."""
    settings.POWERON_MAX_UPLOADS_PER_HOUR = 1
    workflow = services.workflow_create(owner=alice)
    client.force_login(alice)
    assert upload(client, workflow, "a.txt").status_code == 200
    client.force_login(bob)
    assert upload(client, services.workflow_create(owner=bob), "b.txt").status_code == 200
    ChatDocument.objects.filter(workflow=workflow).update(
        created=timezone.now() - timedelta(minutes=61)
    )
    client.force_login(alice)
    assert upload(client, workflow, "c.txt").status_code == 200


@pytest.mark.django_db
def test_zero_means_no_upload_limit(alice_client, alice, settings):
    """POWERON_MAX_UPLOADS_PER_HOUR=0 turns the limit off."""
    settings.POWERON_MAX_UPLOADS_PER_HOUR = 0
    workflow = services.workflow_create(owner=alice)
    for name in "abc":
        assert upload(alice_client, workflow, f"{name}.txt").status_code == 200


def make_rounds(owner, count: int, *, minutes_ago: int = 5) -> ChatWorkflow:
    workflow = services.workflow_create(owner=owner, title="Busy")
    for number in range(1, count + 1):
        ChatMessage.objects.create(
            workflow=workflow, role=ChatMessage.Role.USER, content="go", round=number
        )
    ChatMessage.objects.filter(workflow=workflow).update(
        created=timezone.now() - timedelta(minutes=minutes_ago)
    )
    return workflow


workflow_with_rounds = database_sync_to_async(make_rounds)


@pytest.mark.django_db(transaction=True)
async def test_a_send_past_the_hourly_round_limit_is_refused_on_the_socket(alice, settings):
    """With 2 rounds an hour already started, a third send gets an error notice saying the
    limit and the wait, and no round opens."""
    settings.POWERON_MAX_ROUNDS_PER_HOUR = 2
    workflow = await workflow_with_rounds(alice, 2, minutes_ago=20)
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to({"action": "send", "text": "once more"})
    notice = await receive(communicator)
    assert notice["type"] == "notice"
    assert notice["payload"]["level"] == "error"
    assert notice["payload"]["text"] == (
        "Too many messages: at most 2 messages that start a round an hour. Try again in 40 minutes."
    )
    assert await ChatMessage.objects.filter(workflow=workflow).acount() == 2
    assert (await ChatWorkflow.objects.aget(pk=workflow.pk)).status == ChatWorkflow.Status.IDLE
    await communicator.disconnect()


@pytest.mark.django_db
def test_rounds_older_than_an_hour_do_not_count(alice, settings):
    """Messages that started rounds more than an hour ago leave room for new ones."""
    workflow = make_rounds(alice, 2, minutes_ago=61)
    _, message, _ = services.round_open(
        workflow_id=workflow.pk, owner=alice, text="again", document_ids=[], max_rounds_per_hour=2
    )
    assert message.round == workflow.current_round + 1


@pytest.mark.django_db
def test_deleting_workflows_does_not_reset_the_hourly_limits(alice, settings):
    """Rounds and uploads of a deleted workflow still count for their hour: deleting the
    workflows that used up the limit does not open it again."""
    busy = make_rounds(alice, 2, minutes_ago=20)
    services.document_upload(workflow=busy, name="a.md", data=b"# a")
    services.workflow_delete(workflow=busy)
    fresh = services.workflow_create(owner=alice, title="Fresh")

    with pytest.raises(services.WorkflowBusy, match="Try again in 40 minutes"):
        services.round_open(
            workflow_id=fresh.pk, owner=alice, text="again", document_ids=[],
            max_rounds_per_hour=2,
        )  # fmt: skip
    assert rates.upload_refusal(user=alice, adding=1, limit=1) is not None
    assert rates.upload_refusal(user=alice, adding=1, limit=2) is None
