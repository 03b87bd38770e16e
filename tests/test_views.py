"""Uploads and exports of the chat, for the owner only."""

import json
import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.factories import workflow_with_history
from workflows import services
from workflows.engine.records.events import RoundEvent
from workflows.execution import recording
from workflows.models import ChatDocument

pytestmark = pytest.mark.django_db


def test_upload_stores_files_for_the_next_message(alice_client, alice):
    """Uploaded files are stored as pending documents and offered for the next message."""
    workflow = services.workflow_create(owner=alice)
    response = alice_client.post(
        reverse("workflows:upload", args=[workflow.pk]),
        {"files": [SimpleUploadedFile("a.csv", b"x,y\n1,2\n", "application/octet-stream")]},
    )
    document = workflow.documents.get()
    assert response.status_code == 200
    assert f'name="documents" value="{document.pk}"' in response.content.decode()
    assert (document.label, document.source) == ("pending_upload", ChatDocument.Source.UPLOADED)
    assert document.mime_type == "text/csv"  # the name says more than "octet-stream"


def test_a_reload_shows_the_files_waiting_to_be_sent_and_one_can_be_taken_back(
    alice_client, alice, bob, django_capture_on_commit_callbacks
):
    """Files uploaded and not yet sent are shown again after a reload (they were stored but
    no longer shown); one can be taken back, file and all, and still counts for the hourly
    upload limit; nobody else can take it back."""
    from django.test import Client

    from workflows import rates

    workflow = services.workflow_create(owner=alice)
    for name in ("a.md", "b.md"):
        alice_client.post(
            reverse("workflows:upload", args=[workflow.pk]),
            {"files": [SimpleUploadedFile(name, b"# x", "text/markdown")]},
        )
    first, second = workflow.documents.order_by("id")
    page = alice_client.get(workflow.get_absolute_url()).content.decode()
    attachments = page.split('id="attachments"')[1].split("</div>")[0]
    assert f'value="{first.pk}" checked' in attachments and "b.md" in attachments

    discard = reverse("workflows:upload-discard", args=[workflow.pk, second.pk])
    stranger = Client()
    stranger.force_login(bob)
    assert stranger.post(discard).status_code == 404
    path = second.file.path
    with django_capture_on_commit_callbacks(execute=True):
        assert alice_client.post(discard).status_code == 200
    assert list(workflow.documents.values_list("pk", flat=True)) == [first.pk]
    assert not os.path.exists(path)
    assert alice_client.post(discard).status_code == 404  # gone, or never a waiting upload
    assert rates.upload_refusal(user=alice, adding=1, limit=2) is not None  # both count


def test_an_upload_keeps_the_double_quotes_of_its_name(alice_client, alice):
    """Browsers send a file name's double quotes as %22 (and its line breaks as %0A, %0D);
    the document is named as the file was."""
    workflow = services.workflow_create(owner=alice)
    sent = "the %22final%22 draft%0A.txt"  # as Chromium writes 'the "final" draft\n.txt'
    alice_client.post(
        reverse("workflows:upload", args=[workflow.pk]),
        {"files": [SimpleUploadedFile(sent, b"text", "text/plain")]},
    )
    assert workflow.documents.get().name == 'the "final" draft.txt'


def test_oversized_upload_is_refused_and_nothing_is_stored(alice_client, alice, settings):
    """A file over the limit is refused with its name and the limit; nothing is kept."""
    settings.POWERON_MAX_UPLOAD_BYTES = 10
    workflow = services.workflow_create(owner=alice)
    response = alice_client.post(
        reverse("workflows:upload", args=[workflow.pk]),
        {"files": [SimpleUploadedFile("big.txt", b"x" * 11)]},
    )
    assert response.status_code == 400
    assert "big.txt is larger than 10" in response.content.decode()
    assert not workflow.documents.exists()


def test_upload_without_files_says_so(alice_client, alice):
    workflow = services.workflow_create(owner=alice)
    response = alice_client.post(reverse("workflows:upload", args=[workflow.pk]), {})
    assert response.status_code == 400
    assert "Choose at least one file." in response.content.decode()


