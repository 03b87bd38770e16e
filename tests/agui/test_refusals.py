"""What the AG-UI endpoint refuses before any stream, as the API's problem details, with
nothing stored: another method, a body that is not a RunAgentInput, a round it cannot
answer, options and interrupts that are not PowerOn's."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.api.conftest import bearer, make_token
from workflows.agui.models import AguiRun
from workflows.models import ChatWorkflow

pytestmark = pytest.mark.django_db

ENDPOINT = "/api/v1/agui"


@pytest.fixture
def program(alice) -> Client:
    return Client(headers=bearer(make_token(alice)))


def body(**fields) -> dict:
    return {"threadId": "t", "runId": "r",
            "messages": [{"id": "1", "role": "user", "content": "Hi"}]} | fields  # fmt: skip


def post(program: Client, data) -> tuple[int, dict]:
    raw = data if isinstance(data, str) else json.dumps(data)
    response = program.post(ENDPOINT, raw, content_type="application/json")
    assert response["Content-Type"] == "application/problem+json"
    return response.status_code, response.json()


def test_another_method_is_405_with_allow(program):
    """Only POST."""
    response = program.get(ENDPOINT)
    assert response.status_code == 405 and response["Allow"] == "POST"


@pytest.mark.parametrize(
    ("data", "status", "field"),
    [
        ("{not json", 400, None),
        ({"threadId": "t", "runId": "r"}, 422, "messages"),
        (body(threadId="x" * 201), 422, "threadId"),
        (body(messages=[{"id": "1", "role": "assistant", "content": "Hello"}]), 422, "messages"),
        (body(messages=[{"id": "1", "role": "user", "content": "  "}]), 422, "messages.0.content"),
        (body(forwardedProps={"poweron": {"mode": "fast"}}), 422, "forwardedProps.poweron.mode"),
        (body(forwardedProps={"poweron": {"maxSteps": 99}}), 422,
         "forwardedProps.poweron.maxSteps"),
        (body(resume=[{"interruptId": "elsewhere-1", "status": "resolved"}]), 422,
         "resume.0.interruptId"),
        (body(resume=[{"interruptId": "poweron-1-1", "status": "resolved"}]), 422,
         "resume.0.interruptId"),
    ],
)  # fmt: skip
def test_a_request_it_cannot_run_is_refused_with_nothing_stored(program, data, status, field):
    """400 for a body that is not JSON, 422 naming the field otherwise; no workflow, no run
    noted."""
    code, problem = post(program, data)
    assert code == status, problem
    if field:
        assert problem["errors"][0]["field"] == field
    assert not ChatWorkflow.objects.exists() and not AguiRun.objects.exists()


def test_a_malformed_or_unknown_token_is_401(alice):
    """As the API refuses them, with its challenge."""
    for header in ("Basic abc", "Bearer pon_nothing_here"):
        response = Client(headers={"Authorization": header}).post(
            ENDPOINT, json.dumps(body()), content_type="application/json"
        )
        assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
