"""Property-based tests of every operation, generated from the OpenAPI document (schemathesis)
against a real Daphne on its own database, with the demo model: no answer is a 5xx, every
answer conforms to the document (status, content type, schema), and every operation refuses
a call without a token (401) and one with a token of the other scope (403).

Bounded to stay quick: a few examples per operation, no shrinking, no deadline. Each case
runs on a fresh workflow of the caller holding one upload waiting, so the operations reach
their real work (a random id would only find the 404 that tests/api/test_authorization.py
checks)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

from tests.api.live_app import make_token, sign_in
from tests.support.apps import AppProcesses, app_env
from workflows.api import api
from workflows.api.compat import api as openai_api
from workflows.engine.records.state import MODES

EXAMPLES = 6
"""Generated cases per operation (and its explicit examples)."""


@pytest.fixture(scope="module")
def live_api(tmp_path_factory) -> Iterator[dict[str, str]]:
    """A Daphne with the demo model and no per-user or per-token limits (the limits' own
    refusals are tested elsewhere), and tokens of alice made on the API tokens page."""
    tmp_path = tmp_path_factory.mktemp("api")
    env = app_env(
        tmp_path,
        "",  # no model server: the demo model answers
        POWERON_LLM_API_KEY="",
        POWERON_DEMO_DELAY_MS="0",
        POWERON_MAX_RUNS_PER_USER="0",
        POWERON_MAX_ROUNDS_PER_HOUR="0",
        POWERON_MAX_UPLOADS_PER_HOUR="0",
        POWERON_API_REQUESTS_PER_MINUTE="0",
        POWERON_MAX_UPLOAD_BYTES=str(64 * 1024),
    )
    app = AppProcesses(env, tmp_path)
    try:
        base = f"http://127.0.0.1:{app.web()}"
        with httpx.Client(base_url=base, timeout=60) as browser:
            sign_in(browser)
            tokens = {
                "all": make_token(browser, ["read", "run"]),
                "read": make_token(browser, ["read"]),
                "run": make_token(browser, ["run"]),
            }
        yield {"base": base, **tokens}
    finally:
        app.stop()


STREAM = "GET /api/v1/workflows/{workflow_id}/events/stream"
"""Left out of the generated cases: it streams until the client goes, so a case would never
end (`test_the_event_stream_refuses_the_wrong_caller_and_streams` and tests/api/
test_stream.py check it directly)."""
OPERATIONS = [
    (document, f"{method.upper()} {route}")
    for document, served in (
        ("api", api.get_openapi_schema(path_prefix="/api/v1/")),
        ("openai", openai_api.get_openapi_schema(path_prefix="/v1/")),
    )
    for route, methods in served["paths"].items()
    for method in methods
    if f"{method.upper()} {route}" != STREAM
]
"""Every operation of both documents (the API's and the OpenAI-compatible one's), read at
collection (one test each)."""


@pytest.fixture(scope="module")
def api_schema(live_api):
    """The documents as the live server serves them."""
    return {
        "api": schemathesis.openapi.from_url(f"{live_api['base']}/api/v1/openapi.json"),
        "openai": schemathesis.openapi.from_url(f"{live_api['base']}/v1/openapi.json"),
    }


def fresh_workflow(live_api: dict[str, str]) -> dict[str, int]:
    """A new workflow of alice with one upload waiting: ids for a case's path."""
    headers = {"Authorization": f"Bearer {live_api['all']}"}
    with httpx.Client(base_url=live_api["base"], headers=headers, timeout=60) as client:
        workflow = client.post("/api/v1/workflows", json={"title": "generated"}).json()["id"]
        files = {"files": ("notes.md", b"# Notes\n\nRevenue grew 12 percent.", "text/markdown")}
        uploaded = client.post(f"/api/v1/workflows/{workflow}/uploads", files=files).json()
    return {"workflow_id": workflow, "document_id": uploaded["documents"][0]["id"]}


