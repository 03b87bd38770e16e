"""What PowerOn stores: workflows, their messages, documents, event timeline and the marks the
limits count; the credentials (connections, API tokens) live in `credentials` and are part
of the app's models from here."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils.functional import cached_property

from workflows.credentials import ApiToken, Connection
from workflows.engine.records.protocols import DocumentRef
from workflows.engine.records.state import MODES
from workflows.events.contract import Envelope

__all__ = [
    "ApiToken",
    "ChatDocument",
    "ChatMessage",
    "ChatWorkflow",
    "Connection",
    "Installation",
    "RateMark",
    "StepRecord",
    "WorkflowEvent",
    "default_max_steps",
    "document_upload_to",
]


def default_max_steps() -> int:
    """The configured step limit, read when a workflow is created (not at import)."""
    return settings.POWERON_MAX_STEPS


class ChatWorkflow(models.Model):
    """One conversation with the agent; each user message opens a round."""

    class Status(models.TextChoices):
        IDLE = "idle", "Idle"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        STOPPING = "stopping", "Stopping"
        STOPPED = "stopped", "Stopped"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"

    # django-stubs types the functional API's members without their labels.
    Mode = models.TextChoices("Mode", [(m.upper(), (m, m.capitalize())) for m in MODES])  # type: ignore[call-overload]

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING, Status.STOPPING)

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workflows"
    )
    title = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    status_reason = models.TextField(
        blank=True, help_text="Why the last run ended as it did (shown to the user)."
    )
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.REACT)
    max_steps = models.PositiveSmallIntegerField(default=default_max_steps)
    current_round = models.PositiveIntegerField(default=0)
    current_task = models.PositiveIntegerField(default=0)
    current_action = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(
        max_digits=20,
        decimal_places=9,
        default=0,
        help_text="What the workflow's model calls of known price cost, in cost_currency.",
    )
    cost_currency = models.CharField(
        max_length=8, blank=True, help_text="Empty until a model call of known price is stored."
    )
    last_seq = models.PositiveBigIntegerField(
        default=0, help_text="The seq of the newest stored event."
    )
    heartbeat = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life of the run (to find cut-off runs)."
    )
    run_id = models.UUIDField(
        null=True,
        blank=True,
        editable=False,
        help_text="The current round's durable run, new for every round: no other round, in "
        "this database or another, has it. Empty for rounds opened before run ids existed.",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated", "-id"]
        indexes = [models.Index(fields=["owner", "-updated"]), models.Index(fields=["status"])]

    def __str__(self) -> str:
        return self.title or f"Workflow {self.pk}"

    def get_absolute_url(self) -> str:
        return reverse("workflows:detail", args=[self.pk])

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES


class Installation(models.Model):
    """This app database's identity, made once: the names of its processes in the durable
    runtime carry it, so a run state database shared with another app database (or kept
    across a reset of this one) never hands this one's processes another's runs."""

    key = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"Installation {self.key}"

    @classmethod
    def current(cls) -> Installation:
        """The identity, created on first use (a fresh or emptied database has none)."""
        found = cls.objects.order_by("pk").first()
        if found is None:
            found, _ = cls.objects.get_or_create(pk=1)
        return found


class ChatMessage(models.Model):
    """A message of a workflow: the user's, the agent's answer, or one action's record."""

    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        ACTION = "action", "Action"
        SYSTEM = "system", "System"

    workflow = models.ForeignKey(ChatWorkflow, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=16, choices=Role.choices)
    round = models.PositiveIntegerField(default=0)
    task = models.PositiveIntegerField(default=0)
    action = models.PositiveIntegerField(default=0)
    action_method = models.CharField(max_length=64, blank=True)
    action_name = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=32, blank=True)
    content = models.TextField(blank=True, help_text="Markdown.")
    summary = models.TextField(blank=True, help_text="A short text kept when an action completes.")
    documents_label = models.CharField(max_length=200, blank=True)
    success = models.BooleanField(null=True)
    learnings = models.JSONField(default=list, blank=True)
    feedback = models.SmallIntegerField(
        null=True, blank=True, choices=[(1, "Thumbs up"), (-1, "Thumbs down")]
    )
    feedback_comment = models.TextField(blank=True)
    reruns = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="A user message that runs an earlier round again (edited or regenerated): "
        "that round's number. Its round sees only the history before that round.",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["workflow", "round", "task", "action"])]

    def __str__(self) -> str:
        return f"{self.get_role_display()} r{self.round}t{self.task}a{self.action}"

    @property
    def action_full_name(self) -> str:
        return f"{self.action_method}.{self.action_name}" if self.action_method else ""


