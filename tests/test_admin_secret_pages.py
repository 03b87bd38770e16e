"""No admin page shows a connection's secret, to anyone: staff who may only view connections
get the change page (a 500 before, issue 31) with whether a secret is set, never its value;
staff who may change it get a write-only field; history and deletion pages hold it neither."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.db import connection as db_connection
from django.test import Client
from django.urls import reverse

from workflows import services
from workflows.models import Connection
from workflows.sealing import PREFIX

pytestmark = pytest.mark.django_db

SECRET = "tvly-Secret-0a1b2c3d"
MCP_TOKEN = "mcp-token-9f8e7d6c"


@pytest.fixture
def connections(alice) -> list[Connection]:
    return [
        services.connection_create(owner=alice, label="search", kind="tavily", secret=SECRET),
        services.connection_create(
            owner=alice, label="wiki", kind="mcp", secret=MCP_TOKEN, url="https://203.0.113.5/mcp"
        ),
    ]


def staff_client(django_user_model, name: str, *codenames: str, superuser: bool = False) -> Client:
    if superuser:
        user = django_user_model.objects.create_superuser(name, password="staff-pass-123")
    else:
        user = django_user_model.objects.create_user(name, password="staff-pass-123")
        user.is_staff = True
        user.save()
        user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def viewer(django_user_model) -> Client:
    """Staff who may only view connections and users."""
    return staff_client(django_user_model, "viewer", "view_connection", "view_user")


@pytest.fixture
def admin_client_(django_user_model) -> Client:
    return staff_client(django_user_model, "root", superuser=True)


def holds_no_secret(content: bytes, connection: Connection) -> bool:
    """Neither the secret nor its sealed text (as stored) is in a page."""
    with db_connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM workflows_connection WHERE id = %s", [connection.pk])
        (sealed,) = cursor.fetchone()
    assert sealed.startswith(PREFIX)
    return (
        SECRET.encode() not in content
        and MCP_TOKEN.encode() not in content
        and PREFIX.encode() not in content
        and sealed[len(PREFIX) : len(PREFIX) + 40].encode() not in content
    )


@pytest.mark.parametrize("client_name", ["viewer", "admin_client_"])
def test_the_change_page_says_a_secret_is_set_never_what_it_is(request, connections, client_name):
    """View-only staff and superusers alike: 200, the secret's state, not its value."""
    client = request.getfixturevalue(client_name)
    for connection in connections:
        url = reverse("admin:workflows_connection_change", args=[connection.pk])
        response = client.get(url)
        assert response.status_code == 200
        assert b"Set (write-only: never shown" in response.content
        assert holds_no_secret(response.content, connection)


def test_view_only_staff_get_no_secret_field(viewer, connections):
    """A view-only page has no secret field, not even a read-only one (it would show the
    value: the field is opened on load)."""
    url = reverse("admin:workflows_connection_change", args=[connections[0].pk])
    content = viewer.get(url).content
    assert b'name="secret"' not in content
    assert b"field-secret " not in content and b'field-secret"' not in content


def test_staff_who_may_change_it_get_a_write_only_field(admin_client_, connections):
    """An empty password field; saved empty it keeps the secret, given it replaces it."""
    connection = connections[0]
    url = reverse("admin:workflows_connection_change", args=[connection.pk])
    page = admin_client_.get(url)
    assert b'type="password" name="secret"' in page.content
    form = {"label": "search", "url": ""}
    assert admin_client_.post(url, form).status_code == 302
    assert Connection.objects.get(pk=connection.pk).secret == SECRET
    assert admin_client_.post(url, {**form, "secret": "tvly-New-111222"}).status_code == 302
    assert Connection.objects.get(pk=connection.pk).secret == "tvly-New-111222"


def test_history_and_deletion_pages_hold_no_secret(admin_client_, alice, connections):
    """The history of a change, and the deletion pages of a connection and of its owner."""
    connection = connections[0]
    change = reverse("admin:workflows_connection_change", args=[connection.pk])
    admin_client_.post(change, {"label": "search", "url": "", "secret": "tvly-New-333444"})
    pages = [
        reverse("admin:workflows_connection_history", args=[connection.pk]),
        reverse("admin:workflows_connection_delete", args=[connection.pk]),
        reverse("admin:auth_user_delete", args=[alice.pk]),
        reverse("admin:workflows_connection_changelist"),
    ]
    for url in pages:
        response = admin_client_.get(url)
        assert response.status_code == 200, url
        assert holds_no_secret(response.content, connection), url
        assert b"tvly-New-333444" not in response.content, url


def test_an_unreadable_secret_is_said_to_need_entering_again(admin_client_, connections):
    """A secret sealed under a key the site no longer has: said, never shown."""
    connection = connections[0]
    Connection.objects.filter(pk=connection.pk).update(secret=PREFIX + "not-a-valid-seal")
    response = admin_client_.get(reverse("admin:workflows_connection_change", args=[connection.pk]))
    assert response.status_code == 200
    assert b"no longer opens with the site" in response.content
