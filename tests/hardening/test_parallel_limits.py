"""The hourly limits hold however many requests arrive at once (issue 31: 8 simultaneous
60-file uploads stored 480 files against a limit of 100): on SQLite, one Daphne whose sync
views run in a thread per request; on PostgreSQL, two Daphnes (tests/services)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .attacks import COUNT_ROWS, Session, parallel_sends, parallel_uploads
from .conftest import LiveApp, start_app, stop

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def limited_app(tmp_path_factory) -> Iterator[LiveApp]:
    app = start_app(
        tmp_path_factory.mktemp("limits"),
        POWERON_DEMO_DELAY_MS="0",
        POWERON_MAX_UPLOADS_PER_HOUR="100",
        POWERON_MAX_ROUNDS_PER_HOUR="3",
        POWERON_MAX_RUNS_PER_USER="0",
    )
    try:
        yield app
    finally:
        stop(app.processes)


def stored(app: LiveApp) -> tuple[int, int]:
    """(uploaded documents, user messages) in the app's database."""
    uploaded, sent = app.shell(COUNT_ROWS).strip().splitlines()[-1].split()
    return int(uploaded), int(sent)


def test_parallel_uploads_stay_within_the_hourly_limit(limited_app: LiveApp):
    """8 uploads of 60 files at once: 100 files stored at most, the others refused with 429
    (one upload of 60 fits, a second would pass 100)."""
    session = Session(limited_app.base)
    workflows = session.workflows(8)
    statuses = parallel_uploads(session, [limited_app.base], workflows, files=60)
    uploaded, _ = stored(limited_app)
    assert uploaded <= 100
    assert statuses.count(200) == 1 and statuses.count(429) == 7


async def test_parallel_sends_stay_within_the_hourly_round_limit(limited_app: LiveApp):
    """8 messages sent at once in 8 workflows, 3 rounds an hour: 3 start, 5 are refused."""
    session = Session(limited_app.base)
    workflows = session.workflows(8)
    heard = await parallel_sends(
        session, [limited_app.socket_url(w, "format=json") for w in workflows], "Hello"
    )
    assert heard.count("started") == 3, heard
    assert all(h.startswith("refused: Too many messages") for h in heard if h != "started")
    assert stored(limited_app)[1] == 3
