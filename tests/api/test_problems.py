"""Refusals a program can act on: RFC 9457 problem details with a stable type for each, the
OpenAPI document that says so, and the pages that describe them under the app's CSP."""

from __future__ import annotations

import re
from html import escape

import pytest

from workflows import services
from workflows.api.errors import TYPES
from workflows.models import ChatMessage, ChatWorkflow

pytestmark = pytest.mark.django_db

MEMBERS = {"type", "title", "status", "detail", "instance"}


def problem(response, status: int, slug: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert set(body) >= MEMBERS, body
    assert (body["type"], body["status"]) == (f"/api/v1/problems/{slug}", status)
    assert body["title"] == TYPES[slug].title and body["detail"]
    return body


def test_invalid_input_names_the_field_wherever_it_was_sent(api, alice):
    """422 with `errors` naming each field: in the body (nested too), the query, the path."""
    workflow = services.workflow_create(owner=alice)
    base = f"/api/v1/workflows/{workflow.pk}"
    body = problem(
        api.post(
            f"{base}/messages", {"text": "", "documents": [0]}, content_type="application/json"
        ),
        422,
        "invalid-input",
    )
    assert {e["field"] for e in body["errors"]} == {"text", "documents.0"}
    assert "text:" in body["detail"]
    blank = api.post(f"{base}/messages", {"text": "  \n "}, content_type="application/json")
    assert "the message is empty" in problem(blank, 422, "invalid-input")["errors"][0]["message"]
    unknown = api.post(
        f"{base}/messages", {"text": "x", "txet": 1}, content_type="application/json"
    )
    assert problem(unknown, 422, "invalid-input")["errors"][0]["field"] == "txet"
    query = api.get("/api/v1/workflows", {"limit": 101})
    assert problem(query, 422, "invalid-input")["errors"][0]["field"] == "limit"
    path = api.get("/api/v1/workflows/0")
    assert problem(path, 422, "invalid-input")["errors"][0]["field"] == "workflow_id"
    nul = api.patch(base, {"title": "a\x00b"}, content_type="application/json")
    assert problem(nul, 422, "invalid-input")["errors"][0]["field"] == "title"
    assert not ChatMessage.objects.exists()


def test_the_pages_own_rules_refuse_the_same_input(api, alice):
    """A title the page's form refuses (too long once spaces collapse is fine; a mode that is
    not one) is refused here too, naming the field."""
    mode = api.post("/api/v1/workflows", {"mode": "chat"}, content_type="application/json")
    assert problem(mode, 422, "invalid-input")["errors"][0]["field"] == "mode"
    steps = api.post("/api/v1/workflows", {"maxSteps": 51}, content_type="application/json")
    assert problem(steps, 422, "invalid-input")["errors"][0]["field"] == "maxSteps"
    assert not alice.workflows.exists()


def test_a_body_that_is_not_json_is_400(api):
    response = api.post("/api/v1/workflows", "{not json", content_type="application/json")
    problem(response, 400, "bad-request")


def test_unknown_addresses_and_methods_are_problems_too(api, alice):
    problem(api.get("/api/v1/nothing/here"), 404, "not-found")
    workflow = services.workflow_create(owner=alice)
    refused = api.put(f"/api/v1/workflows/{workflow.pk}")
    problem(refused, 405, "method-not-allowed")
    assert set(refused["Allow"].split(", ")) == {"GET", "PATCH", "DELETE"}


def test_without_credentials_every_operation_is_401_with_a_bearer_challenge(client):
    document = client.get("/api/v1/openapi.json").json()
    for route, methods in document["paths"].items():
        for method in methods:
            response = client.generic(
                method.upper(), route.format(workflow_id=1, document_id=1, round=1)
            )
            problem(response, 401, "unauthenticated")
            assert response["WWW-Authenticate"].startswith('Bearer realm="PowerOn"')


def test_a_busy_workflow_and_the_round_limits_are_409_and_429(api, alice, settings):
    """A send while the workflow runs is 409; past the user's runs at once, 409 too, saying
    so; past the rounds an hour, 429 with Retry-After. Nothing is stored by any of them."""
    workflow = services.workflow_create(owner=alice)
    ChatWorkflow.objects.filter(pk=workflow.pk).update(status=ChatWorkflow.Status.RUNNING)
    send = f"/api/v1/workflows/{workflow.pk}/messages"
    problem(api.post(send, {"text": "go"}, content_type="application/json"), 409, "already-running")
    other = services.workflow_create(owner=alice)
    settings.POWERON_MAX_RUNS_PER_USER = 1
    busy = api.post(
        f"/api/v1/workflows/{other.pk}/messages", {"text": "go"}, content_type="application/json"
    )
    assert "1 run going" in problem(busy, 409, "too-many-runs")["detail"]
    settings.POWERON_MAX_RUNS_PER_USER = 0
    settings.POWERON_MAX_ROUNDS_PER_HOUR = 1
    services.message_create(workflow=workflow, role=ChatMessage.Role.USER, content="earlier")
    limited = api.post(
        f"/api/v1/workflows/{other.pk}/messages", {"text": "go"}, content_type="application/json"
    )
    body = problem(limited, 429, "rate-limited")
    assert 3500 <= int(limited["Retry-After"]) <= 3600 and body["retryAfter"] == int(
        limited["Retry-After"]
    )
    assert ChatMessage.objects.count() == 1
    assert ChatWorkflow.objects.get(pk=other.pk).status == ChatWorkflow.Status.IDLE


def test_a_document_that_is_not_an_upload_waiting_is_422(api, alice, bob):
    """A send naming a document that is not an upload waiting for this workflow (another
    workflow's, another user's, one already sent) is refused naming `documents`, and the
    workflow is not claimed."""
    workflow = services.workflow_create(owner=alice)
    others = services.workflow_create(owner=bob)
    theirs = services.document_upload(workflow=others, name="b.md", data=b"# b")
    response = api.post(
        f"/api/v1/workflows/{workflow.pk}/messages",
        {"text": "go", "documents": [theirs.pk]},
        content_type="application/json",
    )
    body = problem(response, 422, "invalid-input")
    assert body["errors"][0]["field"] == "documents" and str(theirs.pk) in body["detail"]
    workflow.refresh_from_db()
    assert (workflow.status, workflow.current_round) == (ChatWorkflow.Status.IDLE, 0)


def test_deleting_a_running_workflow_is_409_and_keeps_it(api, alice):
    workflow = services.workflow_create(owner=alice)
    ChatWorkflow.objects.filter(pk=workflow.pk).update(status=ChatWorkflow.Status.RUNNING)
    problem(api.delete(f"/api/v1/workflows/{workflow.pk}"), 409, "already-running")
    assert ChatWorkflow.objects.filter(pk=workflow.pk).exists()


def test_a_failure_inside_is_a_500_problem_that_says_nothing_of_it(api, monkeypatch, caplog):
    """An unexpected error is logged and answered as problem details, without its text."""
    from workflows import selectors

    def broken(**kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(selectors, "workflow_list", broken)
    response = api.get("/api/v1/workflows")
    body = problem(response, 500, "internal")
    assert "secret internals" not in response.content.decode()
    assert "secret internals" in caplog.text and body["instance"] == "/api/v1/workflows"


def test_the_openapi_document_says_every_operations_scope_and_problems(client):
    """OpenAPI 3.1; each operation has an id, a bearer scope, and problem+json for each
    refusal it may answer (401, 403, 429 always; 404 with a workflow; 422 with input)."""
    document = client.get("/api/v1/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    assert document["components"]["securitySchemes"]["BearerToken"] == {
        "type": "http",
        "scheme": "bearer",
    }
    for route, methods in document["paths"].items():
        for method, operation in methods.items():
            where = f"{method} {route}"
            (scope,) = operation["security"][0]["BearerToken"]
            assert scope == ("read" if method == "get" else "run"), where
            statuses = set(operation["responses"])
            assert {"401", "403", "429"} <= statuses, where
            assert "{workflow_id}" not in route or "404" in statuses, where
            for status, answer in operation["responses"].items():
                if status >= "400":
                    assert list(answer["content"]) == ["application/problem+json"], where


def test_every_problem_type_is_a_page_and_the_docs_list_them(client):
    """A problem's `type` is the address of a page that says what it means; the reference
    lists every operation of the OpenAPI document and every problem type."""
    docs = client.get("/api/v1/docs")
    assert docs.status_code == 200
    page = docs.content.decode()
    for kind in TYPES.values():
        described = client.get(kind.uri)
        assert (
            described.status_code == 200
            and escape(kind.description[:30]) in described.content.decode()
        )
        assert f'id="problem-{kind.slug}"' in page
    document = client.get("/api/v1/openapi.json").json()
    for methods in document["paths"].values():
        for operation in methods.values():
            assert f'id="{operation["operationId"]}"' in page
    problem(client.get("/api/v1/problems/no-such-thing"), 404, "not-found")
    assert client.get("/api/v1/").url == "/api/v1/docs"


def test_the_docs_hold_under_the_csp(client):
    """Server-rendered, from the app's own origin: no inline script or style, nothing loaded
    from elsewhere (the app's Content-Security-Policy would block it)."""
    response = client.get("/api/v1/docs")
    page = response.content.decode()
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert not re.search(r"<script(?![^>]*\bsrc=)", page), "an inline script"
    assert not re.search(r"<style|\sstyle=|\son[a-z]+=", page), "an inline style or handler"
    for url in re.findall(r'(?:src|href)="([^"]+)"', page):
        assert url.startswith(("/", "#")), url
