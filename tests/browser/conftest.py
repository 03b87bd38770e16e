"""What every browser test needs: Debian's Chromium driven by Playwright against a real Daphne
on its own SQLite file, and the fake model server (helpers in tests/support/browser.py).

Screenshots are saved under test-artifacts/ for people to look at. Every page fails its test
on a Content-Security-Policy violation or an out-of-band swap that found no target.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.apps import AppProcesses, app_env
from tests.support.browser import ARTIFACTS
from tests.support.fake_openai import FakeOpenAIServer

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_chromium() -> None:
    if Path(CHROMIUM).exists():
        return
    message = f"{CHROMIUM} is missing (make test installs Debian's chromium)"
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def app_url(model, tmp_path, request) -> Iterator[str]:
    """A real Daphne serving the app on a fresh SQLite database, talking to the fake model
    (with the settings of an indirect parameter, if any)."""
    extra = getattr(request, "param", {})
    env = app_env(tmp_path, model.url, POWERON_LLM_MODEL="fake-model", **extra)
    app = AppProcesses(env, tmp_path)
    try:
        yield f"http://127.0.0.1:{app.web()}"
    finally:
        app.stop()
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(app.logs[0], ARTIFACTS / "daphne.log")


OOB_WATCH = """
window.__oobMisses = [];
document.addEventListener("htmx:oobErrorNoTarget", (e) => {
  window.__oobMisses.push(e.detail.content.id || e.detail.content.outerHTML.slice(0, 80));
});
"""


CSP_WATCH = """
document.addEventListener("securitypolicyviolation", (e) => {
  window.__reportCsp(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} ` +
    `at ${e.sourceFile}:${e.lineNumber} ${e.sample || ""}`);
});
"""


@pytest.fixture
def page(app_url):
    require_chromium()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(
            viewport={"width": 1280, "height": 900}, accept_downloads=True
        )
        context.add_init_script(OOB_WATCH)  # every out-of-band swap must find its target
        # Every Content-Security-Policy violation, on every page loaded, fails the test.
        violations: list[str] = []
        context.expose_binding("__reportCsp", lambda _source, text: violations.append(text))
        context.add_init_script(CSP_WATCH)
        page = context.new_page()
        page.on(
            "console",
            lambda m: "Content Security Policy" in m.text and violations.append(m.text),
        )
        page.set_default_timeout(60_000)  # a busy machine: a page may wait long for its turn
        try:
            yield page
            page.evaluate("() => new Promise((done) => setTimeout(done, 0))")  # flush reports
            assert violations == [], violations
        finally:
            page.screenshot(path=ARTIFACTS / "last.png")
            context.close()
            browser.close()
