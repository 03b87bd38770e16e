"""With DEBUG=1 (which `make run` sets) a 500 page shows the settings, the request and every
frame's variables: none of the site's secrets may be among them (issue 31: the page showed
POWERON_MCP_SERVERS in clear, with the operator's MCP headers and environment secrets)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from .conftest import LiveApp, start_app, stop

pytestmark = pytest.mark.timeout(600)

SECRETS = {
    "mcp header": "mcp-header-secret-7f3a9c",
    "mcp env": "mcp-env-secret-51be02",
    "model key": "sk-model-secret-c0ffee42",
    "small model key": "sk-small-secret-9d8e7f",
    "search key": "tvly-search-secret-a1b2c3",
    "redis password": "redis-pass-e5d4c3",
    "secret key": "a-secret-key-that-is-long-enough-" + "x" * 30,
    "old secret key": "an-old-secret-key-still-accepted-" + "y" * 30,
}
MCP_SERVERS = {
    "ops": {
        "url": "https://192.0.2.10/mcp",
        "headers": {"Authorization": f"Bearer {SECRETS['mcp header']}"},
    },
    "notes": {"command": "true", "env": {"NOTES_TOKEN": SECRETS["mcp env"]}},
}

BROKEN_EVENT = """
from workflows.models import WorkflowEvent
WorkflowEvent.objects.create(workflow_id={workflow}, seq=999, type="title", payload={{"x": 1}})
"""


@pytest.fixture(scope="module")
def debug_app(tmp_path_factory) -> Iterator[LiveApp]:
    """`make run`'s settings (DEBUG=1) with a secret in every place a site keeps one."""
    app = start_app(
        tmp_path_factory.mktemp("debug-app"),
        DEBUG="1",
        POWERON_DEMO_DELAY_MS="0",
        POWERON_MCP_SERVERS=json.dumps(MCP_SERVERS),
        POWERON_LLM_API_KEY=SECRETS["model key"],
        POWERON_LLM_API_KEY_SMALL=SECRETS["small model key"],
        POWERON_TAVILY_API_KEY=SECRETS["search key"],
        # Nothing listens there: the layer is only named (sockets are not used here).
        REDIS_URL=f"redis://:{SECRETS['redis password']}@127.0.0.1:9/0",
        SECRET_KEY=SECRETS["secret key"],
        SECRET_KEY_FALLBACKS=SECRETS["old secret key"],
    )
    try:
        yield app
    finally:
        stop(app.processes)


def test_a_debug_500_page_shows_no_secret(debug_app: LiveApp):
    """A real 500 (a stored event that no longer fits the contract, read by the export) with
    an API token in the Authorization header: Django's debug page, whole, and none of the
    secrets in it, nor the token, nor the session cookie."""
    client = debug_app.browser()
    try:
        workflow = debug_app.workflow(client)
        debug_app.shell(BROKEN_EVENT.format(workflow=workflow))
        token = "pon_abcdefghij_request-token-secret"
        page = client.get(
            f"/workflows/{workflow}/export.json",
            headers={"Authorization": f"Bearer {token}", "X-Api-Key": "header-key-secret-1"},
        )
        session = client.cookies["sessionid"]
    finally:
        client.close()
    assert page.status_code == 500
    assert "Traceback" in page.text and "POWERON_MCP_SERVERS" in page.text  # the debug page
    shown = {name: secret for name, secret in SECRETS.items() if secret in page.text}
    assert shown == {}
    for other in (token, "header-key-secret-1", session):
        assert other not in page.text
