"""Uploads and documents over the API: the page's limits and refusals as problems (nothing
stored on a refusal), metadata, and downloads with the page's headers."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from poweron.bodylimit import BodyLimitMiddleware
from tests.api.conftest import bearer, make_token
from workflows import services
from workflows.models import ChatDocument

pytestmark = pytest.mark.django_db


def upload(api, workflow, *files, **extra):
    body = encode_multipart(BOUNDARY, {"files": list(files)})
    return api.generic(
        "POST",
        f"/api/v1/workflows/{workflow.pk}/uploads",
        data=body,
        content_type=MULTIPART_CONTENT,
        **extra,
    )


def a_file(name="notes.md", data=b"# Notes\n\nRevenue grew.", mime="text/markdown"):
    return SimpleUploadedFile(name, data, mime)


def problem(response, status: int, slug: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == f"/api/v1/problems/{slug}"
    return body


@pytest.fixture
def workflow(alice):
    return services.workflow_create(owner=alice, title="Uploads")


def test_an_upload_is_stored_for_the_next_message_and_described(api, workflow):
    """201 with each file's metadata: pending, its digest, and where to download it; the
    list of documents and the document's own address say the same."""
    response = upload(
        api, workflow, a_file(), a_file("data.csv", b"a,b\n1,2\n", "application/octet-stream")
    )
    assert response.status_code == 201
    notes, data = response.json()["documents"]
    assert (notes["name"], notes["pending"], notes["source"]) == ("notes.md", True, "uploaded")
    assert notes["sha256"] == hashlib.sha256(b"# Notes\n\nRevenue grew.").hexdigest()
    assert data["mime"] == "text/csv"  # the name says more than "octet-stream", as on the page
    assert api.get(f"/api/v1/workflows/{workflow.pk}/documents").json()["documents"] == [
        notes,
        data,
    ]
    assert api.get(f"/api/v1/workflows/{workflow.pk}/documents/{notes['id']}").json() == notes


def test_a_download_is_an_attachment_with_the_pages_headers(api, workflow):
    """The bytes as stored, as an attachment under the document's name, never sniffed."""
    (notes,) = upload(api, workflow, a_file()).json()["documents"]
    response = api.get(notes["content"])
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"# Notes\n\nRevenue grew."
    assert response["Content-Disposition"] == 'attachment; filename="notes.md"'
    assert response["Content-Type"] == "text/markdown"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_an_upload_not_sent_can_be_taken_back(api, workflow):
    (notes,) = upload(api, workflow, a_file()).json()["documents"]
    path = f"/api/v1/workflows/{workflow.pk}/uploads/{notes['id']}"
    assert api.delete(path).status_code == 204
    assert not workflow.documents.exists()
    problem(api.delete(path), 404, "not-found")


def test_a_file_over_the_limit_is_413_and_nothing_is_stored(api, workflow, settings):
    """One file too large refuses the whole upload (the small one is not stored either)."""
    settings.POWERON_MAX_UPLOAD_BYTES = 10
    response = upload(api, workflow, a_file("small.md", b"# ok"), a_file("big.md", b"x" * 11))
    body = problem(response, 413, "too-large")
    assert "big.md" in body["detail"] and "small.md" not in body["detail"]
    assert not ChatDocument.objects.exists()


