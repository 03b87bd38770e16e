"""Django admin pages render for a superuser and show what an admin needs."""

import asyncio
import os

import pytest
from django.urls import reverse

from tests.factories import workflow_with_history
from workflows import services
from workflows.engine.records.events import StepEvent
from workflows.execution import recording

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "model", ["chatworkflow", "chatmessage", "chatdocument", "workflowevent", "connection"]
)
def test_changelists_render(admin_client, alice, model):
    """Each model's list page renders with data in it."""
    workflow_with_history(alice)
    services.connection_create(owner=alice, label="search", kind="tavily", secret="x")
    response = admin_client.get(reverse(f"admin:workflows_{model}_changelist"))
    assert response.status_code == 200


def test_admin_pages_carry_the_products_icon(admin_client):
    """Without it the browser asks for /favicon.ico, which is not there."""
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert '<link rel="icon" href="/static/favicon.' in page


def test_workflow_list_shows_steps_and_tokens(admin_client, alice):
    """The workflow list shows owner, mode, status, the number of steps and tokens."""
    workflow = workflow_with_history(alice)
    recording.record(workflow.pk, StepEvent(round=1, task=1, action=1, status="success", step=1))
    workflow.prompt_tokens, workflow.completion_tokens = 1200, 300
    workflow.save()
    page = admin_client.get(reverse("admin:workflows_chatworkflow_changelist")).content.decode()
    assert "alice" in page
    assert "React" in page
    assert "1,200 in / 300 out" in page
    assert '<td class="field-steps">1</td>' in page


