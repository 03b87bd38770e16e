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
import re
import socket
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

from tests.support.apps import PASSWORD, AppProcesses, app_env
from workflows.api import api

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
        with httpx.Client(base_url=base) as browser:
            sign_in(browser)
            tokens = {
                "all": make_token(browser, ["read", "run"]),
                "read": make_token(browser, ["read"]),
                "run": make_token(browser, ["run"]),
            }
        yield {"base": base, **tokens}
    finally:
        app.stop()


def sign_in(browser: httpx.Client) -> None:
    login = browser.get("/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)[1]
    data = {"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": csrf}
    assert browser.post("/login/", data=data).status_code == 302


def make_token(browser: httpx.Client, scopes: list[str]) -> str:
    page = browser.get("/tokens/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
    data = {
        "name": "+".join(scopes),
        "scopes": scopes,
        "expires_in": "",
        "csrfmiddlewaretoken": csrf,
    }
    made = browser.post("/tokens/", data=data)
    return re.search(r"pon_[a-z0-9]{10}_[A-Za-z0-9_-]+", made.text)[0]


OPERATIONS = [
    f"{method.upper()} {route}"
    for route, methods in api.get_openapi_schema(path_prefix="/api/v1/")["paths"].items()
    for method in methods
]
"""Every operation, read from the document at collection (one test each)."""


@pytest.fixture(scope="module")
def api_schema(live_api):
    """The document as the live server serves it."""
    return schemathesis.openapi.from_url(f"{live_api['base']}/api/v1/openapi.json")


def fresh_workflow(live_api: dict[str, str]) -> dict[str, int]:
    """A new workflow of alice with one upload waiting: ids for a case's path."""
    headers = {"Authorization": f"Bearer {live_api['all']}"}
    with httpx.Client(base_url=live_api["base"], headers=headers) as client:
        workflow = client.post("/api/v1/workflows", json={"title": "generated"}).json()["id"]
        files = {"files": ("notes.md", b"# Notes\n\nRevenue grew 12 percent.", "text/markdown")}
        uploaded = client.post(f"/api/v1/workflows/{workflow}/uploads", files=files).json()
    return {"workflow_id": workflow, "document_id": uploaded["documents"][0]["id"]}


@pytest.mark.parametrize("label", OPERATIONS)
def test_every_operation_conforms_and_refuses_the_wrong_caller(label, api_schema, live_api):
    """With a token of both scopes the answer conforms to the document and is no 5xx;
    without a token it is 401, with one of the other scope 403."""
    operation = api_schema.find_operation_by_label(label)
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
        case.call_and_validate(headers={"Authorization": f"Bearer {live_api['all']}"})
        anonymous = case.call()
        assert anonymous.status_code == 401, anonymous.text
        assert anonymous.headers["content-type"] == ["application/problem+json"]
        wrong = case.call(headers={"Authorization": f"Bearer {live_api[other]}"})
        assert wrong.status_code == 403, wrong.text
        assert wrong.json()["type"] == "/api/v1/problems/insufficient-scope"

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