def test_upload_refuses_files_the_readers_cannot_read_and_empty_ones(alice_client, alice):
    """An image, a program and an empty file are refused with their reasons and nothing is
    kept; the page's file picker offers the types the readers read, from the same table."""
    workflow = services.workflow_create(owner=alice)
    files = [
        SimpleUploadedFile("red.png", b"\x89PNG\r\n", "image/png"),
        SimpleUploadedFile("setup.exe", b"MZ\x90", "application/octet-stream"),
        SimpleUploadedFile("empty.txt", b"", "text/plain"),
        SimpleUploadedFile("notes.md", b"# Notes", "text/markdown"),
    ]
    response = alice_client.post(reverse("workflows:upload", args=[workflow.pk]), {"files": files})
    text = response.content.decode()
    assert response.status_code == 400
    assert "red.png cannot be read here: attach PDF, Word (.docx), HTML, Markdown" in text
    assert "setup.exe cannot be read here" in text
    assert "empty.txt is empty: there is nothing in it to read." in text
    assert "notes.md" not in text and not workflow.documents.exists()
    page = alice_client.get(workflow.get_absolute_url()).content.decode()
    accept = page.split('id="file-picker"')[1].split('accept="')[1].split('"')[0].split(",")
    assert {".pdf", ".docx", ".md", ".csv", ".json", "application/pdf", "text/*"} <= set(accept)
    assert ".png" not in accept and not any(a.startswith("image/") for a in accept)


@pytest.mark.parametrize("debug", [True, False])
def test_a_missing_workflow_shows_the_apps_own_not_found_page(
    alice_client, alice, bob, settings, debug
):
    """A workflow, document or connection that is not there (or not the user's) gets the app's
    404 page, with DEBUG on too: never Django's debug page with the site's URL patterns."""
    settings.DEBUG = debug
    theirs = workflow_with_history(bob)
    for url in [
        reverse("workflows:detail", args=[999_999]),
        reverse("workflows:detail", args=[theirs.pk]),
        reverse("workflows:export", args=[theirs.pk, "md"]),
        reverse("workflows:document", args=[theirs.pk, 1]),
        reverse("workflows:connection-edit", args=[999_999]),
    ]:
        response = alice_client.get(url)
        page = response.content.decode()
        assert response.status_code == 404, url
        assert "<h1>Not found</h1>" in page and "Back to your workflows" in page, url
        assert "URLconf" not in page and "Page not found at" not in page, url


def test_uploads_and_exports_of_others_are_404(client, alice, bob):
    """Bob can neither upload into nor export Alice's workflow."""
    workflow = workflow_with_history(alice)
    client.force_login(bob)
    upload = client.post(
        reverse("workflows:upload", args=[workflow.pk]),
        {"files": [SimpleUploadedFile("a.txt", b"x")]},
    )
    assert upload.status_code == 404
    for fmt in ("md", "json"):
        assert client.get(reverse("workflows:export", args=[workflow.pk, fmt])).status_code == 404


def test_export_json_holds_messages_documents_and_events(alice_client, alice):
    """The JSON export is the whole record of the workflow."""
    workflow = workflow_with_history(alice)
    response = alice_client.get(reverse("workflows:export", args=[workflow.pk, "json"]))
    data = json.loads(response.content)
    assert response["Content-Disposition"] == f'attachment; filename="workflow-{workflow.pk}.json"'
    assert [m["role"] for m in data["messages"]] == ["user", "action"]
    assert data["messages"][1]["summary"] == "Extracted the quarterly figures from report.pdf"
    assert data["documents"][0]["label"] == "round1_task1_action1_extract"
    assert [e["seq"] for e in data["events"]] == [1, 2, 3]


def test_export_markdown_is_a_readable_transcript(alice_client, alice):
    """The Markdown export lists rounds, actions with their summaries, and documents."""
    workflow = workflow_with_history(alice)
    text = alice_client.get(reverse("workflows:export", args=[workflow.pk, "md"])).content.decode()
    assert text.startswith("# Research task")
    assert "## Round 1" in text
    assert "`document.extract`" in text
    assert "_Extracted the quarterly figures from report.pdf_" in text
    assert "figures.md" in text


