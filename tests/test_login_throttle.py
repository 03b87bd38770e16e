"""Login throttling: after too many failed sign-ins for one username from one address,
signing in is refused for a cool-off, even with the right password."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.urls import reverse
from django.utils import timezone

pytestmark = pytest.mark.django_db


def sign_in(client, password: str, *, ip: str = "192.0.2.10"):
    return client.post(
        reverse("login"), {"username": "alice", "password": password}, REMOTE_ADDR=ip
    )


def test_failed_sign_ins_lock_the_username_from_that_address(client, alice, settings):
    """After the limit of wrong passwords the right one is refused with 429 and a message
    saying for how long; nothing signs in."""
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(3):
        assert sign_in(client, "wrong").status_code in (200, 429)
    refused = sign_in(client, "alice-pass-123")
    assert refused.status_code == 429
    text = refused.content.decode()
    assert "Too many failed sign-ins" in text
    assert "for 15 minutes, even with the right password" in text
    assert client.get(reverse("workflows:home")).status_code == 302


def test_the_lock_is_per_address(client, alice, settings):
    """Failures from one address do not lock out the same user signing in from another."""
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(3):
        sign_in(client, "wrong", ip="192.0.2.10")
    assert sign_in(client, "alice-pass-123", ip="198.51.100.20").status_code == 302


def test_a_success_before_the_limit_resets_the_count(client, alice, settings):
    """Wrong, wrong, right, then wrong twice more: still under the limit of 3."""
    settings.AXES_FAILURE_LIMIT = 3
    sign_in(client, "wrong")
    sign_in(client, "wrong")
    assert sign_in(client, "alice-pass-123").status_code == 302
    client.post(reverse("logout"))
    sign_in(client, "wrong")
    sign_in(client, "wrong")
    assert sign_in(client, "alice-pass-123").status_code == 302


def test_the_cool_off_ends(client, alice, settings):
    """Once the cool-off has passed, the right password signs in again."""
    settings.AXES_FAILURE_LIMIT = 2
    for _ in range(2):
        sign_in(client, "wrong")
    assert sign_in(client, "alice-pass-123").status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(hours=1))
    assert sign_in(client, "alice-pass-123").status_code == 302


def test_every_skip_link_has_its_target(client, alice_client, alice, settings):
    """ "Skip to content" leads somewhere on every page: the sign-in page, the refusal after
    too many failures, and the signed-in pages."""
    import re

    from workflows import services

    settings.AXES_FAILURE_LIMIT = 1
    workflow = services.workflow_create(owner=alice)
    pages = [
        client.get(reverse("login")),
        sign_in(client, "wrong"),
        alice_client.get(reverse("workflows:home")),
        alice_client.get(workflow.get_absolute_url()),
        alice_client.get(reverse("workflows:connections")),
    ]
    for page in pages:
        html = page.content.decode()
        targets = re.findall(r'class="skip-link" href="#([\w-]+)"', html)
        assert targets, page.request["PATH_INFO"]
        for target in targets:
            assert f'id="{target}"' in html, (page.request["PATH_INFO"], target)
