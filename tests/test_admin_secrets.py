"""Connection secrets are write-only in admin: no filter or ordering can test their value."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from tests.factories import workflow_with_history
from workflows import exports, services

pytestmark = pytest.mark.django_db

SECRET = "tvly-AbC123"


@pytest.fixture
def viewer(django_user_model, alice) -> Client:
    """A staff user who may only view connections and users, as in the reported attack."""
    services.connection_create(owner=alice, label="search", kind="tavily", secret=SECRET)
    staff = django_user_model.objects.create_user("viewer", password="viewer-pass-123")
    staff.is_staff = True
    staff.save()
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_connection", "view_user"])
    )
    client = Client()
    client.force_login(staff)
    return client


def answers(client: Client, url: str, lookup: str, guesses: list[str]) -> set[tuple[int, bytes]]:
    """The distinct (status, body) answers to the same lookup with different values."""
    return {
        (response.status_code, response.content)
        for response in (client.get(url, {lookup: guess}) for guess in guesses)
    }


MATCHING_AND_NOT = ["^tvly-A", "^zzz"]


@pytest.mark.parametrize(
    ("lookup", "guesses"),
    [
        ("secret__regex", MATCHING_AND_NOT),
        ("secret__startswith", ["tvly-A", "zzz"]),
        ("secret", [SECRET, "nope"]),
        ("secret__lower__startswith", ["tvly-a", "zzz"]),
        ("secret__isnull", ["0", "1"]),
    ],
)
def test_connection_list_refuses_lookups_on_the_secret(viewer, lookup, guesses):
    """Every lookup on the secret is a 400, the same whether or not the guess is right."""
    url = reverse("admin:workflows_connection_changelist")
    assert viewer.get(url).status_code == 200
    seen = answers(viewer, url, lookup, guesses)
    assert len(seen) == 1
    assert next(iter(seen))[0] == 400


def test_user_list_refuses_lookups_through_connections(viewer):
    """The user admin cannot reach the secret through `connections__secret` either."""
    url = reverse("admin:auth_user_changelist")
    assert viewer.get(url).status_code == 200
    seen = answers(viewer, url, "connections__secret__regex", MATCHING_AND_NOT)
    assert len(seen) == 1
    assert next(iter(seen))[0] == 400


def test_workflow_list_refuses_lookups_through_the_owner(admin_client, alice):
    """No admin reaches the secret through a relation: `owner__connections__secret`."""
    services.connection_create(owner=alice, label="search", kind="tavily", secret=SECRET)
    workflow_with_history(alice)
    url = reverse("admin:workflows_chatworkflow_changelist")
    seen = answers(admin_client, url, "owner__connections__secret__regex", MATCHING_AND_NOT)
    assert len(seen) == 1
    assert next(iter(seen))[0] == 400


def test_connection_list_never_orders_by_the_secret(rf, admin_user):
    """Ordering by the secret is neither offered nor applied."""
    from django.contrib import admin

    from workflows.models import Connection

    model_admin = admin.site._registry[Connection]
    request = rf.get("/")
    request.user = admin_user
    model_admin.ordering = ("-secret", "label")
    try:
        assert model_admin.get_ordering(request) == ["label"]
    finally:
        model_admin.ordering = None
    model_admin.sortable_by = ("label", "secret")
    try:
        assert model_admin.get_sortable_by(request) == ["label"]
    finally:
        model_admin.sortable_by = None


def test_connection_page_never_shows_the_secret(admin_client, alice):
    """The change form leaves the secret blank (write-only) and the list never shows it."""
    connection = services.connection_create(
        owner=alice, label="search", kind="tavily", secret=SECRET
    )
    change = admin_client.get(reverse("admin:workflows_connection_change", args=[connection.pk]))
    listing = admin_client.get(reverse("admin:workflows_connection_changelist"))
    assert change.status_code == listing.status_code == 200
    assert SECRET not in change.content.decode()
    assert SECRET not in listing.content.decode()


def test_exports_never_carry_a_secret(alice):
    """A workflow's Markdown and JSON exports hold no connection secret."""
    services.connection_create(owner=alice, label="search", kind="tavily", secret=SECRET)
    workflow = workflow_with_history(alice)
    for rendered in (exports.workflow_as_markdown(workflow), exports.workflow_as_json(workflow)):
        assert SECRET not in str(rendered)


def test_a_refused_connection_form_does_not_echo_the_secret(alice_client, alice):
    """A form sent back with an error (a duplicate label) leaves the secret field empty."""
    services.connection_create(owner=alice, label="search", kind="tavily", secret=SECRET)
    response = alice_client.post(
        reverse("workflows:connections"),
        {"label": "search", "kind": "tavily", "secret": "tvly-TYPED-AGAIN"},
    )
    assert response.status_code == 400
    assert "tvly-TYPED-AGAIN" not in response.content.decode()
    assert SECRET not in response.content.decode()
