"""A document's media type is `type/subtype` (with well-formed parameters) whoever gave it, and
a download never fails on one: an MCP result's type with a line break made every download of
its document answer 500 (issue 31)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.api.conftest import bearer, make_token
from workflows import services
from workflows.media_types import clean
from workflows.models import ChatDocument

pytestmark = pytest.mark.django_db

HOSTILE = [
    "image/png\r\nX-Injected: 1",
    "image/png\nSet-Cookie: a=b",
    "text/plain\x00",
    "text/plain; charset=utf-8\r\nX-Injected: 1",
    "\x7ftext/html",
    "not a type",
    "image/",
    "/png",
    "text/plain/extra",
    "x" * 200 + "/y",
]


@pytest.mark.parametrize("given", HOSTILE)
def test_a_hostile_type_is_never_stored_as_given(alice, given):
    """Stored: a valid type (the name's when the given one is not one), no control
    character."""
    workflow = services.workflow_create(owner=alice)
    document = services.document_create(
        workflow=workflow, name="chart.png", data=b"png", label="l", mime_type=given
    )
    assert document.mime_type == clean(given, name="chart.png")
    assert not any(ord(c) < 32 or ord(c) == 127 for c in document.mime_type)
    assert document.mime_type.count("/") == 1


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("text/plain; charset=utf-8", "text/plain; charset=utf-8"),
        ("Text/Markdown", "text/markdown"),
        ('text/plain; charset="utf-8"; x=\x01', 'text/plain; charset="utf-8"'),
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", None),
        ("", "image/png"),  # the name's
        ("image/png\r\n", "image/png"),
    ],
)
def test_valid_types_are_kept(given, kept):
    """Well-formed types and parameters stay; a trailing line break is not part of one."""
    assert clean(given, name="chart.png") == (kept or given)


@pytest.fixture
def broken_document(alice) -> ChatDocument:
    """A document stored with a line break in its type, as an MCP result's was before types
    were checked."""
    workflow = services.workflow_create(owner=alice)
    document = services.document_create(
        workflow=workflow, name="chart.png", data=b"\x89PNG", label="l", mime_type="image/png"
    )
    ChatDocument.objects.filter(pk=document.pk).update(mime_type="image/png\r\nX-Injected: 1")
    return document


def test_a_stored_broken_type_still_downloads_on_the_page(alice_client, broken_document):
    """The page's download answers 200 with a valid Content-Type, no injected header."""
    url = f"/workflows/{broken_document.workflow_id}/documents/{broken_document.pk}/"
    response = alice_client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert "X-Injected" not in response
    assert b"".join(response.streaming_content) == b"\x89PNG"
    response.close()


def test_a_stored_broken_type_still_downloads_through_the_api(alice, broken_document):
    """The API's download too."""
    api = Client(headers=bearer(make_token(alice)))
    url = f"/api/v1/workflows/{broken_document.workflow_id}/documents/{broken_document.pk}/content"
    response = api.get(url)
    response.close()
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
