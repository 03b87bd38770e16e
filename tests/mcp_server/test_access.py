"""Who may use /mcp and what: a token on every request (401 with a challenge otherwise),
the token's scopes per tool, the site's own Host and Origin only, a session bound to its
token, and each user's own workflows, documents and runs only."""

from __future__ import annotations

import re

import httpx
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.api.live_app import make_token
from tests.mcp_server.live import SLOW, connected, sign_in

# Starting the package's app (several Django processes) is charged to the first test.
pytestmark = pytest.mark.timeout(300)

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def owned(live):
    """A workflow of alice's holding an uploaded document (made through the HTTP API: no
    round is needed to own something): (workflow id, document id)."""
    with live.api(live.alice.tokens["read+run"]) as api:
        workflow = api.post("/workflows", json={"title": "Alice's", "mode": "react"}).json()
        uploaded = api.post(
            f"/workflows/{workflow['id']}/uploads",
            files={"files": ("plan.txt", b"alice's plan", "text/plain")},
        )
    assert uploaded.status_code == 201, uploaded.text
    return workflow["id"], uploaded.json()["documents"][0]["id"]


def post(live, body: dict, **headers: str) -> httpx.Response:
    return httpx.post(live.url, json=body, headers={**HEADERS, **headers}, timeout=SLOW)


@pytest.mark.parametrize(
    ("authorization", "error"),
    [
        (None, None),
        ("Basic YWxpY2U6cHc=", "invalid_request"),
        ("Bearer pon_aaaaaaaaaa_not-a-token", "invalid_token"),
    ],
)
def test_without_a_valid_token_the_answer_is_401_with_a_challenge(live, authorization, error):
    """No token, another scheme, an unknown token: 401 and WWW-Authenticate naming the
    realm (and the error, when a credential was sent)."""
    headers = {"Authorization": authorization} if authorization else {}
    refused = post(live, INITIALIZE, **headers)
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="PowerOn"')
    assert (f'error="{error}"' in challenge) if error else ("error=" not in challenge)


def test_a_revoked_token_is_refused(live):
    """A token revoked on the tokens page opens nothing any more."""
    with httpx.Client(base_url=live.base, timeout=SLOW) as browser:
        sign_in(browser, "alice")
        token = make_token(browser, ["read"])
        assert post(live, INITIALIZE, Authorization=f"Bearer {token}").status_code == 200
        page = browser.get("/tokens/").text
        newest = max(int(found) for found in re.findall(r"/tokens/(\d+)/revoke/", page))
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
        browser.post(f"/tokens/{newest}/revoke/", data={"csrfmiddlewaretoken": csrf})
    refused = post(live, INITIALIZE, Authorization=f"Bearer {token}")
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]


def test_a_foreign_origin_is_refused_and_the_sites_own_is_not(live):
    """DNS rebinding and cross-site pages: an Origin other than the site's is 403 before
    anything else; the site's own origin, or no Origin (a program), passes."""
    token = f"Bearer {live.alice.tokens['read']}"
    foreign = post(live, INITIALIZE, Authorization=token, Origin="http://evil.example")
    assert foreign.status_code == 403
    assert post(live, INITIALIZE, Authorization=token, Origin=live.base).status_code == 200
    assert post(live, INITIALIZE, Authorization=token).status_code == 200


def test_a_host_that_is_not_the_site_is_refused(live):
    """A Host outside ALLOWED_HOSTS (a rebound name) is 400, token or not."""
    token = f"Bearer {live.alice.tokens['read']}"
    assert post(live, PING, Authorization=token, Host="evil.example").status_code == 400


def test_a_session_is_bound_to_the_token_that_opened_it(live):
    """bob's token cannot use alice's session: it does not exist for him (404)."""
    opened = post(live, INITIALIZE, Authorization=f"Bearer {live.alice.tokens['read']}")
    session = opened.headers["mcp-session-id"]
    hijack = post(
        live,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        Authorization=f"Bearer {live.bob.tokens['read']}",
        **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"},
    )
    assert hijack.status_code == 404


async def test_each_tool_needs_its_scope(live, owned):
    """A read token may list but not run or stop; a run token may run but not list: the
    refusal is a tool error naming the scope."""
    workflow, _ = owned
    async with connected(live.url, live.alice.tokens["read"], mode="legacy") as reader:
        listed = await reader.call_tool("list_workflows", {})
        running = await reader.call_tool("run_task", {"task": "Hello"})
        stopping = await reader.call_tool("stop_run", {"workflow": workflow})
    async with connected(live.url, live.alice.tokens["run"], mode="legacy") as runner:
        reading = await runner.call_tool("get_workflow", {"workflow": workflow})
        resources = await runner.list_resources()
    assert not listed.is_error
    assert workflow in [w["id"] for w in listed.structured_content["workflows"]]
    for refused, scope in ((running, "run"), (stopping, "run"), (reading, "read")):
        assert refused.is_error and f"the scope '{scope}'" in refused.content[0].text
    assert resources.resources == []


async def test_another_users_workflows_do_not_exist_for_bob(live, owned):
    """bob lists none of alice's workflows, cannot read, continue or stop hers, and her
    resources are "not found" for him."""
    workflow, document_id = owned
    export = f"poweron://workflows/{workflow}/export.md"
    document = f"poweron://workflows/{workflow}/documents/{document_id}"
    async with connected(live.url, live.bob.tokens["read+run"], mode="legacy") as bob:
        listed = await bob.call_tool("list_workflows", {})
        got = await bob.call_tool("get_workflow", {"workflow": workflow})
        continued = await bob.call_tool("run_task", {"task": "Hi", "workflow": workflow})
        stopped = await bob.call_tool("stop_run", {"workflow": workflow})
        resources = await bob.list_resources()
        unread = []
        for uri in (export, document):
            with pytest.raises(MCPError) as refused:
                await bob.read_resource(uri)
            unread.append(refused.value.code)
    assert listed.structured_content["count"] == 0 and resources.resources == []
    for refused in (got, continued, stopped):
        assert refused.is_error
        assert refused.content[0].text == f"You have no workflow {workflow}."
    assert unread == [types.INVALID_PARAMS, types.INVALID_PARAMS]
    async with connected(live.url, live.alice.tokens["read"], mode="legacy") as alice:
        mine = await alice.read_resource(document)
    assert mine.contents[0].text == "alice's plan"