def test_the_markdown_export_says_how_each_round_ended_and_what_it_reran(alice_client, alice):
    """An ended round's heading says how it ended; a round that ran an earlier one again says
    which, and whether its message was edited, as the page does."""
    workflow = workflow_with_history(alice)
    recording.record(workflow.pk, RoundEvent(round=1, status="failed", reason="x"))
    for round, text in ((2, "Find X"), (3, "Find Y")):
        services.message_create(workflow=workflow, role="user", content=text, round=round, reruns=1)
    text = alice_client.get(reverse("workflows:export", args=[workflow.pk, "md"])).content.decode()
    assert "## Round 1 — failed\n" in text
    workflow.title = "Follow-up <b>test</b> & co"
    workflow.save()
    text = alice_client.get(reverse("workflows:export", args=[workflow.pk, "md"])).content.decode()
    assert text.startswith("# Follow-up &lt;b&gt;test&lt;/b&gt; & co\n")  # shown as typed
    assert "## Round 2\n" in text  # not ended: nothing said
    assert "### User (round 1 again)\n\nFind X" in text
    assert "### User (edited from round 1)\n\nFind Y" in text


def test_the_markdown_export_keeps_a_step_a_stop_cut_off(alice_client, alice):
    """A step stopped in the middle of its action has no action message: the export still
    gives it, with its status, figures, reason and the documents it wrote, before the answer
    (it was left out, its documents with it)."""
    from workflows.engine.records.events import StepEvent

    workflow = services.workflow_create(owner=alice, title="Stops")
    services.message_create(workflow=workflow, role="user", content="Report", round=1)
    services.document_create(
        workflow=workflow, name="r.md", data=b"# R", label="round1_task1_action1_report",
        round=1, key="1:1:1:1",
    )  # fmt: skip
    recording.record(
        workflow.pk,
        StepEvent(
            round=1, task=1, action=1, status="stopped", step=1,
            method="document.generateReport", reason="Stopped by the user.", durationMs=2500,
        ),
    )  # fmt: skip
    services.message_create(workflow=workflow, role="assistant", content="Kept.", round=1)
    text = alice_client.get(reverse("workflows:export", args=[workflow.pk, "md"])).content.decode()
    step = "### ✗ Task 1, action 1: `document.generateReport` (stopped)\n_2.5 s · 0 tokens"
    assert step in text
    assert "_Stopped by the user._" in text
    assert "- 📄 r.md (`round1_task1_action1_report`, 3 bytes)" in text
    services.document_create(
        workflow=workflow, name="a<b>\nc.md", data=b"x", label="round1_task1_action1_report",
        round=1, key="1:1:1:2",
    )  # fmt: skip
    text = alice_client.get(reverse("workflows:export", args=[workflow.pk, "md"])).content.decode()
    assert "- 📄 a&lt;b&gt; c.md (`round1_task1_action1_report`, 1 bytes)" in text  # as named
    assert text.index(step) < text.index("### Assistant")


def test_delete_removes_the_workflow_and_its_files(
    alice_client, alice, django_capture_on_commit_callbacks
):
    """Deleting a workflow removes its rows, then (once that is committed) its files under
    MEDIA_ROOT."""
    from pathlib import Path

    workflow = workflow_with_history(alice)
    path = Path(workflow.documents.get().file.path)
    assert path.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(reverse("workflows:delete", args=[workflow.pk]))
    assert response.status_code == 302
    assert not alice.workflows.exists()
    assert not ChatDocument.objects.exists()
    assert not path.exists()


def test_a_running_workflow_is_not_deleted(alice_client, alice):
    """While a run goes on, delete is refused with the reason and nothing is lost."""
    workflow = workflow_with_history(alice)
    workflow.status = workflow.Status.RUNNING
    workflow.save()
    response = alice_client.post(reverse("workflows:delete", args=[workflow.pk]), follow=True)
    assert "stop it before deleting it" in response.content.decode()
    assert alice.workflows.filter(pk=workflow.pk).exists()


def test_others_cannot_delete(client, alice, bob):
    workflow = workflow_with_history(alice)
    client.force_login(bob)
    assert client.post(reverse("workflows:delete", args=[workflow.pk])).status_code == 404
    assert alice.workflows.exists()