def document_upload_to(document: ChatDocument, filename: str) -> str:
    """Store files per workflow, so one workflow's files never mix with another's."""
    return f"workflows/{document.workflow_id}/{document.label or 'documents'}/{filename}"


class ChatDocument(models.Model):
    """A file of a workflow: uploaded by the user, produced by an action, or fetched."""

    class Source(models.TextChoices):
        UPLOADED = "uploaded", "Uploaded"
        PRODUCED = "produced", "Produced"
        FETCHED = "fetched", "Fetched"

    workflow = models.ForeignKey(ChatWorkflow, on_delete=models.CASCADE, related_name="documents")
    message = models.ForeignKey(
        ChatMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="documents"
    )
    round = models.PositiveIntegerField(default=0)
    label = models.CharField(max_length=200, help_text="e.g. round1_task1_action2_results")
    name = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=127, default="application/octet-stream")
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64)
    file = models.FileField(upload_to=document_upload_to, max_length=500)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.PRODUCED)
    source_url = models.URLField(max_length=2000, blank=True)
    key = models.CharField(
        max_length=64,
        null=True,
        blank=True,
        help_text="round:task:action:position of the step that wrote it (written once).",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["workflow", "label"])]
        constraints = [
            models.UniqueConstraint(
                fields=["workflow", "key"],
                condition=models.Q(key__isnull=False),
                name="document_written_once_per_step",
            )
        ]

    def __str__(self) -> str:
        return f"{self.label}/{self.name}"

    def get_absolute_url(self) -> str:
        return reverse("workflows:document", args=[self.workflow_id, self.pk])

    def as_ref(self) -> DocumentRef:
        """The engine's view of this document (and the events')."""
        return DocumentRef(
            id=str(self.pk),
            name=self.name,
            mime=self.mime_type,
            label=self.label,
            size=self.size,
            round=self.round,
            # Ignored for mypy below: a CharField whose choices are DocumentRef's sources.
            source=self.source,  # type: ignore[arg-type]
            sourceUrl=self.source_url or None,
        )


class WorkflowEvent(models.Model):
    """One streamed step, stored before it is sent: the append-only record of a workflow."""

    workflow = models.ForeignKey(ChatWorkflow, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    type = models.CharField(max_length=32)
    round = models.PositiveIntegerField(default=0)
    task = models.PositiveIntegerField(default=0)
    action = models.PositiveIntegerField(default=0)
    payload = models.JSONField(default=dict, blank=True)
    ordinal = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The event's place in its round's own sequence (a resumed round stores "
        "each event once).",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workflow", "seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["workflow", "seq"], name="event_seq_unique_per_workflow"
            ),
            models.UniqueConstraint(
                fields=["workflow", "round", "ordinal"],
                condition=models.Q(ordinal__isnull=False),
                name="event_stored_once_per_round",
            ),
            models.CheckConstraint(condition=models.Q(seq__gt=0), name="event_seq_positive"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type}"

    @cached_property
    def envelope(self) -> Envelope:
        """The stored event read through the contract: its typed event, seq and time (a
        payload that does not fit the contract fails loudly)."""
        return Envelope.from_row(self)


class StepRecord(WorkflowEvent):
    """A step's closing event, for admins: the step's telemetry in columns of its own."""

    class Meta:
        proxy = True
        verbose_name = "step"
        verbose_name_plural = "steps"


class RateMark(models.Model):
    """A round started or a file uploaded in a workflow that was deleted since: the hourly
    limits still count it (they count the rows a round or an upload leaves, which go with
    their workflow); and each command that stores or sends an event (feedback, a steering
    note, a rename, an answer), which the per-minute limit counts. Marks older than their
    limit's window are dropped as new ones are added."""

    class Kind(models.TextChoices):
        ROUND = "round", "Round started"
        UPLOAD = "upload", "File uploaded"
        COMMAND = "command", "Command sent"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rate_marks"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    created = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["owner", "kind", "created"])]

    def __str__(self) -> str:
        return f"{self.kind} at {self.created:%Y-%m-%d %H:%M}"
