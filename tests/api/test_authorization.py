"""Between two users, every operation of the API: another user's workflow, document or round
is a 404 exactly like one that does not exist (never a 403), and nothing of it changes. The
operations come from the OpenAPI document, so a new endpoint cannot be left out."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from tests.api.conftest import bearer, make_token
from tests.factories import workflow_with_history
from workflows import services
from workflows.models import ChatDocument, ChatMessage, WorkflowEvent

pytestmark = pytest.mark.django_db

BODIES = {
    "create_workflow": {"title": "mine"},
    "rename_workflow": {"title": "taken over"},
    "send_message": {"text": "do it", "documents": []},
    "edit_round": {"text": "do it again"},
    "steer_run": {"text": "look elsewhere"},
    "answer_step_limit": {"steps": 2},
    "answer_approval": {"approved": True},
}
"""A valid body for every operation that takes a JSON one (uploads are multipart)."""


def operations(client: Client) -> list[tuple[str, str, dict]]:
    document = client.get("/api/v1/openapi.json").json()
    return [
        (method.upper(), route, operation)
        for route, methods in document["paths"].items()
        for method, operation in methods.items()
    ]


def call(client: Client, method: str, route: str, operation: dict, ids: dict[str, int]):
    path = route.format(**ids)
    body = operation.get("requestBody", {}).get("content", {})
    if "multipart/form-data" in body:
        upload = SimpleUploadedFile("x.md", b"# mine now", "text/markdown")
        return client.generic(method, path, **multipart({"files": [upload]}))
    if "application/json" in body:
        assert operation["operationId"] in BODIES, (
            f"add a valid body for {operation['operationId']}"
        )
        return client.generic(
            method,
            path,
            data=json.dumps(BODIES[operation["operationId"]]),
            content_type="application/json",
        )
    return client.generic(method, path)


def multipart(data: dict) -> dict:
    return {"data": encode_multipart(BOUNDARY, data), "content_type": MULTIPART_CONTENT}


def snapshot(workflow) -> tuple:
    workflow.refresh_from_db()
    return (
        workflow.title,
        workflow.status,
        workflow.current_round,
        ChatMessage.objects.filter(workflow=workflow).count(),
        ChatDocument.objects.filter(workflow=workflow).count(),
        WorkflowEvent.objects.filter(workflow=workflow).count(),
    )


def as_bob(bob, credential: str) -> Client:
    """bob's program with a token of every scope, or his signed-in browser (its session)."""
    if credential == "token":
        return Client(headers=bearer(make_token(bob)))
    browser = Client()
    browser.force_login(bob)
    return browser


@pytest.mark.parametrize("credential", ["token", "session"])
def test_every_operation_on_another_users_objects_is_a_plain_404(alice, bob, credential):
    """bob, with a token of every scope or with his session, gets for each of alice's
    objects the 404 he gets for an object that does not exist (same problem, nothing
    named), and alice's workflow, messages, documents and events stay as they were."""
    workflow = workflow_with_history(alice)
    upload = services.document_upload(workflow=workflow, name="plan.md", data=b"# plan")
    document = workflow.documents.exclude(pk=upload.pk).first()
    before = snapshot(workflow)
    bob_api = as_bob(bob, credential)
    with_ids = [op for op in operations(bob_api) if "{workflow_id}" in op[1]]
    assert len(with_ids) >= 15
    for method, route, operation in with_ids:
        for document_id in (document.pk, upload.pk):
            theirs = call(
                bob_api, method, route, operation,
                {"workflow_id": workflow.pk, "document_id": document_id, "round": 1},
            )  # fmt: skip
            nothing = call(
                bob_api, method, route, operation,
                {"workflow_id": 10**9, "document_id": 10**9, "round": 1},
            )  # fmt: skip
            where = f"{method} {route}"
            assert theirs.status_code == 404, (where, theirs.content)
            assert theirs["Content-Type"] == "application/problem+json", where
            mine, none = theirs.json(), nothing.json()
            assert {**mine, "instance": ""} == {**none, "instance": ""}, where
    assert snapshot(workflow) == before
    assert ChatDocument.objects.filter(pk=upload.pk, label="pending_upload").exists()


def test_lists_and_reads_without_an_id_show_only_the_callers_own(alice, bob):
    """The operations without an id in their path (the workflow list, its search, creating
    one, who am I) never show or touch another user's."""
    workflow_with_history(alice, title="Alice's secret research")
    bob_api = Client(headers=bearer(make_token(bob)))
    without_ids = [op for op in operations(bob_api) if "{" not in op[1]]
    assert {op["operationId"] for _, _, op in without_ids} == {
        "me",
        "list_workflows",
        "create_workflow",
    }
    for method, route, operation in without_ids:
        response = call(bob_api, method, route, operation, {})
        assert response.status_code in (200, 201), (route, response.content)
        assert "Alice" not in response.content.decode() and "alice" not in response.content.decode()
    found = bob_api.get("/api/v1/workflows", {"q": "secret research"}).json()
    assert found["count"] == 0
    assert [w["title"] for w in bob_api.get("/api/v1/workflows").json()["items"]] == ["mine"]


def test_another_users_document_under_ones_own_workflow_is_a_plain_404(alice, bob):
    """bob names alice's documents (sent, and waiting to be sent) under his own workflow:
    every operation on a document answers as for one that does not exist, and her upload
    still waits for her next message."""
    workflow = workflow_with_history(alice)
    upload = services.document_upload(workflow=workflow, name="plan.md", data=b"# plan")
    document = workflow.documents.exclude(pk=upload.pk).first()
    bob_api = Client(headers=bearer(make_token(bob)))
    own = services.workflow_create(owner=bob, title="bob's")
    with_documents = [op for op in operations(bob_api) if "{document_id}" in op[1]]
    assert {op["operationId"] for _, _, op in with_documents} == {
        "discard_upload",
        "get_document",
        "document_content",
    }
    for method, route, operation in with_documents:
        nothing = call(
            bob_api, method, route, operation, {"workflow_id": own.pk, "document_id": 10**9}
        )
        for document_id in (document.pk, upload.pk):
            ids = {"workflow_id": own.pk, "document_id": document_id}
            theirs = call(bob_api, method, route, operation, ids)
            where = f"{method} {route} {document_id}"
            assert theirs.status_code == 404, (where, theirs.content)
            assert {**theirs.json(), "instance": ""} == {**nothing.json(), "instance": ""}, where
    listed = bob_api.get(f"/api/v1/workflows/{own.pk}/documents").json()
    assert listed == {"documents": []}
    assert ChatDocument.objects.filter(pk=upload.pk, label="pending_upload").exists()
