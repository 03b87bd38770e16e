"""A strict Content-Security-Policy and the headers around it, and templates that need no
'unsafe-inline' or 'unsafe-eval' (the browser test checks the same live, with 0 violations)."""

import html
import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from workflows.markdown import render_markdown_for_page

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def test_every_page_carries_a_strict_policy(alice_client):
    """Pages say where scripts, styles and sockets may come from: the app's origin only."""
    response = alice_client.get(reverse("workflows:home"))
    policy = dict(
        directive.strip().split(" ", 1)
        for directive in response.headers["Content-Security-Policy"].split(";")
    )
    assert policy["default-src"] == policy["script-src"] == policy["style-src"] == "'self'"
    assert policy["connect-src"] == "'self'"
    assert policy["object-src"] == policy["base-uri"] == policy["frame-ancestors"] == "'none'"
    assert "unsafe" not in response.headers["Content-Security-Policy"]


def test_referrer_permissions_and_sniffing_are_locked_down(client):
    """Even the sign-in page sends the Referrer-, Permissions- and nosniff headers."""
    response = client.get(reverse("login"))
    assert response.headers["Referrer-Policy"] == "same-origin"
    assert "camera=()" in response.headers["Permissions-Policy"]
    assert "microphone=()" in response.headers["Permissions-Policy"]
    assert "geolocation=()" in response.headers["Permissions-Policy"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "Content-Security-Policy" in response.headers


def test_htmx_runs_without_eval_or_script_tags(client):
    """The htmx-config meta turns off eval, scripts in swapped HTML and injected styles."""
    page = client.get(reverse("login")).content.decode()
    meta = re.search(r"<meta name=\"htmx-config\" content='([^']*)'>", page)
    assert meta, "base.html lost its htmx-config"
    config = json.loads(html.unescape(meta.group(1)))
    assert config == {
        "allowEval": False,
        "allowScriptTags": False,
        "includeIndicatorStyles": False,
    }


INLINE = {
    "event handler attribute": re.compile(r"\son[a-z]+\s*=", re.I),
    "style attribute": re.compile(r"\sstyle\s*=", re.I),
    "inline script": re.compile(r"<script(?![^>]*\ssrc=)[^>]*>", re.I),
    "style element": re.compile(r"<style[\s>]", re.I),
    "javascript: URL": re.compile(r"javascript:", re.I),
}


@pytest.mark.parametrize(
    "template", sorted(TEMPLATES.rglob("*.html")), ids=lambda path: str(path.relative_to(TEMPLATES))
)
def test_templates_have_nothing_inline(template):
    """No template holds what the policy would block: handlers, styles, inline scripts."""
    text = template.read_text()
    found = [name for name, pattern in INLINE.items() if pattern.search(text)]
    assert found == []


def test_markdown_table_alignment_becomes_a_class():
    """Table alignment reaches the page as a class, never as a style attribute."""
    page = render_markdown_for_page("| a | b | c |\n|:--|--:|:-:|\n| 1 | 2 | 3 |")
    assert '<td class="align-left">1</td>' in page
    assert '<td class="align-right">2</td>' in page
    assert '<th class="align-center">c</th>' in page
    assert "style=" not in page


def test_debug_error_pages_keep_their_inline_styles(alice_client, settings):
    """Under DEBUG (`make run`) Django's inline-styled error pages are left without the
    policy; every other response keeps it."""
    settings.DEBUG = True
    missing = alice_client.get("/no-such-page/")
    assert missing.status_code == 404
    assert "Content-Security-Policy" not in missing.headers
    assert "Content-Security-Policy" in alice_client.get(reverse("workflows:home")).headers
    settings.DEBUG = False
    assert "Content-Security-Policy" in alice_client.get("/no-such-page/").headers
