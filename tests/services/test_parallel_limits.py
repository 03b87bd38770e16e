"""The hourly limits hold on the scale-out path: PostgreSQL, Redis, two Daphnes taking the
same user's requests at once (issue 31's attack on parallel uploads and sends, across
processes: a count and an insert in different transactions let every request pass)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hardening.attacks import COUNT_ROWS, Session, parallel_sends, parallel_uploads
from tests.hardening.conftest import LiveApp, stop
from tests.support.apps import AppProcesses, app_env

pytestmark = [pytest.mark.services, pytest.mark.timeout(900)]


@pytest.fixture
def two_daphnes(postgres_url, redis_url, tmp_path) -> Iterator[tuple[LiveApp, LiveApp]]:
    env = app_env(
        tmp_path,
        "",
        DATABASE_URL=postgres_url,
        REDIS_URL=redis_url,
        SECRET_KEY="parallel-limits-test-key-" + "x" * 40,
        POWERON_DEMO_DELAY_MS="0",
        POWERON_MAX_UPLOADS_PER_HOUR="100",
        POWERON_MAX_ROUNDS_PER_HOUR="3",
        POWERON_MAX_RUNS_PER_USER="0",
    )
    processes = AppProcesses(env, tmp_path)
    try:
        first, second = processes.web(), processes.web()
        yield LiveApp(processes, first), LiveApp(processes, second)
    finally:
        stop(processes)


def stored(app: LiveApp) -> tuple[int, int]:
    uploaded, sent = app.shell(COUNT_ROWS).strip().splitlines()[-1].split()
    return int(uploaded), int(sent)


def test_parallel_uploads_through_two_daphnes_stay_within_the_limit(two_daphnes):
    """8 uploads of 60 files at once, half through each Daphne: one stored, seven 429."""
    one, two = two_daphnes
    session = Session(one.base)
    workflows = session.workflows(8)
    statuses = parallel_uploads(session, [one.base, two.base], workflows, files=60)
    assert stored(one)[0] <= 100
    assert statuses.count(200) == 1 and statuses.count(429) == 7


async def test_parallel_sends_through_two_daphnes_stay_within_the_round_limit(two_daphnes):
    """8 messages at once, in 8 workflows, over sockets on both Daphnes: 3 rounds start."""
    one, two = two_daphnes
    session = Session(one.base)
    workflows = session.workflows(8)
    sockets = [
        (one if index % 2 else two).socket_url(workflow, "format=json")
        for index, workflow in enumerate(workflows)
    ]
    heard = await parallel_sends(session, sockets, "Hello")
    assert heard.count("started") == 3, heard
    assert stored(one)[1] == 3