def test_more_files_than_a_request_may_carry_is_413(api, workflow, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    response = upload(api, workflow, a_file("a.md"), a_file("b.md"), a_file("c.md"))
    problem(response, 413, "too-large")
    assert not ChatDocument.objects.exists()


def test_a_body_that_is_not_multipart_is_415(api, workflow):
    response = api.post(
        f"/api/v1/workflows/{workflow.pk}/uploads", {"files": []}, content_type="application/json"
    )
    problem(response, 415, "unsupported-media-type")


def test_a_file_the_readers_cannot_read_is_415_with_the_pages_reason(api, workflow, alice_client):
    """An image or a program is refused as the page refuses it when it is picked, in the
    same words (one table of what the readers read); nothing is stored, the readable file
    sent with them neither."""
    from workflows.tools.documents.parse import UNREADABLE

    png = a_file("red.png", b"\x89PNG\r\n", "image/png")
    exe = a_file("setup.exe", b"MZ\x90", "application/octet-stream")
    body = problem(upload(api, workflow, a_file(), png, exe), 415, "unsupported-media-type")
    said = [UNREADABLE.format(name="red.png"), UNREADABLE.format(name="setup.exe")]
    assert body["detail"] == " ".join([*said, "Nothing was stored."])
    assert not ChatDocument.objects.exists()
    page = alice_client.post(
        f"/workflows/{workflow.pk}/documents/upload/",
        {"files": [a_file("red.png", b"x", "image/png")]},
    )
    assert said[0] in page.content.decode()


def test_an_empty_file_is_422_with_the_pages_reason(api, workflow):
    body = problem(
        upload(api, workflow, a_file("empty.txt", b"", "text/plain")), 422, "invalid-input"
    )
    assert body["errors"] == [
        {"field": "files", "message": "empty.txt is empty: there is nothing in it to read. "
         "Nothing was stored."}
    ]  # fmt: skip
    assert not ChatDocument.objects.exists()


def test_an_upload_without_a_content_length_is_411(api, workflow):
    """Django's form parser reads by the length: a chunked body is refused, as on the page."""
    response = upload(api, workflow, a_file(), CONTENT_LENGTH="")
    problem(response, 411, "length-required")
    assert not ChatDocument.objects.exists()


def test_an_upload_without_files_is_422_naming_the_field(api, workflow):
    body = encode_multipart(BOUNDARY, {"other": "x"})
    response = api.generic(
        "POST",
        f"/api/v1/workflows/{workflow.pk}/uploads",
        data=body,
        content_type=MULTIPART_CONTENT,
    )
    assert problem(response, 422, "invalid-input")["errors"][0]["field"] == "files"


def test_past_the_hourly_upload_limit_is_429_with_retry_after(api, workflow, settings):
    """POWERON_MAX_UPLOADS_PER_HOUR counts the API's uploads and the page's together."""
    settings.POWERON_MAX_UPLOADS_PER_HOUR = 2
    services.document_upload(workflow=workflow, name="from-the-page.md", data=b"# page")
    assert upload(api, workflow, a_file()).status_code == 201
    response = upload(api, workflow, a_file("third.md"))
    body = problem(response, 429, "rate-limited")
    assert 1 <= int(response["Retry-After"]) <= 3600
    assert body["retryAfter"] == int(response["Retry-After"])
    assert workflow.documents.count() == 2
    too_many = upload(api, workflow, a_file("a.md"), a_file("b.md"), a_file("c.md"))
    assert problem(too_many, 422, "invalid-input")["errors"][0]["field"] == "files"


def test_a_read_token_cannot_upload(alice, workflow):
    reader = Client(headers=bearer(make_token(alice, "read")))
    problem(upload(reader, workflow, a_file()), 403, "insufficient-scope")
    assert not ChatDocument.objects.exists()


async def test_a_whole_body_over_the_limit_is_a_problem_before_it_is_read(settings):
    """A request to the API declaring a body larger than the limit is answered 413 with
    problem details before any of it is read (the page's upload gets its HTML fragment)."""
    settings.POWERON_MAX_UPLOAD_BYTES = 1024
    sent = []
    read = 0

    async def receive():
        nonlocal read
        read += 1
        return {"type": "http.request", "body": b"x", "more_body": False}

    async def send(message):
        sent.append(message)

    async def app(scope, receive, send):
        raise AssertionError("the app was reached")

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/v1/workflows/1/uploads",
        "headers": [(b"content-length", b"%d" % 10**9)],
    }
    await BodyLimitMiddleware(app)(scope, receive, send)
    start, body = sent
    assert (start["status"], read) == (413, 0)
    assert (b"content-type", b"application/problem+json") in start["headers"]
    problem = json.loads(body["body"])
    assert problem["type"] == "/api/v1/problems/too-large"
    assert problem["instance"] == "/api/v1/workflows/1/uploads"
