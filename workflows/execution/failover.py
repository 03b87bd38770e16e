"""Failover: a process that finds another one's runs without a heartbeat for
`POWERON_FAILOVER_SECONDS`, and still pending in DBOS on that process, puts them back on
their queue, where a live process takes them (every process's watch asks every few
seconds, `launcher.watch`)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from dbos import DBOS
from django.conf import settings
from django.utils import timezone

from workflows.models import ChatWorkflow

from . import dbos_internals, durable

logger = logging.getLogger(__name__)


def watch_interval() -> float:
    """How often a process checks for runs whose process died: a quarter of the failover
    delay, within 0.5 to 5 s."""
    return min(5.0, max(0.5, settings.POWERON_FAILOVER_SECONDS / 4))


async def take_over_dead_executors() -> None:
    """Fail over the runs of a process that died and did not come back: a run whose
    heartbeat is older than POWERON_FAILOVER_SECONDS and that DBOS still holds as pending on
    another executor is put back on its queue, where a live process takes it."""
    dead = await dead_executors(exclude=durable.EXECUTOR)
    if dead:
        logger.warning("Taking over the runs of executors %s", sorted(dead))
        await asyncio.to_thread(dbos_internals.recover_pending, sorted(dead))


async def dead_executors(*, exclude: str) -> set[str]:
    """Executors holding pending runs whose heartbeat went quiet, and which they did not
    take just now: a round that waited in the queue longer than the failover delay, then
    taken by a live worker that has not beaten for it yet, is quiet only by its heartbeat
    (DBOS's own record of the take is recent)."""
    cutoff = timezone.now() - timedelta(seconds=settings.POWERON_FAILOVER_SECONDS)
    cutoff_ms = cutoff.timestamp() * 1000
    quiet = ChatWorkflow.objects.filter(
        status__in=ChatWorkflow.ACTIVE_STATUSES, heartbeat__lt=cutoff
    ).values_list("pk", "current_round", "run_id")
    dead: set[str] = set()
    async for workflow_id, round, run_id in quiet:
        found = await DBOS.get_workflow_status_async(
            durable.RunRef(workflow_id, round, run_id).dbos_id
        )
        if not found or found.status != "PENDING" or found.executor_id in (None, exclude):
            continue
        if (found.updated_at or 0) < cutoff_ms and found.executor_id is not None:
            dead.add(found.executor_id)
    return dead
