"""The page draws a long workflow whose replay comes a page at a time: it asks for each next
page by itself, and shows every stored event once, in order, with no toast for the pages."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support.apps import ROOT, AppProcesses, app_env
from tests.support.browser import replayed, sign_in_to_new_workflow

pytestmark = pytest.mark.browser

STEERED = """
from workflows.engine.records.events import MessageEvent, StatusEvent
from workflows.events.log import NewEvent, events_append
opened = MessageEvent(round=1, key="u1", role="user", content="Take notes")
notes = [StatusEvent(round=1, code="info", reason=f"Note {n}") for n in range(23)]
events_append(workflow_id={workflow}, events=[NewEvent(e) for e in [opened, *notes]])
"""


@pytest.fixture
def app(model, tmp_path) -> Iterator[AppProcesses]:
    """A Daphne replaying five events a page."""
    env = app_env(tmp_path, model.url, POWERON_LLM_MODEL="fake-model", POWERON_REPLAY_PAGE="5")
    processes = AppProcesses(env, tmp_path)
    try:
        processes.web()
        yield processes
    finally:
        processes.stop()


@pytest.fixture
def app_url(app) -> str:
    return f"http://127.0.0.1:{app.ports[0]}"


def test_the_page_reads_a_paged_replay_to_its_end(app, app_url, page):
    """24 stored events (a message, 23 notes), 5 a page: the reloaded page reaches the last
    seq, shows each note once in order, and no toast says anything about pages."""
    sign_in_to_new_workflow(page, app_url)
    workflow = int(re.search(r"/workflows/(\d+)/", page.url)[1])
    code = STEERED.replace("{workflow}", str(workflow))
    command = [sys.executable, "manage.py", "shell", "-c", code]
    subprocess.run(command, cwd=ROOT, env=app.env, check=True, capture_output=True)
    page.reload()
    replayed(page)
    notes = page.eval_on_selector_all(
        "#round-1-tasks .notice-line", "lines => lines.map(line => line.innerText)"
    )
    assert [note.split()[-1] for note in notes] == [str(n) for n in range(23)]
    assert page.locator("#notices .toast").count() == 0
