"""Runs through the API: a round sent by a program runs durably like the page's (the page,
the socket and admin show it), and its questions, approvals, notes and stop go through the
launcher the page uses. The model is the demo model or the localhost fake model server."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient, Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from tests.live import connect, is_final, receive_until
from tests.support.chat_app import NOTE
from tests.support.fake_openai import FakeReply
from tests.support.replies import cont, extract_step, stop, taskplan
from workflows.models import ChatMessage

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("durable")]

UPLOAD = "docList:round1_upload"
FINAL = {"completed", "failed", "stopped"}


@pytest.fixture(autouse=True)
def unlimited_requests(settings):
    """These tests poll far faster than a program would: no per-token request limit."""
    settings.POWERON_API_REQUESTS_PER_MINUTE = 0


async def new_workflow(api: AsyncClient, **fields) -> int:
    response = await api.post("/api/v1/workflows", fields, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


async def upload_note(api: AsyncClient, workflow_id: int) -> int:
    body = encode_multipart(BOUNDARY, {"files": [_file()]})
    response = await api.generic(
        "POST", f"/api/v1/workflows/{workflow_id}/uploads", body, content_type=MULTIPART_CONTENT
    )
    assert response.status_code == 201, response.content
    return response.json()["documents"][0]["id"]


def _file():
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("notes.md", NOTE, "text/markdown")


async def send(api: AsyncClient, workflow_id: int, text: str, documents=()) -> dict:
    response = await api.post(
        f"/api/v1/workflows/{workflow_id}/messages",
        {"text": text, "documents": list(documents)},
        content_type="application/json",
    )
    assert response.status_code == 202, response.content
    return response.json()


async def run_until(api: AsyncClient, workflow_id: int, statuses: set[str], timeout=60) -> dict:
    """Poll the run's state until it is one of `statuses` (the bound only fails the test)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        run = (await api.get(f"/api/v1/workflows/{workflow_id}/run")).json()
        if run["status"] in statuses:
            return run
        assert asyncio.get_running_loop().time() < deadline, f"the run stayed {run}"
        await asyncio.sleep(0.05)


async def all_events(api: AsyncClient, workflow_id: int, limit: int = 7) -> list[dict]:
    """Every stored event, page by page, as a polling program reads them."""
    events, after = [], 0
    while True:
        page = (
            await api.get(
                f"/api/v1/workflows/{workflow_id}/events", {"after": after, "limit": limit}
            )
        ).json()
        events += page["events"]
        after = page["next"]
        if not page["more"]:
            return events


async def test_a_run_sent_through_the_api_is_a_run_like_any_other(alice, async_api):
    """Upload, send, poll: the demo model's round completes; the events read page by page
    are the stored ones in order, as the page's socket replays them; the page and admin
    show the answer."""
    workflow_id = await new_workflow(async_api, title="From a program")
    document = await upload_note(async_api, workflow_id)
    started = await send(async_api, workflow_id, "Summarise my notes", [document])
    assert started["round"] == 1 and started["status"] in {"running", *FINAL}
    run = await run_until(async_api, workflow_id, FINAL)
    assert run["status"] == "completed" and run["question"] is None

    events = await all_events(async_api, workflow_id)
    assert [e["seq"] for e in events] == list(range(1, run["lastSeq"] + 1))
    assert (
        events[0]["type"] == "message" and events[0]["payload"]["content"] == "Summarise my notes"
    )
    assert is_final(events[-1])
    socket = await connect(alice, workflow_id)
    replayed = await receive_until(socket, is_final)
    await socket.disconnect()
    assert replayed == events  # the socket's format=json and the API: one rendering

    messages = (await async_api.get(f"/api/v1/workflows/{workflow_id}/messages")).json()
    answer = messages["messages"][-1]
    assert answer["role"] == "assistant" and answer["content"]
    assert messages["messages"][0]["documents"] == [document]

    page = await sync_to_async(_page_and_admin)(alice, workflow_id)
    first_line = answer["content"].splitlines()[0].lstrip("> ")  # a quote's text, as rendered
    assert first_line[:40] in page["page"]
    assert "From a program" in page["admin"] and "Summarise my notes" in page["admin"]


def _page_and_admin(alice, workflow_id: int) -> dict[str, str]:
    browser = Client()
    browser.force_login(alice)
    alice.is_staff = alice.is_superuser = True
    alice.save()
    return {
        "page": browser.get(f"/workflows/{workflow_id}/").content.decode(),
        "admin": browser.get(
            f"/admin/workflows/chatworkflow/{workflow_id}/change/"
        ).content.decode(),
    }


async def test_an_approval_waits_and_is_answered_through_the_api(async_api, model, settings):
    """The run state says `waiting` with the approval it waits for; a second message is
    refused (409, nothing stored) and a note is taken (202); approved through the API, the
    action runs and the round completes; a second answer finds nothing waiting (409)."""
    settings.POWERON_APPROVAL_METHODS = ["document.extract"]
    model.add(taskplan("Summarise"), *extract_step(UPLOAD), stop(), "The notes say revenue grew.")
    workflow_id = await new_workflow(async_api)
    await send(
        async_api, workflow_id, "Summarise the notes", [await upload_note(async_api, workflow_id)]
    )
    run = await run_until(async_api, workflow_id, {"waiting", *FINAL})
    assert run["status"] == "waiting"
    assert run["question"]["kind"] == "approve"
    asked = run["question"]["event"]
    assert (asked["type"], asked["payload"]["method"], asked["payload"]["status"]) == (
        "approval", "document.extract", "waiting",
    )  # fmt: skip

    busy = await async_api.post(
        f"/api/v1/workflows/{workflow_id}/messages",
        {"text": "again"},
        content_type="application/json",
    )
    assert busy.status_code == 409 and busy.json()["type"] == "/api/v1/problems/already-running"
    assert await ChatMessage.objects.filter(workflow_id=workflow_id, role="user").acount() == 1
    steered = await async_api.post(
        f"/api/v1/workflows/{workflow_id}/run/steer", {"text": "mind the costs"},
        content_type="application/json",
    )  # fmt: skip
    assert steered.status_code == 202

    approval = f"/api/v1/workflows/{workflow_id}/run/approval"
    answered = await async_api.post(approval, {"approved": True}, content_type="application/json")
    assert answered.status_code == 202
    assert (await run_until(async_api, workflow_id, FINAL))["status"] == "completed"
    events = await all_events(async_api, workflow_id, limit=100)
    decided = [e["payload"]["status"] for e in events if e["type"] == "approval"]
    assert decided == ["waiting", "approved"]
    again = await async_api.post(approval, {"approved": False}, content_type="application/json")
    assert again.status_code == 409
    assert again.json()["type"] == "/api/v1/problems/no-open-question"
    model.assert_complete()


