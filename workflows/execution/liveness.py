"""A running round's liveness: its heartbeat (so failover and `settle_runs` leave a live run
alone), and the stop that reaches it, by a control message on the channel layer or, when the
layer drops it, by its workflow's status."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from django.conf import settings
from django.utils import timezone

from workflows.events import broadcast, outage
from workflows.models import ChatWorkflow

logger = logging.getLogger(__name__)

STOP_CHECK_SECONDS = 2
LISTEN_RETRY_SECONDS = 1.0


class Liveness:
    """Beats for a round and watches for its stop; `stop` is called once a stop arrives."""

    def __init__(self, workflow_id: int, stop: Callable[[], None]) -> None:
        self.workflow_id = workflow_id
        self.stop = stop
        self.tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        """Begin listening for a stop and beating, beside the round."""
        self.tasks = [asyncio.create_task(self.listen()), asyncio.create_task(self.beat())]

    def cancel(self) -> None:
        """Stop listening and beating (the round is ending)."""
        for task in self.tasks:
            task.cancel()

    async def listen(self) -> None:
        """Receive control messages for this workflow; a stop cancels the whole round. The
        layer may fail: listen again (a stop also reaches the run through its status)."""
        group = broadcast.control_group(self.workflow_id)
        while True:
            channel = ""
            try:
                layer = broadcast.channel_layer()
                channel = await layer.new_channel()
                await layer.group_add(group, channel)
                while True:
                    command = await layer.receive(channel)
                    if command.get("action") == "stop":
                        self.stop()
                        return
            except Exception as error:  # said once per outage
                outage.failed(f"control channel of workflow {self.workflow_id}", error)
                await asyncio.sleep(LISTEN_RETRY_SECONDS)
            finally:
                if channel:
                    await asyncio.shield(leave(group, channel))

    async def beat(self) -> None:
        """Show the run is alive (failover and `settle_runs` leave it alone); and stop it when
        its status says "stopping" (the layer may drop the stop message)."""
        workflow = ChatWorkflow.objects.filter(pk=self.workflow_id)
        # Three beats fit in the failover delay: a live run is never taken for a dead one.
        beat = max(0.5, min(10.0, settings.POWERON_FAILOVER_SECONDS / 3))
        check = min(STOP_CHECK_SECONDS, beat)
        while True:
            await workflow.aupdate(heartbeat=timezone.now())
            for _ in range(max(1, round(beat / check))):
                await asyncio.sleep(check)
                if await workflow.filter(status=ChatWorkflow.Status.STOPPING).aexists():
                    self.stop()
                    return


async def leave(group: str, channel: str) -> None:
    """Leave a control group; a layer that is down is only logged (its entries expire)."""
    try:
        await broadcast.channel_layer().group_discard(group, channel)
    except Exception as error:  # the layer is down; its group entries expire
        outage.failed(f"could not leave {group}", error)