def test_workflow_page_has_inlines(admin_client, alice):
    """A workflow's page shows its messages (with summary), documents and event timeline."""
    workflow = workflow_with_history(alice)
    response = admin_client.get(reverse("admin:workflows_chatworkflow_change", args=[workflow.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    assert "Extracted the quarterly figures from report.pdf" in page
    document = workflow.documents.get()
    assert reverse("admin:workflows_chatdocument_download", args=[document.pk]) in page
    assert "Event timeline" in page
    assert page.index(">round<") < page.index(">plan<") < page.index(">act<")


def test_events_are_read_not_edited_and_a_workflow_still_deletes(admin_client, alice):
    """An event's page shows it without a form to save; none can be added; deleting the
    workflow from the admin still takes its events with it."""
    workflow = workflow_with_history(alice)
    event = workflow.events.first()
    page = admin_client.get(reverse("admin:workflows_workflowevent_change", args=[event.pk]))
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    posted = admin_client.post(
        reverse("admin:workflows_workflowevent_change", args=[event.pk]),
        {"workflow": workflow.pk, "seq": event.seq, "type": "plan", "payload": "{}"},
    )
    assert posted.status_code == 403
    event.refresh_from_db()
    assert event.type != "plan" or event.payload != {}
    assert admin_client.get(reverse("admin:workflows_workflowevent_add")).status_code == 403
    delete = reverse("admin:workflows_chatworkflow_delete", args=[workflow.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 302
    assert not type(event).objects.filter(pk=event.pk).exists()


def test_admin_downloads_any_document(admin_client, alice):
    """Staff download a document from the admin."""
    document = workflow_with_history(alice).documents.get()
    response = admin_client.get(
        reverse("admin:workflows_chatdocument_download", args=[document.pk])
    )
    assert response.status_code == 200
    assert b"".join(response.streaming_content).startswith(b"# Figures")


def test_message_search_covers_content_and_summary(admin_client, alice):
    """Messages are found by words of their summary."""
    workflow_with_history(alice)
    url = reverse("admin:workflows_chatmessage_changelist")
    assert "1 result" in admin_client.get(url, {"q": "quarterly"}).content.decode()
    assert "0 results" in admin_client.get(url, {"q": "nonexistentword"}).content.decode()


def test_connection_secret_is_never_shown(admin_client, alice):
    """Neither the list nor the change page of a connection contains its secret."""
    connection = services.connection_create(
        owner=alice, label="search", kind="tavily", secret="tvly-TOPSECRET"
    )
    for url in (
        reverse("admin:workflows_connection_changelist"),
        reverse("admin:workflows_connection_change", args=[connection.pk]),
    ):
        assert "tvly-TOPSECRET" not in admin_client.get(url).content.decode()


def test_connection_blank_secret_keeps_the_stored_one(admin_client, alice):
    """Saving a connection with the secret left blank keeps the stored secret."""
    connection = services.connection_create(owner=alice, label="search", kind="tavily", secret="s1")
    url = reverse("admin:workflows_connection_change", args=[connection.pk])
    response = admin_client.post(
        url, {"owner": alice.pk, "label": "search-key", "kind": "tavily", "secret": ""}
    )
    assert response.status_code == 302
    connection.refresh_from_db()
    assert (connection.label, connection.secret) == ("search-key", "s1")


def test_an_mcp_connection_in_admin_has_its_url_and_the_users_checks(admin_client, alice):
    """The admin shows and changes an MCP server's URL, offers only the kinds there are, and
    refuses what the Connections page refuses (a documentation address, an unknown kind)."""
    connection = services.connection_create(
        owner=alice, label="wiki", kind="mcp", secret="", url="https://mcp.example.org/mcp"
    )
    url = reverse("admin:workflows_connection_change", args=[connection.pk])
    assert "https://mcp.example.org/mcp" in admin_client.get(url).content.decode()
    fields = {"owner": alice.pk, "label": "wiki", "kind": "mcp", "secret": ""}
    refused = admin_client.post(url, {**fields, "url": "http://192.0.2.10/mcp"})
    assert refused.status_code == 200 and "reserved for documentation" in refused.content.decode()
    add = reverse("admin:workflows_connection_add")
    unknown = admin_client.post(add, {**fields, "label": "other", "kind": "searxng"})
    assert "Select a valid choice" in unknown.content.decode()
    moved = admin_client.post(url, {**fields, "url": "https://mcp.example.org/v2"})
    assert moved.status_code == 302
    connection.refresh_from_db()
    assert (connection.kind, connection.url) == ("mcp", "https://mcp.example.org/v2")
    listing = admin_client.get(reverse("admin:workflows_connection_changelist"))
    assert "https://mcp.example.org/v2" in listing.content.decode()


def test_admin_index_says_which_tools_are_unavailable_and_why(admin_client, settings):
    """Without a search provider, the admin names web.search as unavailable, with the reason."""
    settings.POWERON_SEARCH_PROVIDER = ""
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert "demo model" in page
    assert "<code>web.search</code>" in page
    assert "No search provider is configured" in page


def test_quiet_runs_are_found_and_show_their_durable_state(admin_client, alice):
    """Admins find runs said to be going whose heartbeat went quiet, and see what the durable
    runtime holds for them (here nothing: the run never started, so settling may end it)."""
    from datetime import timedelta

    from django.utils import timezone

    from workflows.models import ChatWorkflow

    quiet = services.workflow_create(owner=alice, title="Quiet one")
    live = services.workflow_create(owner=alice, title="Live one")
    old = timezone.now() - timedelta(hours=1)
    ChatWorkflow.objects.filter(pk=quiet.pk).update(
        status="running", current_round=1, heartbeat=old
    )
    ChatWorkflow.objects.filter(pk=live.pk).update(
        status="running", current_round=1, heartbeat=timezone.now()
    )
    url = reverse("admin:workflows_chatworkflow_changelist") + "?heartbeat=quiet"
    page = admin_client.get(url).content.decode()
    assert "Quiet one" in page and "Live one" not in page
    change = admin_client.get(reverse("admin:workflows_chatworkflow_change", args=[quiet.pk]))
    assert "none (never started" in change.content.decode()
    assert f"poweron-{quiet.pk}-round-1" in change.content.decode()  # the id DBOS would hold


def test_steps_and_model_calls_show_cached_tokens(admin_client, alice):
    """Per step and per call, the admin shows tokens and how many were read from the
    provider's cache; the workflow page sums the cached share."""
    from workflows.engine.records.events import StepEvent, UsageEvent
    from workflows.execution import recording

    workflow = workflow_with_history(alice)
    for prompt, cached in ((1000, 0), (2000, 1024)):
        recording.record(
            workflow.pk,
            UsageEvent(round=1, task=1, action=1, kind="refine", promptTokens=prompt,
                       completionTokens=50, cachedTokens=cached),
        )  # fmt: skip
    recording.record(
        workflow.pk,
        StepEvent(round=1, task=1, action=1, status="success", step=1, tokens=3100,
                  cachedTokens=1024, durationMs=900),
    )  # fmt: skip
    page = admin_client.get(
        reverse("admin:workflows_chatworkflow_change", args=[workflow.pk])
    ).content.decode()
    assert "2,000 in (1,024 cached) / 50 out" in page
    assert "3,100 (1,024 cached)" in page
    assert "1,024 of 3,000 (34%) read from the provider&#x27;s cache" in page
    listing = admin_client.get(reverse("admin:workflows_workflowevent_changelist")).content
    assert b"3,100 (1,024 cached)" in listing


def test_steps_are_found_by_their_action(admin_client, alice):
    """The step list's search finds a step by the action it ran, not only by its workflow."""
    workflow = workflow_with_history(alice)
    for step, method in ((1, "calc.add"), (2, "web.search")):
        recording.record(
            workflow.pk,
            StepEvent(round=1, task=1, action=step, status="success", step=step, method=method,
                      durationMs=10),
        )  # fmt: skip
    url = reverse("admin:workflows_steprecord_changelist")
    page = admin_client.get(url, {"q": "calc"}).content.decode()
    assert "1 result" in page and "calc.add" in page and "web.search" not in page


def test_admin_cannot_turn_a_users_secret_into_a_token_for_another_server(
    admin_client, alice, admin_user
):
    """A stored secret stays with its owner and its kind (those fields are read only once
    saved), and an MCP server moved to another address needs its token again."""
    key = services.connection_create(owner=alice, label="search", kind="tavily", secret="tvly-1")
    url = reverse("admin:workflows_connection_change", args=[key.pk])
    fields = {"owner": admin_user.pk, "label": "search", "kind": "mcp", "secret": "",
              "url": "https://203.0.113.9/mcp"}  # fmt: skip
    admin_client.post(url, fields)
    key.refresh_from_db()
    assert (key.owner, key.kind, key.secret) == (alice, "tavily", "tvly-1")
    wiki = services.connection_create(
        owner=alice, label="wiki", kind="mcp", secret="WIKI-1", url="https://mcp.example.org/mcp"
    )
    url = reverse("admin:workflows_connection_change", args=[wiki.pk])
    moved = {"owner": alice.pk, "label": "wiki", "kind": "mcp", "secret": "",
             "url": "https://mcp.example.net/mcp"}  # fmt: skip
    page = admin_client.post(url, moved).content.decode()
    assert "needs its token again" in page
    wiki.refresh_from_db()
    assert wiki.url == "https://mcp.example.org/mcp"


def test_deleting_from_admin_is_the_apps_deletion(
    admin_client, alice, django_capture_on_commit_callbacks
):
    """A workflow deleted from admin takes its files with it once the deletion is committed,
    and its open tabs are told it is gone (as the app's Delete does); a running one is not
    deleted there, and says why."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from workflows.events import broadcast
    from workflows.models import ChatWorkflow

    workflow = workflow_with_history(alice)
    path = workflow.documents.get().file.path
    running = workflow_with_history(alice, title="Busy")
    ChatWorkflow.objects.filter(pk=running.pk).update(status=ChatWorkflow.Status.RUNNING)
    layer = get_channel_layer()
    tab = async_to_sync(layer.new_channel)()  # an open tab of the workflow
    async_to_sync(layer.group_add)(broadcast.viewers_group(workflow.pk), tab)

    delete = reverse("admin:workflows_chatworkflow_delete", args=[workflow.pk])
    with django_capture_on_commit_callbacks(execute=True):
        assert admin_client.post(delete, {"post": "yes"}).status_code == 302
    assert not ChatWorkflow.objects.filter(pk=workflow.pk).exists()
    assert not os.path.exists(path)
    told = async_to_sync(asyncio.wait_for)(layer.receive(tab), 2)  # fails, not hangs
    assert told == {"type": "workflow.gone"}
    refused = reverse("admin:workflows_chatworkflow_delete", args=[running.pk])
    page = admin_client.post(refused, {"post": "yes"}, follow=True)
    assert "This workflow is running; stop it before deleting it." in page.content.decode()
    assert ChatWorkflow.objects.filter(pk=running.pk).exists()


def test_a_batch_with_a_running_workflow_is_refused_whole_and_says_why(admin_client, alice):
    """Deleting a selection that holds a running workflow deletes nothing and names it
    (not "no permission" and a 403); without it, the confirmation page and the deletion
    work as Django's own."""
    from workflows.models import ChatWorkflow

    idle = workflow_with_history(alice, title="Idle")
    running = workflow_with_history(alice, title="Busy")
    ChatWorkflow.objects.filter(pk=running.pk).update(status=ChatWorkflow.Status.RUNNING)
    url = reverse("admin:workflows_chatworkflow_changelist")
    both = {"action": "delete_selected", "_selected_action": [idle.pk, running.pk]}

    page = admin_client.post(url, both, follow=True).content.decode()
    assert "Nothing was deleted: “Busy” is running." in page
    assert admin_client.post(url, {**both, "post": "yes"}).status_code == 302
    assert ChatWorkflow.objects.count() == 2

    one = {"action": "delete_selected", "_selected_action": [idle.pk]}
    assert "Are you sure" in admin_client.post(url, one).content.decode()
    admin_client.post(url, {**one, "post": "yes"})
    assert list(ChatWorkflow.objects.values_list("pk", flat=True)) == [running.pk]


def test_deleting_a_user_takes_their_documents_files(
    admin_client, alice, django_capture_on_commit_callbacks
):
    """An account deleted in admin takes its workflows' files with their rows (they used to
    stay on disk, with nothing left pointing at them)."""
    workflow = workflow_with_history(alice)
    path = workflow.documents.get().file.path
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(reverse("admin:auth_user_delete", args=[alice.pk]), {"post": "yes"})
    assert not os.path.exists(path)


def test_a_deletion_rolled_back_keeps_the_files(alice, django_capture_on_commit_callbacks):
    """Files go only once the deletion is committed: a deletion rolled back keeps them."""
    from django.db import transaction

    workflow = workflow_with_history(alice)
    path = workflow.documents.get().file.path
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        services.workflow_delete(workflow=workflow)
        raise RuntimeError("rolled back")
    assert os.path.exists(path)


def test_an_account_with_a_run_going_is_not_deleted(admin_client, alice):
    """Deleting an account in admin, alone or in a selection, is refused while one of its
    workflows runs (it was deleted under its run), saying which."""
    from django.contrib.auth import get_user_model

    from workflows.models import ChatWorkflow

    running = workflow_with_history(alice, title="Busy")
    ChatWorkflow.objects.filter(pk=running.pk).update(status=ChatWorkflow.Status.RUNNING)
    page = admin_client.post(
        reverse("admin:auth_user_delete", args=[alice.pk]), {"post": "yes"}, follow=True
    ).content.decode()
    assert "The account alice has a run going (“Busy”); stop the run before deleting it." in page
    batch = {"action": "delete_selected", "_selected_action": [alice.pk], "post": "yes"}
    page = admin_client.post(
        reverse("admin:auth_user_changelist"), batch, follow=True
    ).content.decode()
    assert "Nothing was deleted: “Busy” (alice) running." in page
    assert get_user_model().objects.filter(pk=alice.pk).exists()
    assert ChatWorkflow.objects.filter(pk=running.pk).exists()
