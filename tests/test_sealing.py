"""Connection secrets are stored sealed: the database, a dump or a backup never holds them in
clear text; a rotated SECRET_KEY still opens them through its fallbacks, and a secret no key
opens is said as such (its connection sits out the rounds) instead of being sent empty."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection as db
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings
from django.urls import reverse

from workflows import selectors, services
from workflows.models import Connection
from workflows.sealing import PREFIX, is_unreadable

SECRET = "tvly-AbC123-very-secret"
OLD_KEY, NEW_KEY = "old-site-key-" + "x" * 40, "new-site-key-" + "y" * 40


def stored(connection: Connection) -> str:
    """The secret column as the database holds it."""
    with db.cursor() as cursor:
        cursor.execute("SELECT secret FROM workflows_connection WHERE id = %s", [connection.pk])
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_a_secret_is_stored_sealed_and_read_back_clear(alice):
    first = services.connection_create(owner=alice, label="search", kind="tavily", secret=SECRET)
    second = services.connection_create(owner=alice, label="again", kind="tavily", secret=SECRET)

    assert stored(first).startswith(PREFIX) and SECRET not in stored(first)
    assert stored(first) != stored(second)  # sealing the same text twice differs
    assert Connection.objects.get(pk=first.pk).secret == SECRET
    assert selectors.usable_connections(user=alice) == [second, first]  # ordered by label


@pytest.mark.django_db
def test_a_dump_holds_the_secret_sealed_and_loads_back(alice, tmp_path):
    services.connection_create(owner=alice, label="search", kind="tavily", secret=SECRET)
    out = io.StringIO()
    call_command("dumpdata", "workflows.connection", stdout=out)

    assert SECRET not in out.getvalue()
    [row] = json.loads(out.getvalue())
    assert row["fields"]["secret"].startswith(PREFIX)
    Connection.objects.all().delete()
    path = tmp_path / "connections.json"
    path.write_text(out.getvalue())
    call_command("loaddata", str(path), verbosity=0)
    assert Connection.objects.get().secret == SECRET


@pytest.mark.django_db
def test_a_rotated_key_opens_through_its_fallback_and_reseal_moves_it(alice):
    with override_settings(SECRET_KEY=OLD_KEY):
        connection = services.connection_create(
            owner=alice, label="search", kind="tavily", secret=SECRET
        )
        sealed_by_old = stored(connection)

    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[OLD_KEY]):
        assert Connection.objects.get().secret == SECRET
        out = io.StringIO()
        call_command("reseal_secrets", stdout=out)
        assert "Resealed 1 connection secret(s)" in out.getvalue()
    assert stored(connection) != sealed_by_old

    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[]):
        assert Connection.objects.get().secret == SECRET  # the old key is no longer needed


@pytest.mark.django_db
def test_a_secret_no_key_opens_is_asked_for_again_and_kept_as_it_was(alice, alice_client):
    with override_settings(SECRET_KEY=OLD_KEY):
        connection = services.connection_create(
            owner=alice, label="search", kind="tavily", secret=SECRET
        )
    sealed = stored(connection)

    with override_settings(SECRET_KEY=NEW_KEY):
        lost = Connection.objects.get()
        assert is_unreadable(lost.secret) and lost.secret == "" and lost.needs_secret_again
        assert selectors.usable_connections(user=alice) == []  # rounds leave it out
        assert selectors.unreadable_connections() == ["alice/search"]
        alice_client.force_login(alice)  # the old key's session is gone with it
        page = alice_client.get(reverse("workflows:connections")).content.decode()
        assert "can no longer be read here" in page

        lost.save()  # saved again without a new secret, the sealed text stays as it was
        assert stored(connection) == sealed
        edit = reverse("workflows:connection-edit", args=[connection.pk])
        refused = alice_client.post(edit, {"label": "search", "kind": "tavily", "secret": ""})
        assert refused.status_code == 400 and stored(connection) == sealed
        with pytest.raises(CommandError, match="alice/search"):
            call_command("reseal_secrets", stdout=io.StringIO())

        alice_client.post(edit, {"label": "search", "kind": "tavily", "secret": "tvly-new"})
        assert Connection.objects.get().secret == "tvly-new"
        assert selectors.unreadable_connections() == []


@pytest.mark.django_db(transaction=True)
def test_secrets_stored_in_clear_before_are_sealed_by_the_migration_and_back(alice):
    def migrate(target):
        executor = MigrationExecutor(db)
        executor.loader.build_graph()
        executor.migrate(target)

    try:
        migrate([("workflows", "0006_connection_mcp_url")])
        with db.cursor() as cursor:
            cursor.execute(
                "INSERT INTO workflows_connection (owner_id, label, kind, secret, url, created) "
                "VALUES (%s, 'search', 'tavily', %s, '', CURRENT_TIMESTAMP)",
                [alice.pk, SECRET],
            )
        migrate([("workflows", "0007_connection_secret_sealed")])
        connection = Connection.objects.get()
        assert stored(connection).startswith(PREFIX) and connection.secret == SECRET

        migrate([("workflows", "0006_connection_mcp_url")])
        assert stored(connection) == SECRET
    finally:
        executor = MigrationExecutor(db)
        migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db
def test_a_sealed_value_given_as_a_secret_is_refused_not_opened(alice, alice_client):
    """A seal copied from a backup or a dump and given as a connection's secret (on the
    Connections page or to the service) is refused: opened, it would hand another user's
    token to a server of this user's choosing."""
    from django.contrib.auth import get_user_model
    from django.core.exceptions import ValidationError

    bob = get_user_model().objects.create_user("bob", password="x")
    services.connection_create(
        owner=bob, label="wiki", kind="mcp", secret="BOBS-TOKEN-123456",
        url="https://mcp.example.org/mcp",
    )  # fmt: skip
    sealed = stored(Connection.objects.get(owner=bob))

    page = alice_client.post(
        reverse("workflows:connections"),
        {"label": "mine", "kind": "mcp", "url": "https://mcp.example.net/mcp", "secret": sealed},
    )
    assert "This is not a key or token" in page.content.decode()
    with pytest.raises(ValidationError, match="not a key or token"):
        services.connection_create(
            owner=alice, label="mine", kind="mcp", secret=sealed, url="https://mcp.example.net/mcp"
        )
    assert not Connection.objects.filter(owner=alice).exists()


