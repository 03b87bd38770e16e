"""The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
package.json) against PowerOn's /mcp on a real Daphne: its active suite at the 2025-11-25 wire
(lifecycle and sessions, ping, logging, completion, tools and resources lists, SSE streams,
DNS rebinding) and the 2026-07-28 requirements (stateless requests, headers, caching, JSON-RPC
errors), both with the baseline of scenarios that call the suite's own fixtures by name.

The suite's client sends no credentials, so it talks to the app through a loopback proxy that
adds alice's token to every request, as a desktop client configured with the header does;
Host and Origin pass unchanged, so DNS-rebinding protection is the app's own."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.mcp_server.live import SLOW
from tests.support.apps import ROOT
from tests.support.header_proxy import HeaderProxy

# Starting the package's app (several Django processes) is charged to the first test.
pytestmark = pytest.mark.timeout(600)

HERE = Path(__file__).parent
BASELINE = HERE / "conformance-baseline.yml"
SUITE = ROOT / "node_modules/@modelcontextprotocol/conformance/dist/index.js"
# The suite needs Node 22 (fs.globSync); the node package pinned beside it brings one.
NODE = ROOT / "node_modules/.bin/node"
PASSES = {
    "2025-11-25": [],
    "2026-07-28": ["--requirements", "2026-07-28"],
}


@pytest.fixture(scope="module")
def proxied(live, tmp_path_factory):
    """The app with a workflow of alice's (so resources exist to list and read), behind the
    proxy that sends her token."""
    assert SUITE.is_file() and NODE.is_file(), "run `make setup-node` first"
    token = live.alice.tokens["read+run"]
    with live.api(token) as api:
        made = api.post("/workflows", json={"title": "Listed", "mode": "react"})
        assert made.status_code == 201, made.text
    with HeaderProxy(live.base, {"Authorization": f"Bearer {token}"}) as proxy:
        yield live, proxy, tmp_path_factory.mktemp("conformance")


def test_the_conformance_suite_passes_with_its_fixture_baseline(proxied):
    """Both passes exit 0: every scenario passes except those in the baseline, and every
    baselined one still fails (a stale entry fails the run too). The passes run side by side."""
    app, proxy, tmp_path = proxied
    logs = {version: tmp_path / f"conformance-{version}.log" for version in PASSES}
    runs = {}
    for version, extra in PASSES.items():
        command = [
            *(str(NODE), str(SUITE), "server", "--url", f"{proxy.url}/mcp"),
            *("--expected-failures", str(BASELINE), "-o", str(tmp_path / version), *extra),
        ]
        with logs[version].open("w") as log:
            runs[version] = subprocess.Popen(command, cwd=tmp_path, stdout=log, stderr=log)
    failed = {
        version: logs[version].read_text()[-3000:] + failures(tmp_path / version)
        for version, run in runs.items()
        if run.wait(timeout=600) != 0
    }
    assert not failed, "\n\n".join(f"== {v}\n{text}" for v, text in failed.items())


def failures(results: Path) -> str:
    """Every check that did not pass, with its message (the log's summary names only the
    scenario)."""
    lines = []
    for checks in sorted(results.glob("*/checks.json")):
        for check in json.loads(checks.read_text()):
            if check["status"] in ("FAILURE", "WARNING"):
                said = (check.get("errorMessage") or "")[:300]
                lines.append(f"{checks.parent.name}: {check['id']} {check['status']} {said}")
    return "\n" + "\n".join(lines)


def test_without_the_proxy_the_suite_gets_no_further_than_a_401(proxied):
    """The endpoint the suite passed through the proxy refuses the same request without a
    token: 401 with a Bearer challenge."""
    app, _, _ = proxied
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    refused = httpx.post(app.url, json=hello, timeout=SLOW)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith('Bearer realm="PowerOn"')