async def test_the_step_limit_question_is_answered_through_the_api(async_api, model):
    """At its step limit the run waits with the question; "1 more step" goes on."""
    model.add(
        taskplan("Summarise"), *extract_step(UPLOAD), cont(), *extract_step(UPLOAD), stop(),
        "Done in two steps.",
    )  # fmt: skip
    workflow_id = await new_workflow(async_api, maxSteps=1)
    await send(
        async_api, workflow_id, "Summarise the notes", [await upload_note(async_api, workflow_id)]
    )
    run = await run_until(async_api, workflow_id, {"waiting", *FINAL})
    assert run["question"]["kind"] == "extend"
    assert run["question"]["event"]["payload"]["stepsDone"] == 1
    extend = f"/api/v1/workflows/{workflow_id}/run/extend"
    wrong = await async_api.post(extend, {"steps": 51}, content_type="application/json")
    assert wrong.status_code == 422 and wrong.json()["errors"][0]["field"] == "steps"
    answered = await async_api.post(extend, {"steps": 1}, content_type="application/json")
    assert answered.status_code == 202
    assert (await run_until(async_api, workflow_id, FINAL))["status"] == "completed"
    model.assert_complete()


async def test_stop_through_the_api_ends_the_run_as_stopped(async_api, model):
    """A stop while the model thinks: 202, then the run ends as stopped with its work kept;
    a second stop finds nothing running (409)."""
    model.add(
        taskplan("Summarise"),
        *extract_step(UPLOAD),
        FakeReply(content=json.dumps(cont()), delay=60),
    )
    workflow_id = await new_workflow(async_api)
    await send(
        async_api, workflow_id, "Summarise the notes", [await upload_note(async_api, workflow_id)]
    )
    deadline = asyncio.get_running_loop().time() + 60
    while not any(e["type"] == "observe" for e in await all_events(async_api, workflow_id, 100)):
        assert asyncio.get_running_loop().time() < deadline, "the step never ended"
        await asyncio.sleep(0.05)
    stopping = await async_api.post(f"/api/v1/workflows/{workflow_id}/run/stop")
    assert stopping.status_code == 202
    assert stopping.json()["status"] in {"stopping", "stopped"}
    assert (await run_until(async_api, workflow_id, FINAL))["status"] == "stopped"
    again = await async_api.post(f"/api/v1/workflows/{workflow_id}/run/stop")
    assert again.status_code == 409 and again.json()["type"] == "/api/v1/problems/not-running"
    roles = [
        m["role"]
        for m in (await async_api.get(f"/api/v1/workflows/{workflow_id}/messages")).json()[
            "messages"
        ]
    ]
    assert roles == ["user", "action"]


async def test_edit_and_regenerate_run_an_earlier_round_again(async_api):
    """Regenerate runs round 1's message again as round 2; edit runs it with a new text as
    round 3 (both with copies of its upload); a round that does not exist is 404 in the path
    and 422 in the body."""
    workflow_id = await new_workflow(async_api)
    await send(
        async_api, workflow_id, "Summarise my notes", [await upload_note(async_api, workflow_id)]
    )
    await run_until(async_api, workflow_id, FINAL)
    regenerated = await async_api.post(f"/api/v1/workflows/{workflow_id}/rounds/1/regenerate")
    assert regenerated.status_code == 202 and regenerated.json()["round"] == 2
    await run_until(async_api, workflow_id, FINAL)
    edited = await async_api.post(
        f"/api/v1/workflows/{workflow_id}/rounds/1/edit", {"text": "List my notes' figures"},
        content_type="application/json",
    )  # fmt: skip
    assert edited.status_code == 202 and edited.json()["round"] == 3
    await run_until(async_api, workflow_id, FINAL)
    messages = (await async_api.get(f"/api/v1/workflows/{workflow_id}/messages")).json()["messages"]
    users = [
        (m["round"], m["content"], m["reruns"], len(m["documents"]))
        for m in messages
        if m["role"] == "user"
    ]
    assert users == [
        (1, "Summarise my notes", None, 1),
        (2, "Summarise my notes", 1, 1),
        (3, "List my notes' figures", 1, 1),
    ]
    missing = await async_api.post(f"/api/v1/workflows/{workflow_id}/rounds/9/regenerate")
    assert missing.status_code == 404 and "Round 9" in missing.json()["detail"]
    reruns = await async_api.post(
        f"/api/v1/workflows/{workflow_id}/messages", {"text": "x", "reruns": 9},
        content_type="application/json",
    )  # fmt: skip
    assert reruns.status_code == 422 and reruns.json()["errors"][0]["field"] == "reruns"