@pytest.mark.django_db
def test_a_token_no_key_opens_does_not_move_to_another_server(alice, alice_client):
    """A stored MCP token that no key opens still counts as stored: the server's address
    cannot move to another origin without a new token (put back in the fallbacks later, the
    old token would otherwise go to the new server)."""
    with override_settings(SECRET_KEY=OLD_KEY):
        connection = services.connection_create(
            owner=alice, label="wiki", kind="mcp", secret="tok-SECRET",
            url="https://mcp.example.org/mcp",
        )  # fmt: skip
    with override_settings(SECRET_KEY=NEW_KEY):
        alice_client.force_login(alice)
        edit = reverse("workflows:connection-edit", args=[connection.pk])
        moved = {"label": "wiki", "kind": "mcp", "url": "https://mcp.example.net/mcp", "secret": ""}
        page = alice_client.post(edit, moved)
        assert "needs its token again" in page.content.decode()
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[OLD_KEY]):
        kept = Connection.objects.get()
        assert (kept.url, kept.secret) == ("https://mcp.example.org/mcp", "tok-SECRET")


@pytest.mark.django_db
def test_a_dump_keeps_a_secret_no_key_opens_as_it_was_sealed(alice):
    """A backup taken under the wrong key keeps the sealed text of what it cannot open (it
    used to write an empty secret)."""
    with override_settings(SECRET_KEY=OLD_KEY):
        connection = services.connection_create(
            owner=alice, label="search", kind="tavily", secret=SECRET
        )
    with override_settings(SECRET_KEY=NEW_KEY):
        out = io.StringIO()
        call_command("dumpdata", "workflows.connection", stdout=out)
    [row] = json.loads(out.getvalue())
    assert row["fields"]["secret"] == stored(connection)


@pytest.mark.django_db(transaction=True)
def test_migrating_back_refuses_to_empty_a_secret_no_key_opens(alice):
    """Back to clear text, a secret that no key opens would be written empty: the migration
    refuses, naming the connection, and leaves it sealed."""
    executor = MigrationExecutor(db)
    with override_settings(SECRET_KEY=OLD_KEY):
        connection = services.connection_create(
            owner=alice, label="search", kind="tavily", secret=SECRET
        )
    sealed = stored(connection)
    with (
        override_settings(SECRET_KEY=NEW_KEY),
        pytest.raises(RuntimeError, match=str(connection.pk)),
    ):
        executor.loader.build_graph()
        executor.migrate([("workflows", "0006_connection_mcp_url")])
    assert stored(connection) == sealed
    executor = MigrationExecutor(db)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db
def test_the_tools_panel_counts_only_connections_a_round_can_use(alice, settings):
    """A connection whose secret no longer opens sits out the rounds, and the Tools panel
    says so: no web search on its strength, and its MCP server is listed as needing its
    token again."""
    from workflows.execution.tools_panel import tool_overview

    settings.POWERON_SEARCH_PROVIDER = settings.POWERON_TAVILY_API_KEY = ""
    with override_settings(SECRET_KEY=OLD_KEY):
        services.connection_create(owner=alice, label="search", kind="tavily", secret=SECRET)
        services.connection_create(
            owner=alice, label="wiki", kind="mcp", secret="tok-1", url="https://mcp.example.org/mcp"
        )
        assert {r["name"]: r for r in tool_overview(owner=alice)}["web.search"]["available"]
    with override_settings(SECRET_KEY=NEW_KEY):
        rows = {row["name"]: row for row in tool_overview(owner=alice)}
    assert not rows["web.search"]["available"]
    assert not rows["wiki.*"]["available"] and rows["wiki.*"]["own"]
    assert "enter it again under Connections" in rows["wiki.*"]["reason"]
