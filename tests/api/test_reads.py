"""Reading and managing workflows over the API: pages and search as the sidebar finds them,
rename and delete as the page does them, exports, events by seq, and the run's state."""

from __future__ import annotations

import json

import pytest

from tests.factories import workflow_with_history
from workflows import services
from workflows.engine.records.events import AskEvent
from workflows.execution import recording
from workflows.models import ChatWorkflow

pytestmark = pytest.mark.django_db


def test_workflows_come_in_pages_newest_first_and_search_finds_words(api, alice):
    titles = ["Quarterly café notes", "Travel plans", "Budget review"]
    for title in titles:
        services.workflow_create(owner=alice, title=title)
    first = api.get("/api/v1/workflows", {"limit": 2}).json()
    second = api.get("/api/v1/workflows", {"limit": 2, "offset": 2}).json()
    assert (first["count"], first["limit"], first["offset"]) == (3, 2, 0)
    assert [w["title"] for w in first["items"] + second["items"]] == titles[::-1]
    found = api.get("/api/v1/workflows", {"q": "CAFÉ notes"}).json()
    assert [w["title"] for w in found["items"]] == ["Quarterly café notes"]
    assert found["items"][0]["page"] == f"/workflows/{found['items'][0]['id']}/"


def test_a_workflow_is_created_with_its_mode_and_step_limit(api, alice, settings):
    made = api.post(
        "/api/v1/workflows", {"mode": "reasoning", "maxSteps": 7}, content_type="application/json"
    )
    assert made.status_code == 201
    body = made.json()
    assert (body["mode"], body["maxSteps"], body["status"], body["title"]) == (
        "reasoning", 7, "idle", f"Workflow {body['id']}",
    )  # fmt: skip
    default = api.post("/api/v1/workflows", {}, content_type="application/json").json()
    assert default["maxSteps"] == settings.POWERON_MAX_STEPS and default["mode"] == "react"


def test_rename_stores_the_title_with_its_event_and_delete_removes_it_all(api, alice):
    """A rename is the page's: spaces collapsed, a title event every viewer replays; a
    delete is gone for good (then 404)."""
    workflow = workflow_with_history(alice)
    renamed = api.patch(
        f"/api/v1/workflows/{workflow.pk}",
        {"title": "  New   name "},
        content_type="application/json",
    )
    assert renamed.json()["title"] == "New name"
    events = api.get(f"/api/v1/workflows/{workflow.pk}/events", {"after": 3}).json()["events"]
    assert [(e["type"], e["payload"]) for e in events] == [("title", {"title": "New name"})]
    assert api.delete(f"/api/v1/workflows/{workflow.pk}").status_code == 204
    assert not ChatWorkflow.objects.filter(pk=workflow.pk).exists()
    assert api.get(f"/api/v1/workflows/{workflow.pk}").status_code == 404


def test_exports_are_the_pages_own(api, alice_client, alice):
    workflow = workflow_with_history(alice)
    exported = api.get(f"/api/v1/workflows/{workflow.pk}/export/json")
    page = alice_client.get(f"/workflows/{workflow.pk}/export.json")
    assert json.loads(exported.content) == json.loads(page.content)
    assert exported["Content-Disposition"] == f'attachment; filename="workflow-{workflow.pk}.json"'
    markdown = api.get(f"/api/v1/workflows/{workflow.pk}/export/markdown")
    assert markdown["Content-Type"] == "text/markdown; charset=utf-8"
    assert markdown.content == alice_client.get(f"/workflows/{workflow.pk}/export.md").content


def test_events_come_by_seq_in_pages_and_past_the_end_counts_as_the_end(api, alice):
    workflow = workflow_with_history(alice)  # three events
    url = f"/api/v1/workflows/{workflow.pk}/events"
    page = api.get(url, {"after": 0, "limit": 2}).json()
    assert [e["seq"] for e in page["events"]] == [1, 2]
    assert (page["next"], page["more"], page["lastSeq"]) == (2, True, 3)
    rest = api.get(url, {"after": page["next"]}).json()
    assert [e["type"] for e in rest["events"]] == ["act"] and rest["more"] is False
    assert set(rest["events"][0]) == {
        "workflow", "seq", "type", "round", "task", "action", "payload", "at",
    }  # fmt: skip
    beyond = api.get(url, {"after": 99}).json()
    assert (beyond["events"], beyond["next"]) == ([], 3)


def test_the_run_state_says_queued_with_the_runs_ahead_and_waiting_with_the_question(api, alice):
    first = services.workflow_create(owner=alice)
    second = services.workflow_create(owner=alice)
    for workflow in (first, second):
        ChatWorkflow.objects.filter(pk=workflow.pk).update(status=ChatWorkflow.Status.QUEUED)
        workflow.refresh_from_db()
    assert api.get(f"/api/v1/workflows/{first.pk}/run").json()["ahead"] == 0
    run = api.get(f"/api/v1/workflows/{second.pk}/run").json()
    assert (run["status"], run["ahead"]) == ("queued", 1)

    ChatWorkflow.objects.filter(pk=first.pk).update(
        status=ChatWorkflow.Status.RUNNING, current_round=1
    )
    recording.record(
        first.pk,
        AskEvent(round=1, task=1, question="Continue?", stepsDone=5, status="waiting"),
    )
    run = api.get(f"/api/v1/workflows/{first.pk}/run").json()
    assert (run["status"], run["question"]["kind"]) == ("waiting", "extend")
    assert run["question"]["event"]["payload"]["question"] == "Continue?"
    idle = services.workflow_create(owner=alice)
    assert api.get(f"/api/v1/workflows/{idle.pk}/run").json() == {
        "workflow": idle.pk, "status": "idle", "round": 0, "reason": "", "ahead": None,
        "question": None, "lastSeq": 0,
    }  # fmt: skip


def test_me_says_who_calls_and_with_which_token(api, alice_client):
    me = api.get("/api/v1/me").json()
    assert me["username"] == "alice" and me["token"]["scopes"] == ["read", "run"]
    assert alice_client.get("/api/v1/me").json() == {"username": "alice", "token": None}
