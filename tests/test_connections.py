"""Users manage their own connections; secrets are write-only and private to their owner."""

import json

import pytest
from django.urls import reverse

from workflows import services
from workflows.models import Connection

pytestmark = pytest.mark.django_db


def test_add_a_connection_and_never_see_the_secret_again(alice_client, alice):
    """The secret is stored, and the page lists only label and kind."""
    response = alice_client.post(
        reverse("workflows:connections"),
        {"label": "my-tavily", "kind": "tavily", "secret": "tvly-SECRET"},
    )
    assert response.status_code == 302
    connection = Connection.objects.get(owner=alice)
    assert (connection.label, connection.kind, connection.secret) == (
        "my-tavily",
        "tavily",
        "tvly-SECRET",
    )
    page = alice_client.get(reverse("workflows:connections")).content.decode()
    assert "my-tavily" in page
    assert "tvly-SECRET" not in page


def test_duplicate_label_is_refused_with_a_message(alice_client, alice):
    services.connection_create(owner=alice, label="my-tavily", kind="tavily", secret="a")
    response = alice_client.post(
        reverse("workflows:connections"),
        {"label": "my-tavily", "kind": "tavily", "secret": "b"},
    )
    assert response.status_code == 400
    assert "already have a connection with this label" in response.content.decode()
    assert Connection.objects.get(owner=alice).secret == "a"


def test_connections_are_private_to_their_owner(client, alice, bob):
    """Bob neither sees nor removes Alice's connection."""
    connection = services.connection_create(owner=alice, label="mine", kind="tavily", secret="a")
    client.force_login(bob)
    assert "mine" not in client.get(reverse("workflows:connections")).content.decode()
    url = reverse("workflows:connection-delete", args=[connection.pk])
    assert client.post(url).status_code == 404
    assert Connection.objects.filter(pk=connection.pk).exists()


def test_owner_removes_a_connection(alice_client, alice):
    connection = services.connection_create(owner=alice, label="mine", kind="tavily", secret="a")
    url = reverse("workflows:connection-delete", args=[connection.pk])
    assert alice_client.post(url).status_code == 302
    assert not Connection.objects.exists()


def test_a_user_adds_their_own_mcp_server_with_an_optional_token(alice_client, alice):
    response = alice_client.post(
        reverse("workflows:connections"),
        {
            "label": "my-wiki",
            "kind": "mcp",
            "url": "https://mcp.example.org/mcp",
            "secret": "wiki-token-123",
        },
    )
    assert response.status_code == 302
    connection = Connection.objects.get(owner=alice)
    assert (connection.kind, connection.url) == ("mcp", "https://mcp.example.org/mcp")
    page = alice_client.get(reverse("workflows:connections")).content.decode()
    assert "https://mcp.example.org/mcp" in page and "wiki-token-123" not in page
    tokenless = {"label": "open-wiki", "kind": "mcp", "url": "https://mcp.example.org/open"}
    assert alice_client.post(reverse("workflows:connections"), tokenless).status_code == 302


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"label": "wiki", "kind": "mcp"}, "url", "An MCP server needs its URL."),
        (
            {"label": "wiki", "kind": "mcp", "url": "http://192.0.2.10/mcp"},
            "url",
            "192.0.2.10 is an address reserved for documentation",
        ),
        (
            {"label": "wiki", "kind": "mcp", "url": "http://localhost:8000/mcp"},
            "url",
            "this machine",
        ),
        (
            {"label": "web", "kind": "mcp", "url": "https://mcp.example.org/mcp"},
            "label",
            "'web' is the method of built-in actions",
        ),
        (
            {"label": "w" * 40, "kind": "mcp", "url": "https://mcp.example.org/mcp"},
            "label",
            "1-31 lowercase letters",
        ),
        (
            {"label": "files", "kind": "mcp", "url": "ftp://mcp.example.org/mcp"},
            "url",
            "An MCP server's URL starts with https://",
        ),
        (
            {"label": "wiki", "kind": "tavily", "url": "https://mcp.example.org/", "secret": "x"},
            "url",
            "Only an MCP server has a URL.",
        ),
        ({"label": "search", "kind": "tavily"}, "secret", "needs its secret"),
    ],
)
def test_a_connection_that_cannot_work_is_refused_with_the_reason(
    alice_client, alice, fields, field, message
):
    """Checked before anything is stored; a server on a private or documentation address is
    refused without resolving or contacting it."""
    response = alice_client.post(reverse("workflows:connections"), fields)
    assert response.status_code == 400
    errors = response.context["connection_form"].errors[field]
    assert any(message in error for error in errors), errors
    assert not Connection.objects.filter(owner=alice).exists()


@pytest.mark.parametrize("url", ["http://0x7f000001/mcp", "http://2130706433/mcp"])
def test_a_url_that_is_not_one_is_said_once_on_its_field(alice_client, alice, url):
    """A URL Django cannot read gets its one error, not also "needs its URL"; the label,
    which is fine, gets none."""
    fields = {"label": "wiki", "kind": "mcp", "url": url}
    form = alice_client.post(reverse("workflows:connections"), fields).context["connection_form"]
    assert form.errors == {"url": ["Enter a valid URL."]}