def test_a_workflow_is_renamed_in_place(alice_client, alice, bob):
    """The new title (spaces collapsed) comes back with the sidebar's link; a plain form post
    gets the page again; an empty or too long title is refused and nothing changes; another
    user's workflow is not found."""
    workflow = services.workflow_create(owner=alice, title="Old")
    url = reverse("workflows:rename", args=[workflow.pk])
    htmx = {"HTTP_HX_REQUEST": "true"}

    response = alice_client.post(url, {"title": "  Quarterly   figures "}, **htmx)
    page = response.content.decode()
    assert response.status_code == 200
    assert '<span id="wf-title">Quarterly figures</span>' in page
    assert f'id="sidebar-title-{workflow.pk}" hx-swap-oob="true"' in page
    workflow.refresh_from_db()
    assert workflow.title == "Quarterly figures"

    for title, message in (("   ", "cannot be empty"), ("x" * 201, "at most 200 characters")):
        page = alice_client.post(url, {"title": title}, **htmx).content.decode()
        assert message in page and "Quarterly figures" in page
        # Said by the box (out of band), not inside the title's heading the answer fills.
        heading, error = page.split('<small id="rename-error" hx-swap-oob="true"')
        assert message not in heading and message in error
    detail = alice_client.get(workflow.get_absolute_url()).content.decode()
    assert 'id="rename-error"' in detail  # the error's place exists
    workflow.refresh_from_db()
    assert workflow.title == "Quarterly figures"

    response = alice_client.post(url, {"title": "Plain"})
    assert response.status_code == 302 and response["Location"] == workflow.get_absolute_url()
    workflow.refresh_from_db()
    assert workflow.title == "Plain"
    assert alice_client.get(url).status_code == 405

    alice_client.force_login(bob)
    assert alice_client.post(url, {"title": "Mine now"}, **htmx).status_code == 404
    workflow.refresh_from_db()
    assert workflow.title == "Plain"


def test_the_sidebar_finds_workflows_by_title_and_content(alice_client, alice, bob):
    """Every word must appear in the title or in a message (its text or summary); another
    user's workflows never show; an empty query lists them all."""
    research = workflow_with_history(alice, title="Research task")  # "Find X", a summary
    other = services.workflow_create(owner=alice, title="Holiday plans")
    workflow_with_history(bob, title="Bob's quarterly research")
    url = reverse("workflows:search")
    htmx = {"HTTP_HX_REQUEST": "true"}

    def found(query: str) -> list[str]:
        page = alice_client.get(url, {"q": query, "current": other.pk}, **htmx).content.decode()
        return [line.split(">", 1)[1].split("<", 1)[0]
                for line in page.splitlines() if 'id="sidebar-title-' in line]  # fmt: skip

    assert found("holiday") == ["Holiday plans"]
    assert found("QUARTERLY figures") == ["Research task"]  # a message's summary
    assert found("find research") == ["Research task"]  # one word each in text and title
    assert found("quarterly holiday") == []
    assert sorted(found("")) == ["Holiday plans", "Research task"]
    page = alice_client.get(url, {"q": "nothing like it"}, **htmx).content.decode()
    assert "No workflow matches “nothing like it”." in page
    marked = alice_client.get(url, {"q": "", "current": other.pk}, **htmx).content.decode()
    assert f'<li class="current">\n    <a id="sidebar-title-{other.pk}"' in marked
    assert research.pk != other.pk
    # Case is ignored in every alphabet (SQLite's own LIKE and LOWER fold only ASCII).
    accents = services.workflow_create(owner=alice, title="Café Über Résumé")
    services.message_create(workflow=accents, role="user", content="ΣΟΦΊΑ", round=1)
    for query in ("CAFÉ", "über", "résumé café", "σοφία"):
        assert found(query) == ["Café Über Résumé"], query
    services.workflow_create(owner=alice, title="ΟΔΟΣ İstanbul 50%_off")
    for query in ("ΟΔΟΣ", "οδος", "İstanbul", "50%_off"):  # as typed; and LIKE's % and _
        assert found(query) == ["ΟΔΟΣ İstanbul 50%_off"], query
    assert found("50%") == ["ΟΔΟΣ İstanbul 50%_off"] and found("5_%") == []
    plain = alice_client.get(url, {"q": "holiday"})
    assert plain.status_code == 200 and "Holiday plans" in plain.content.decode()
    assert "Research task" not in plain.content.decode().split("</nav>")[0]


