"""What the AG-UI endpoint remembers: each AG-UI run it served, with the workflow (the
thread) and round it is, and the seq its events start after, so a thread goes on in its
workflow, an interrupted run is resumed by the next, and a run asked for again is replayed."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AguiRun(models.Model):
    """One AG-UI run (`threadId`, `runId` as the client sent them) of a user: a round of a
    workflow, started or resumed by it, whose events are those after `after`."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agui_runs"
    )
    thread_id = models.CharField(max_length=200)
    run_id = models.CharField(max_length=200)
    workflow = models.ForeignKey(
        "workflows.ChatWorkflow", on_delete=models.CASCADE, related_name="agui_runs"
    )
    round = models.PositiveIntegerField()
    after = models.PositiveBigIntegerField(
        help_text="The seq after which the run's events begin (a resumed run: its interrupt's)."
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "AG-UI run"
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "thread_id", "run_id"], name="agui_run_once_per_thread"
            )
        ]
        indexes = [models.Index(fields=["owner", "thread_id", "-created"])]

    def __str__(self) -> str:
        return f"{self.thread_id} / {self.run_id}: workflow {self.workflow_id}, round {self.round}"
