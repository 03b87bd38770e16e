"""Sign-in everywhere, and each user reaches only their own workflows and documents."""

import re

import pytest
from django.urls import reverse

from tests.factories import workflow_with_history

pytestmark = pytest.mark.django_db


def protected_urls(workflow):
    document = workflow.documents.get()
    return [
        reverse("workflows:home"),
        reverse("workflows:connections"),
        reverse("workflows:detail", args=[workflow.pk]),
        reverse("workflows:document", args=[workflow.pk, document.pk]),
    ]


def test_every_page_requires_sign_in(client, alice):
    """Anonymous visitors are sent to the login page, whatever they ask for."""
    workflow = workflow_with_history(alice)
    for url in protected_urls(workflow):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url
    response = client.post(reverse("workflows:create"), {"mode": "react", "max_steps": 3})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_login_page_is_public_and_styled(client):
    """The login page renders with the app's look."""
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b"PowerOn" in response.content
    assert b"pico.min.css" in response.content


def test_sign_in_and_out(client, alice):
    """The account's password signs in; signing out ends the session."""
    response = client.post(reverse("login"), {"username": "alice", "password": "alice-pass-123"})
    assert response.status_code == 302
    assert client.get(reverse("workflows:home")).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("workflows:home")).status_code == 302


def test_users_reach_only_their_own_workflows(client, alice, bob):
    """Bob gets 404 on Alice's workflow and document, and does not see it in his list."""
    workflow = workflow_with_history(alice, title="Alice's secret plan")
    client.force_login(bob)
    for url in protected_urls(workflow)[2:]:
        assert client.get(url).status_code == 404, url
    assert b"Alice&#x27;s secret plan" not in client.get(reverse("workflows:home")).content


def test_owner_sees_workflow_messages_and_downloads_documents(alice_client, alice):
    """The owner's workflow page lists its stored messages; documents download."""
    workflow = workflow_with_history(alice)
    page = alice_client.get(reverse("workflows:detail", args=[workflow.pk]))
    assert page.status_code == 200
    assert b"Extracted the quarterly figures" in page.content
    document = workflow.documents.get()
    download = alice_client.get(reverse("workflows:document", args=[workflow.pk, document.pk]))
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == b"# Figures\n\nRevenue grew 12%."
    assert 'attachment; filename="figures.md"' in download["Content-Disposition"]


def test_new_workflow_with_mode_and_max_steps(alice_client, alice):
    """The new-workflow form stores the chosen mode and step limit."""
    response = alice_client.post(
        reverse("workflows:create"), {"title": "Q3", "mode": "reasoning", "max_steps": 9}
    )
    workflow = alice.workflows.get()
    assert response.status_code == 302
    assert response["Location"] == workflow.get_absolute_url()
    assert (workflow.title, workflow.mode, workflow.max_steps) == ("Q3", "reasoning", 9)


def test_new_workflow_rejects_bad_step_limit(alice_client, alice):
    """An out-of-range step limit is refused with a message and nothing is created."""
    response = alice_client.post(reverse("workflows:create"), {"mode": "react", "max_steps": 500})
    assert response.status_code == 400
    assert b"between 1 and 50" in response.content
    assert not alice.workflows.exists()
    # The field says it is wrong and is described by its error, which is not part of its name.
    page = response.content.decode()
    field = re.search(r'<input[^>]*name="max_steps"[^>]*>', page)[0]
    for attribute in ('aria-invalid="true"', 'min="1"', 'max="50"', "id_max_steps_error"):
        assert attribute in field
    error = re.search(r'<small class="error" id="id_max_steps_error">([^<]*)</small>', page)
    assert error and "between 1 and 50" in error[1]
    assert not re.search(r"<label[^>]*>[^<]*<input[^>]*max_steps", page)


def test_no_model_configured_says_what_to_set(alice_client, alice, settings):
    """Without a model the chat explains to staff which settings to set, and tells everyone
    else to ask the administrator (naming no setting); it still works."""
    settings.POWERON_LLM_BASE_URL = ""
    settings.POWERON_LLM_API_KEY = ""
    page = alice_client.get(reverse("workflows:home")).content.decode()
    assert "No model configured" in page and "ask the administrator" in page
    assert "POWERON_" not in page and "OPENAI_API_KEY" not in page
    alice.is_staff = True
    alice.save()
    page = alice_client.get(reverse("workflows:home")).content.decode()
    for name in ("POWERON_LLM_API_KEY", "OPENAI_API_KEY", "POWERON_LLM_BASE_URL"):
        assert name in page


def test_configured_model_hides_the_notice(alice_client, settings):
    """With a model configured the notice is gone and the model's name shows."""
    settings.POWERON_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.POWERON_LLM_MODEL = "qwen2.5"
    page = alice_client.get(reverse("workflows:home")).content.decode()
    assert "No model configured" not in page
    assert "qwen2.5" in page


def test_workflow_page_lists_tools_and_why_some_are_missing(alice_client, alice, settings):
    """The chat shows which actions the agent can use, and why the others are left out."""
    settings.POWERON_SEARCH_PROVIDER = ""
    workflow = workflow_with_history(alice)
    page = alice_client.get(reverse("workflows:detail", args=[workflow.pk])).content.decode()
    assert "<code>document.generateReport</code>" in page
    assert "unavailable: not set up on this server. Ask the administrator" in page
    alice.is_staff = True  # the operator is told what is missing
    alice.save()
    page = alice_client.get(reverse("workflows:detail", args=[workflow.pk])).content.decode()
    assert "unavailable: No search provider is configured" in page


def test_a_users_tavily_connection_enables_web_search(alice_client, alice, settings):
    """With their own Tavily connection the user gets web search though the site has none."""
    from workflows import services

    settings.POWERON_SEARCH_PROVIDER = ""
    services.connection_create(owner=alice, label="my-tavily", kind="tavily", secret="tvly-x")
    workflow = workflow_with_history(alice)
    page = alice_client.get(reverse("workflows:detail", args=[workflow.pk])).content.decode()
    assert "unavailable" not in page
    assert "tvly-x" not in page