def test_a_label_that_would_hide_or_be_hidden_by_another_server_is_refused(
    alice_client, alice, settings
):
    """A label naming a server of the site (its tools would win), or naming the same tools
    as another of the user's servers (my-wiki and my_wiki), is refused with the reason."""
    settings.POWERON_MCP_SERVERS = json.dumps({"calc": {"url": "https://mcp.example.org/calc"}})
    page = reverse("workflows:connections")
    url = "https://mcp.example.org/mcp"
    form = alice_client.post(page, {"label": "calc", "kind": "mcp", "url": url}).context[
        "connection_form"
    ]
    assert "calc is the name of an MCP server this site provides" in form.errors["label"][0]
    assert (
        alice_client.post(page, {"label": "my-wiki", "kind": "mcp", "url": url}).status_code == 302
    )
    form = alice_client.post(page, {"label": "my_wiki", "kind": "mcp", "url": url}).context[
        "connection_form"
    ]
    assert form.errors["label"] == [
        "Your server my-wiki already names its tools my_wiki.<tool>; choose another label."
    ]
    assert list(Connection.objects.filter(owner=alice).values_list("label", flat=True)) == [
        "my-wiki"
    ]


def test_a_connection_is_edited_without_seeing_its_secret(alice_client, alice, bob, client):
    """Edit changes a server's URL, and its token when a new one is given (an empty one
    keeps it); the label and the kind stay; the secret never appears; another user's
    connection is not found."""
    connection = services.connection_create(
        owner=alice, label="my-wiki", kind="mcp", secret="old-token-123",
        url="https://mcp.example.org/mcp",
    )  # fmt: skip
    url = reverse("workflows:connection-edit", args=[connection.pk])
    page = alice_client.get(url).content.decode()
    assert "https://mcp.example.org/mcp" in page and "old-token-123" not in page

    moved = {"url": "https://mcp.example.org/v2", "secret": "", "label": "renamed"}
    assert alice_client.post(url, moved).status_code == 302
    connection.refresh_from_db()
    assert (connection.label, connection.url, connection.secret) == (
        "my-wiki", "https://mcp.example.org/v2", "old-token-123",
    )  # fmt: skip
    assert (
        alice_client.post(url, {"url": connection.url, "secret": "new-token-456"}).status_code
        == 302
    )
    connection.refresh_from_db()
    assert connection.secret == "new-token-456"

    refused = alice_client.post(url, {"url": "http://192.0.2.10/mcp"})
    assert refused.status_code == 400
    assert "reserved for documentation" in refused.content.decode()
    connection.refresh_from_db()
    assert connection.url == "https://mcp.example.org/v2"

    client.force_login(bob)
    assert client.get(url).status_code == 404
    assert client.post(url, {"url": "https://mcp.example.org/x"}).status_code == 404


def test_a_providers_key_is_replaced_and_kept_when_left_empty(alice_client, alice):
    connection = services.connection_create(owner=alice, label="search", kind="tavily", secret="k1")
    url = reverse("workflows:connection-edit", args=[connection.pk])
    assert alice_client.post(url, {"secret": ""}).status_code == 302
    connection.refresh_from_db()
    assert connection.secret == "k1"
    assert alice_client.post(url, {"secret": "k2"}).status_code == 302
    connection.refresh_from_db()
    assert connection.secret == "k2"


def test_an_allowed_origin_lets_in_that_port_of_a_private_host_only(alice_client, alice, settings):
    """With POWERON_FETCH_ALLOW_HOSTS=127.0.0.1:8731 a user may add the server on that port,
    not one on another port of the same host."""
    settings.POWERON_FETCH_ALLOW_HOSTS = ["127.0.0.1:8731"]
    page = reverse("workflows:connections")
    ok = {"label": "intranet", "kind": "mcp", "url": "http://127.0.0.1:8731/mcp"}
    assert alice_client.post(page, ok).status_code == 302
    other = {"label": "database", "kind": "mcp", "url": "http://127.0.0.1:5432/mcp"}
    refused = alice_client.post(page, other)
    assert refused.status_code == 400 and "only public servers" in refused.content.decode()


def test_a_kept_token_never_follows_the_server_to_another_address(alice_client, alice):
    """Moving a server to another origin needs its token again: the stored one goes only
    where it was given (someone holding the session could otherwise send it to a server of
    theirs). Another path on the same origin keeps it."""
    connection = services.connection_create(
        owner=alice, label="wiki", kind="mcp", secret="WIKI-TOKEN-42",
        url="https://mcp.example.org/mcp",
    )  # fmt: skip
    url = reverse("workflows:connection-edit", args=[connection.pk])
    moved = alice_client.post(url, {"url": "https://mcp.example.net/mcp", "secret": ""})
    assert moved.status_code == 400
    assert "needs its token again" in moved.content.decode()
    connection.refresh_from_db()
    assert connection.url == "https://mcp.example.org/mcp"
    same_origin = {"url": "https://mcp.example.org/v2", "secret": ""}
    assert alice_client.post(url, same_origin).status_code == 302
    given = {"url": "https://mcp.example.net/mcp", "secret": "NEW-TOKEN"}
    assert alice_client.post(url, given).status_code == 302
    connection.refresh_from_db()
    assert (connection.url, connection.secret) == ("https://mcp.example.net/mcp", "NEW-TOKEN")


def test_the_connections_page_reads_every_connection_in_one_query(alice_client, alice):
    """The page's queries do not grow with the number of connections (each row used to be
    read again for its secret's state)."""
    from django.db import connection as db
    from django.test.utils import CaptureQueriesContext

    def queries() -> int:
        with CaptureQueriesContext(db) as captured:
            assert alice_client.get(reverse("workflows:connections")).status_code == 200
        return len(captured.captured_queries)

    services.connection_create(owner=alice, label="c0", kind="tavily", secret="tvly-x")
    one = queries()
    for n in range(1, 10):
        services.connection_create(owner=alice, label=f"c{n}", kind="tavily", secret="tvly-x")
    assert queries() == one
