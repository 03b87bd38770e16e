"""Personal API tokens: made on their page and shown once, kept as a digest, used, limited,
expired, revoked (by their owner or by staff), and scoped."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.api.conftest import bearer, make_token
from workflows.models import ApiToken

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r"pon_[a-z0-9]{10}_[A-Za-z0-9_-]{40,}")


def make_on_page(client: Client, **fields) -> tuple[str, str]:
    """Make a token on the API tokens page; the token it shows, and the page."""
    data = {"name": "nightly report", "scopes": ["read", "run"], "expires_in": "30", **fields}
    response = client.post(reverse("workflows:tokens"), data)
    assert response.status_code == 200, response.content
    page = response.content.decode()
    return TOKEN.search(page)[0], page


def test_a_token_is_shown_once_and_kept_only_as_a_digest(alice_client, alice):
    """The page shows the new token once (never cached); afterwards only its prefix is
    listed; the database holds its SHA-256 and no part of the secret after the prefix."""
    token, page = make_on_page(alice_client)
    assert "Copy it now" in page
    row = ApiToken.objects.get(owner=alice)
    assert row.digest == hashlib.sha256(token.encode()).hexdigest()
    secret = token.split("_", 2)[2]
    stored = " ".join(str(value) for value in ApiToken.objects.values().get().values())
    assert secret not in stored and token not in stored
    assert (row.name, row.scopes) == ("nightly report", ["read", "run"])
    assert timedelta(days=29) < row.expires - timezone.now() <= timedelta(days=30)

    again = alice_client.get(reverse("workflows:tokens"))
    assert again["Cache-Control"] == "no-store"
    listed = again.content.decode()
    assert token not in listed and secret not in listed
    assert f"pon_{row.prefix}_…" in listed and "never" in listed  # not used yet

    assert Client(headers=bearer(token)).get("/api/v1/me").json()["username"] == "alice"


def test_the_page_refuses_a_token_without_a_scope(alice_client):
    """A token needs at least one scope; nothing is made otherwise."""
    response = alice_client.post(reverse("workflows:tokens"), {"name": "x", "expires_in": ""})
    assert response.status_code == 400
    assert not ApiToken.objects.exists()


def test_each_use_is_noted_and_listed(alice, alice_client):
    """A request with the token notes when it was last used; the page lists it."""
    token = make_token(alice)
    row = ApiToken.objects.get()
    assert row.last_used is None
    assert Client(headers=bearer(token)).get("/api/v1/workflows").status_code == 200
    row.refresh_from_db()
    assert row.last_used is not None
    page = alice_client.get(reverse("workflows:tokens")).content.decode()
    assert row.last_used.strftime("%Y-%m-%d %H:%M") in page


def problem(response) -> dict:
    assert response["Content-Type"] == "application/problem+json", response.content
    return response.json()


def test_a_revoked_token_is_refused_with_401(alice, alice_client):
    """Revoked on its page, the token's next request is 401 token-revoked with a Bearer
    challenge; the token stays listed as revoked."""
    token = make_token(alice)
    api = Client(headers=bearer(token))
    assert api.get("/api/v1/workflows").status_code == 200
    row = ApiToken.objects.get()
    alice_client.post(reverse("workflows:token-revoke", args=[row.pk]))
    response = api.get("/api/v1/workflows")
    assert response.status_code == 401
    assert problem(response)["type"] == "/api/v1/problems/token-revoked"
    assert response["WWW-Authenticate"].startswith('Bearer realm="PowerOn", error="invalid_token"')
    assert "Revoked" in alice_client.get(reverse("workflows:tokens")).content.decode()


def test_an_expired_token_is_refused_with_401(alice):
    """Past its expiry, a token is refused with 401 token-expired."""
    token = make_token(alice, expires=timezone.now() + timedelta(hours=1))
    ApiToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    response = Client(headers=bearer(token)).get("/api/v1/me")
    assert response.status_code == 401
    assert problem(response)["type"] == "/api/v1/problems/token-expired"


@pytest.mark.parametrize(
    "header",
    [
        "Bearer pon_aaaaaaaaaa_not-a-token-of-this-site",
        "Bearer something-else",
        "Basic YWxpY2U6YWxpY2UtcGFzcy0xMjM=",
        "Bearer ",
    ],
)
def test_a_wrong_or_malformed_token_is_refused_with_401(alice, header):
    """An unknown token, one of another shape, or another scheme is a 401 (never the
    session's, never a 500)."""
    make_token(alice)
    response = Client(headers={"Authorization": header}).get("/api/v1/workflows")
    assert response.status_code == 401
    assert problem(response)["type"] in {
        "/api/v1/problems/token-invalid",
        "/api/v1/problems/unauthenticated",
    }
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_guessed_token_with_a_real_prefix_is_refused(alice):
    """The prefix finds the row, but only the whole token's digest opens it."""
    token = make_token(alice)
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    response = Client(headers=bearer(forged)).get("/api/v1/me")
    assert problem(response)["type"] == "/api/v1/problems/token-invalid"


def test_the_token_of_a_disabled_account_is_refused(alice):
    token = make_token(alice)
    alice.is_active = False
    alice.save()
    response = Client(headers=bearer(token)).get("/api/v1/me")
    assert response.status_code == 401


def test_a_read_token_cannot_change_anything_and_a_run_token_cannot_read(alice):
    """Scopes: `read` sees, `run` changes; the other is 403 insufficient-scope naming the
    scope needed, and nothing is stored."""
    reader = Client(headers=bearer(make_token(alice, "read")))
    runner = Client(headers=bearer(make_token(alice, "run")))
    refused = reader.post("/api/v1/workflows", {"title": "x"}, content_type="application/json")
    assert refused.status_code == 403
    body = problem(refused)
    assert (body["type"], body["scope"]) == ("/api/v1/problems/insufficient-scope", "run")
    assert 'error="insufficient_scope", scope="run"' in refused["WWW-Authenticate"]
    assert not alice.workflows.exists()
    assert runner.get("/api/v1/workflows").status_code == 403
    assert reader.get("/api/v1/workflows").status_code == 200
    created = runner.post("/api/v1/workflows", {"title": "x"}, content_type="application/json")
    assert created.status_code == 201


def test_a_token_makes_so_many_requests_a_minute(alice, settings):
    """Past POWERON_API_REQUESTS_PER_MINUTE a token's requests are 429 with Retry-After
    (at most a minute); another token of the same user has its own count."""
    settings.POWERON_API_REQUESTS_PER_MINUTE = 2
    first = Client(headers=bearer(make_token(alice)))
    assert [first.get("/api/v1/me").status_code for _ in range(2)] == [200, 200]
    refused = first.get("/api/v1/me")
    assert refused.status_code == 429
    body = problem(refused)
    assert body["type"] == "/api/v1/problems/rate-limited"
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert body["retryAfter"] == int(refused["Retry-After"])
    assert Client(headers=bearer(make_token(alice))).get("/api/v1/me").status_code == 200


def test_a_new_minute_counts_afresh(alice, settings):
    """The count is per minute: a token whose minute has passed may go on."""
    settings.POWERON_API_REQUESTS_PER_MINUTE = 1
    api = Client(headers=bearer(make_token(alice)))
    assert api.get("/api/v1/me").status_code == 200
    assert api.get("/api/v1/me").status_code == 429
    ApiToken.objects.update(window_start=timezone.now() - timedelta(minutes=2))
    assert api.get("/api/v1/me").status_code == 200


def test_the_session_reads_and_needs_csrf_to_change(alice):
    """A signed-in browser may call the API with its session: reads as they are, changes
    only with the CSRF token (as the page's forms); without credentials it is 401."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    assert browser.get("/api/v1/workflows").status_code == 200
    refused = browser.post("/api/v1/workflows", {}, content_type="application/json")
    assert refused.status_code == 403
    assert problem(refused)["type"] == "/api/v1/problems/csrf-failed"
    browser.get(reverse("workflows:tokens"))  # sets the CSRF cookie
    csrf = browser.cookies["csrftoken"].value
    made = browser.post(
        "/api/v1/workflows", {}, content_type="application/json", headers={"X-CSRFToken": csrf}
    )
    assert made.status_code == 201
    assert Client().get("/api/v1/workflows").status_code == 401


def test_a_bearer_request_needs_no_csrf_token(alice):
    """A program's request is no browser's: with a token it needs no CSRF token."""
    api = Client(enforce_csrf_checks=True, headers=bearer(make_token(alice)))
    assert api.post("/api/v1/workflows", {}, content_type="application/json").status_code == 201


def test_nobody_revokes_another_users_token(alice, bob):
    token = make_token(alice)
    row = ApiToken.objects.get()
    stranger = Client()
    stranger.force_login(bob)
    assert stranger.post(reverse("workflows:token-revoke", args=[row.pk])).status_code == 404
    assert stranger.get(reverse("workflows:tokens")).content.decode().count(row.prefix) == 0
    assert Client(headers=bearer(token)).get("/api/v1/me").status_code == 200


def test_staff_see_and_revoke_tokens_in_admin_without_any_secret(alice, admin_client):
    """Admin lists every token with its owner, scopes and use, shows neither the token nor
    its digest, makes none, and revokes a selection."""
    token = make_token(alice)
    row = ApiToken.objects.get()
    listing = admin_client.get(reverse("admin:workflows_apitoken_changelist")).content.decode()
    assert row.prefix in listing and "alice" in listing
    change = admin_client.get(reverse("admin:workflows_apitoken_change", args=[row.pk]))
    for page in (listing, change.content.decode()):
        assert row.digest not in page and token not in page
    assert admin_client.get(reverse("admin:workflows_apitoken_add")).status_code == 403
    filtered = admin_client.get(
        reverse("admin:workflows_apitoken_changelist"), {"digest__startswith": row.digest[:2]}
    )
    assert row.prefix not in filtered.content.decode()  # no yes/no questions about it
    admin_client.post(
        reverse("admin:workflows_apitoken_changelist"),
        {"action": "revoke_tokens", "_selected_action": [row.pk]},
    )
    response = Client(headers=bearer(token)).get("/api/v1/me")
    assert problem(response)["type"] == "/api/v1/problems/token-revoked"