@pytest.mark.parametrize(("document", "label"), OPERATIONS)
def test_every_operation_conforms_and_refuses_the_wrong_caller(
    document, label, api_schema, live_api
):
    """With a token of both scopes the answer conforms to the document and is no 5xx;
    without a token it is 401, with one of the other scope 403."""
    operation = api_schema[document].find_operation_by_label(label)
    modes = iter(MODES * EXAMPLES * 2)
    (scope,) = operation.definition.raw["security"][0]["BearerToken"]
    other = "read" if scope == "run" else "run"

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def conforms(case) -> None:
        if "workflow_id" in (case.path_parameters or {}):
            ids = fresh_workflow(live_api)
            case.path_parameters.update(
                {name: value for name, value in ids.items() if name in case.path_parameters}
            )
            if isinstance(case.body, dict):  # what the body refers to exists too
                if case.body.get("documents"):
                    case.body["documents"] = [ids["document_id"]]
                if case.body.get("reruns"):
                    case.body["reruns"] = None
        excluded = []
        if case.path.endswith("/uploads") and case.method == "POST":
            # Generated files are bytes under any name; the readers refuse a type they cannot
            # read (415) or an empty file (422), which a multipart schema cannot rule out.
            excluded.append(schemathesis.checks.positive_data_acceptance)
        if document == "openai" and isinstance(case.body, dict):
            # A model that exists and a user's message last, so most cases reach a round
            # (an unknown model is a 404, another message last a 400).
            case.body["model"] = f"poweron-{next(modes)}"
            if isinstance(case.body.get("metadata"), dict):
                case.body["metadata"].pop("workflow", None)
            case.body.pop("n", None)
            messages = case.body.get("messages")
            if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
                said = messages[-1].get("content")
                if not isinstance(said, str) or not said.strip() or "\x00" in said:
                    said = "Hello"
                messages[-1].update(role="user", content=said)
            # As OpenAI's, the endpoint refuses requests its schema cannot rule out (a part
            # that is not text, an empty message), with 400 naming the field.
            excluded.append(schemathesis.checks.positive_data_acceptance)
        case.call_and_validate(
            headers={"Authorization": f"Bearer {live_api['all']}"}, excluded_checks=excluded
        )
        anonymous = case.call()
        assert anonymous.status_code == 401, anonymous.text
        wrong = case.call(headers={"Authorization": f"Bearer {live_api[other]}"})
        assert wrong.status_code == 403, wrong.text
        if document == "api":
            assert anonymous.headers["content-type"] == ["application/problem+json"]
            assert wrong.json()["type"] == "/api/v1/problems/insufficient-scope"
        else:  # OpenAI's error objects
            assert anonymous.json()["error"]["type"] == "authentication_error"
            assert wrong.json()["error"]["code"] == "insufficient_scope"

    conforms()


def test_daphne_refuses_a_too_large_upload_with_a_problem_before_the_body(live_api):
    """Under Daphne, an API upload declaring more than the limit is answered 413 with
    problem details as soon as its headers arrive (the body is never read)."""
    host, port = live_api["base"].removeprefix("http://").split(":")
    head = (
        "POST /api/v1/workflows/1/uploads?x=1 HTTP/1.1\r\n"
        f"Host: {host}\r\nAuthorization: Bearer {live_api['all']}\r\n"
        "Content-Type: multipart/form-data; boundary=x\r\n"
        f"Content-Length: {10 * 1024 * 1024}\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(head.encode())
        answer = b""
        while not answer.endswith(b"}"):
            data = connection.recv(65536)
            if not data:
                break
            answer += data
    status, _, rest = answer.partition(b"\r\n")
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert status == b"HTTP/1.1 413 Content Too Large"
    assert b"Content-Type: application/problem+json" in headers
    problem = json.loads(body)
    assert problem["type"] == "/api/v1/problems/too-large"
    assert problem["instance"] == "/api/v1/workflows/1/uploads"


def test_the_event_stream_refuses_the_wrong_caller_and_streams(live_api):
    """The stream, left out of the generated cases: 401 without a token and 403 with one of
    scope `run`, both problems; 404 for a workflow that is not there; with a `read` token an
    event stream that starts with its reconnection delay."""
    ids = fresh_workflow(live_api)
    url = f"{live_api['base']}/api/v1/workflows/{ids['workflow_id']}/events/stream"
    for headers, status in (
        ({}, 401),
        ({"Authorization": f"Bearer {live_api['run']}"}, 403),
    ):
        refused = httpx.get(url, headers=headers)
        assert refused.status_code == status
        assert refused.headers["content-type"] == "application/problem+json"
    reader = {"Authorization": f"Bearer {live_api['read']}"}
    nowhere = f"{live_api['base']}/api/v1/workflows/999999/events/stream"
    missing = httpx.get(nowhere, headers=reader)
    assert missing.status_code == 404
    with httpx.stream("GET", url, headers=reader) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"] == "text/event-stream"
        assert next(stream.iter_lines()) == "retry: 1500"
