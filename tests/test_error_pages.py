"""The app's own error pages, with DEBUG on too (`make run` sets it, and may serve others with
HOST=0.0.0.0): an address nobody serves and a page that fails show the app's pages, never
Django's debug pages with the site's URL patterns or a traceback; staff, who run the server,
still get the debug page of a failure."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from workflows import services


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize("signed_in", [True, False])
def test_an_address_nobody_serves_shows_the_apps_not_found_page(
    client, alice, settings, debug, signed_in
):
    """/nosuch/ (and /nosuch, which gains its slash) is the app's 404 page, signed in or not,
    with DEBUG on or off: never the list of the site's URL patterns."""
    settings.DEBUG = debug
    if signed_in:
        client.force_login(alice)
    for url in ["/nosuch/", "/workflows/1/nothing/", "/nosuch"]:
        response = client.get(url, follow=True)
        page = response.content.decode()
        assert response.status_code == 404, url
        assert "<h1>Not found</h1>" in page, url
        assert "URLconf" not in page and "Page not found at" not in page, url


def test_the_app_still_answers_where_it_serves(client, alice, settings):
    """The catch-all takes only what nothing else serves: the app's pages, the API's own 404
    and admin's sign-in still answer as before, and an address without its slash still gains
    it."""
    settings.DEBUG = True
    client.force_login(alice)
    assert client.get("/").status_code == 200
    assert client.get("/workflows/new").status_code == 301
    assert client.get("/api/v1/nosuch").json()["title"]
    assert client.get("/admin/").status_code == 302  # alice is not staff: admin's sign-in


def lost_download(owner):
    """The address of a document whose file the storage lost: its download fails."""
    workflow = services.workflow_create(owner=owner, title="Lost")
    document = services.document_create(workflow=workflow, name="n.md", data=b"# N", label="n")
    document.file.storage.delete(document.file.name)
    return reverse("workflows:document", args=[workflow.pk, document.pk])


@pytest.mark.parametrize("debug", [True, False])
def test_a_page_that_fails_shows_the_apps_error_page(alice, settings, debug, caplog):
    """A page that fails is the app's 500 page for a user, DEBUG on or off, and the failure is
    still logged with its traceback for the operator."""
    settings.DEBUG = debug
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    response = client.get(lost_download(alice))
    page = response.content.decode()
    assert response.status_code == 500
    assert "<h1>Something went wrong</h1>" in page
    assert "Traceback" not in page and "FileNotFoundError" not in page
    logged = [r for r in caplog.records if r.name == "django.request" and r.exc_info]
    assert logged and logged[-1].exc_info[0] is FileNotFoundError


def test_staff_see_the_debug_page_of_a_failure(django_user_model, settings):
    """With DEBUG on, staff (who run the server) get Django's debug page of the failure."""
    settings.DEBUG = True
    staff = django_user_model.objects.create_user("op", password="op-pass-123", is_staff=True)
    client = Client(raise_request_exception=False)
    client.force_login(staff)
    response = client.get(lost_download(staff))
    assert response.status_code == 500
    assert "FileNotFoundError" in response.content.decode()
