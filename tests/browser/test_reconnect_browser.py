"""The page after its server restarts (same port, same database): it says it is
reconnecting (the run's activity line too, which stops counting), connects again as soon as
the server answers, and resumes after the last event it holds: nothing twice, nothing
missed, and the next round streams live.

The time from the server answering to the page being live again is printed, not asserted
(the machine may be busy); the page retries at most every 1.5 s (static/js/connection.js).
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator

import pytest

from tests.support.apps import AppProcesses, app_env, wait_for_port
from tests.support.browser import attach, send, settled_everywhere, sign_in_to_new_workflow
from tests.support.replies import extract_step, stop, taskplan

pytestmark = pytest.mark.browser

NOTES = "# Notes\n\nRevenue grew 12 percent in Q3.\n"
APPROVAL = {"POWERON_APPROVAL_METHODS": "document.extract"}


@pytest.fixture
def app(model, tmp_path) -> Iterator[AppProcesses]:
    """A Daphne on its own database that the test can restart."""
    env = app_env(tmp_path, model.url, POWERON_LLM_MODEL="fake-model", **APPROVAL)
    processes = AppProcesses(env, tmp_path)
    try:
        processes.web()
        yield processes
    finally:
        processes.stop()


@pytest.fixture
def app_url(app) -> str:
    return f"http://127.0.0.1:{app.ports[0]}"


def stop_server(app: AppProcesses, page, *, crash: bool) -> None:
    """Stop the server (a crash: SIGKILL; else SIGTERM); the page says it is reconnecting."""
    server = app.processes[-1]
    server.send_signal(signal.SIGKILL if crash else signal.SIGTERM)
    server.wait(timeout=30)
    page.wait_for_selector("#live[data-connection=reconnecting]")
    assert page.get_attribute("#connection", "data-state") == "reconnecting"


def start_server(app: AppProcesses, page) -> float:
    """Start the server again on the same port and database; the seconds from it listening
    to the page being live again (printed)."""
    port = app.ports[0]
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    wait_for_port(port, app.start([*command, "poweron.asgi:application"]))
    answered = time.monotonic()
    page.wait_for_selector("#live[data-connection=live]", timeout=60_000)
    seconds = time.monotonic() - answered
    print(f"reconnected {seconds:.2f} s after the server answered")
    return seconds


def test_the_page_reconnects_after_a_restart_and_resumes_by_seq(
    page, app, app_url, model, tmp_path
):
    sign_in_to_new_workflow(page, app_url)
    attach(page, tmp_path, NOTES)
    first = [taskplan("Summarise"), *extract_step("docList:round1_upload"), stop(), "One."]
    model.add(*first)
    send(page, "Summarise my notes")
    page.wait_for_selector(".approval-waiting")
    page.click(".approval button:has-text('Approve')")
    page.wait_for_selector("#wf-status[data-status=completed]")

    # Restarted while nothing runs: back, with nothing replayed twice.
    stop_server(app, page, crash=False)
    start_server(app, page)
    assert page.locator("details.step").count() == 1
    assert page.locator("#timeline .message-user").count() == 1

    # Crashed while a run waits for an approval: the activity line says it is reconnecting
    # and stops counting; back, the run goes on from where it was.
    second = [taskplan("Again"), *extract_step("docList:round1_upload"), stop(), "Two."]
    model.add(*second)
    send(page, "Summarise them again")
    page.wait_for_selector("#step-2-1-1 .approval-waiting")
    page.wait_for_selector("#activity:has-text('Waiting for your approval')")
    stop_server(app, page, crash=True)
    page.wait_for_selector("#activity[data-reconnecting]")
    assert page.inner_text("#activity") == "Reconnecting to the server…"  # no seconds counted
    start_server(app, page)
    page.wait_for_selector("#activity:not([data-reconnecting])")
    assert "Reconnecting" not in page.inner_text("#activity")
    page.wait_for_selector("#step-2-1-1 .approval-waiting")
    page.click("#step-2-1-1 .approval button:has-text('Approve')")
    page.wait_for_selector("#round-2-status.status-completed")
    assert page.locator("details.step").count() == 2
    assert page.locator("#timeline .message-user").count() == 2
    assert "Two." in page.inner_text("#answer-slot-2")
    settled_everywhere(page)