def test_exports_keep_the_rating_with_its_comment(alice_client, alice):
    """An answer's rating and comment are in the JSON and the Markdown export."""
    workflow = workflow_with_history(alice)
    message = workflow.messages.first()
    services.message_feedback(message=message, rating=-1, comment="Too short")
    data = json.loads(
        alice_client.get(reverse("workflows:export", args=[workflow.pk, "json"])).content
    )
    rated = [m for m in data["messages"] if m["feedback"]]
    assert [(m["feedback"], m["feedbackComment"]) for m in rated] == [(-1, "Too short")]
    markdown = alice_client.get(reverse("workflows:export", args=[workflow.pk, "md"])).content
    assert "> Feedback −1 (not helpful): Too short" in markdown.decode()


def test_the_tools_panel_names_the_environment_variables_to_set(alice_client, alice, settings):
    """A tool left out by invalid settings is explained to staff with the POWERON_* variable
    to set, never with the settings' internal key; everyone else is told to ask the
    administrator (or to add their own key), with no setting, variable or address."""
    settings.POWERON_SEARCH_PROVIDER = "searxng"
    settings.POWERON_SEARXNG_URL = "http://127.0.0.1:8888"
    settings.POWERON_FETCH_TIMEOUT = 0
    workflow = workflow_with_history(alice)
    page = alice_client.get(reverse("workflows:detail", args=[workflow.pk])).content.decode()
    assert "unavailable: not set up on this server. Ask the administrator, or add" in page
    assert "POWERON_" not in page and "127.0.0.1:8888" not in page

    alice.is_staff = True
    alice.save()
    page = alice_client.get(reverse("workflows:detail", args=[workflow.pk])).content.decode()
    assert "unavailable: The web tool settings are invalid: POWERON_FETCH_TIMEOUT" in page
    assert "Environment: <code>POWERON_FETCH_TIMEOUT</code>" in page
    assert "fetch_timeout" not in page


def test_the_sidebar_asks_for_statuses_of_its_owners_workflows_only(alice_client, alice, bob):
    """The statuses the sidebar refreshes: the user's own workflows, others' left out."""
    mine = services.workflow_create(owner=alice)
    theirs = services.workflow_create(owner=bob)
    mine.status = mine.Status.RUNNING
    mine.save()
    url = reverse("workflows:statuses") + f"?ids={mine.pk},{theirs.pk},x,{'9' * 30}"
    running = {"status": "running", "label": "Running", "waiting": False}
    assert alice_client.get(url).json() == {str(mine.pk): running}


def test_the_sidebar_learns_of_workflows_created_after_it_loaded(alice_client, alice, bob):
    """Asked with `newer`, the statuses include the user's workflows created since (another
    tab's, the API's), never someone else's."""
    seen = services.workflow_create(owner=alice)
    new = services.workflow_create(owner=alice)
    services.workflow_create(owner=bob)
    url = reverse("workflows:statuses") + f"?ids={seen.pk}&newer={seen.pk}"
    assert set(alice_client.get(url).json()) == {str(seen.pk), str(new.pk)}


@pytest.mark.parametrize("kind", ["ask", "approval"])
def test_a_run_waiting_for_its_user_is_named_so_in_the_sidebar(alice_client, alice, kind):
    """A running workflow whose step-limit question or approval waits is "Waiting for you";
    once answered it is running again."""
    from workflows.engine.records.events import ApprovalEvent, AskEvent

    workflow, _, _ = services.round_open(
        workflow_id=services.workflow_create(owner=alice).pk,
        owner=alice,
        text="Go",
        document_ids=[],
    )
    if kind == "ask":
        asked = AskEvent(round=1, task=1, question="More?", stepsDone=3)
        answered = asked.model_copy(update={"status": "answered", "granted": 2})
    else:
        asked = ApprovalEvent(
            round=1, task=1, action=1, method="web.search", parameters={}, status="waiting"
        )
        answered = asked.model_copy(update={"status": "approved"})
    url = reverse("workflows:statuses") + f"?ids={workflow.pk}"
    recording.record(workflow.pk, asked)
    waiting = {"status": "running", "label": "Waiting for you", "waiting": True}
    assert alice_client.get(url).json() == {str(workflow.pk): waiting}
    recording.record(workflow.pk, answered)
    assert alice_client.get(url).json()[str(workflow.pk)]["label"] == "Running"
