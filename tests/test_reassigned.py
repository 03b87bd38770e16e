"""A workflow given to another user in admin is no longer its former owner's: their open
socket closes (4404) and neither receives its events nor carries out their commands (it kept
receiving the new owner's events and could steer or stop their run: ownership was checked
only when the socket opened)."""

from __future__ import annotations

import asyncio
from html.parser import HTMLParser

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.test import Client
from django.urls import reverse

from tests.live import connect, receive
from workflows import services
from workflows.engine.records.events import StatusEvent
from workflows.events import broadcast
from workflows.execution import recording
from workflows.models import ChatMessage, ChatWorkflow, WorkflowEvent

pytestmark = pytest.mark.django_db(transaction=True)


class FormFields(HTMLParser):
    """The fields a browser would post from the admin's change form, as it shows them."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, str] = {}
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        name = named.get("name")
        if tag == "input" and name and named.get("type") not in ("submit", "checkbox"):
            self.fields[name] = named.get("value") or ""
        elif tag == "input" and name and "checked" in named:
            self.fields[name] = named.get("value") or "on"
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select and "selected" in named:
            self.fields[self._select] = named.get("value") or ""
        elif tag == "textarea" and name:
            self._textarea = name
            self.fields[name] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        if tag == "textarea":
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.fields[self._textarea] += data


@sync_to_async
def reassign_in_admin(admin_user, workflow: ChatWorkflow, new_owner) -> int:
    """Give the workflow to `new_owner` through admin's change form; the response status."""
    client = Client()
    client.force_login(admin_user)
    url = reverse("admin:workflows_chatworkflow_change", args=[workflow.pk])
    parser = FormFields()
    parser.feed(client.get(url).content.decode())
    fields = {**parser.fields, "owner": str(new_owner.pk)}
    return client.post(url, fields).status_code


@database_sync_to_async
def make_workflow(owner) -> ChatWorkflow:
    return services.workflow_create(owner=owner, title="Shared")


@database_sync_to_async
def give(workflow: ChatWorkflow, new_owner) -> None:
    """The owner changed in the database alone (as if the layer lost admin's message)."""
    ChatWorkflow.objects.filter(pk=workflow.pk).update(owner=new_owner)


async def closed_with(communicator) -> int:
    """The close code the socket ends with (events before it skipped)."""
    while True:
        output = await communicator.receive_output(timeout=10)
        if output["type"] == "websocket.close":
            return output["code"]


async def test_a_workflow_given_to_another_user_in_admin_closes_the_former_owners_socket(
    alice, bob, admin_user
):
    """Admin changes the owner from alice to bob: alice's open socket closes with 4404."""
    workflow = await make_workflow(alice)
    socket = await connect(alice, workflow.pk)
    assert await reassign_in_admin(admin_user, workflow, bob) == 302
    assert await closed_with(socket) == 4404


async def test_events_stop_reaching_the_former_owner_when_the_message_was_lost(
    alice, bob, settings
):
    """The owner changed while the layer lost admin's message: the next event delivered
    finds the workflow no longer alice's (asked again each catch-up interval) and closes the
    socket instead of sending it."""
    settings.POWERON_CATCH_UP_SECONDS = 0.05
    workflow = await make_workflow(alice)
    socket = await connect(alice, workflow.pk)
    await give(workflow, bob)
    await asyncio.sleep(0.2)  # past the interval: the next delivery asks again
    event = await database_sync_to_async(recording.record)(
        workflow.pk, StatusEvent(round=1, code="info", reason="bob's secret step")
    )
    await broadcast.broadcast(event)
    output = await socket.receive_output(timeout=10)
    assert output["type"] == "websocket.close"
    assert output["code"] == 4404


async def test_a_former_owners_command_is_not_carried_out(alice, bob):
    """alice rates an answer of the workflow after it became bob's: the socket closes with
    4404 and no rating is stored."""
    workflow = await make_workflow(alice)
    answer = await database_sync_to_async(ChatMessage.objects.create)(
        workflow=workflow, role="assistant", content="42", round=1
    )
    socket = await connect(alice, workflow.pk)
    await give(workflow, bob)
    await socket.send_json_to({"action": "feedback", "message": answer.pk, "rating": 1})
    assert await closed_with(socket) == 4404
    count = WorkflowEvent.objects.filter(workflow_id=workflow.pk, type="feedback").acount
    assert await count() == 0


async def test_the_new_owners_socket_stays(alice, bob, admin_user):
    """bob's own socket on the workflow given to him is not closed by the message."""
    workflow = await make_workflow(alice)
    alices = await connect(alice, workflow.pk)
    assert await reassign_in_admin(admin_user, workflow, bob) == 302
    assert await closed_with(alices) == 4404
    bobs = await connect(bob, workflow.pk)
    await broadcast.reassigned(workflow.pk, bob.pk)
    await socket_alive(bobs)
    await bobs.disconnect()


async def socket_alive(communicator) -> None:
    """The socket still answers a command (a stop with nothing running is answered)."""
    await communicator.send_json_to({"action": "stop"})
    assert (await receive(communicator))["type"] == "notice"
