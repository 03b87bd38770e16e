"""The engine's DocumentStore, backed by ChatDocument rows and files under MEDIA_ROOT."""

from __future__ import annotations

from channels.db import database_sync_to_async

from workflows import services
from workflows.engine.contracts import DocumentRef, ProducedDocument
from workflows.models import ChatDocument, ChatWorkflow


class WorkflowDocumentStore:
    """The documents of one workflow. The index is loaded once and kept current by save()."""

    def __init__(self, workflow: ChatWorkflow, refs: list[DocumentRef]) -> None:
        self.workflow = workflow
        self._refs = refs

    @classmethod
    @database_sync_to_async
    def load(cls, workflow: ChatWorkflow) -> WorkflowDocumentStore:
        """Load the workflow's document index (oldest first)."""
        return cls(workflow, [doc.as_ref() for doc in workflow.documents.order_by("id")])

    def index(self) -> list[DocumentRef]:
        """Every document of the workflow, oldest first."""
        return list(self._refs)

    async def read(self, ref: DocumentRef) -> bytes:
        """The stored bytes of one of this workflow's documents."""
        return await self._read(int(ref.id))

    @database_sync_to_async
    def _read(self, document_id: int) -> bytes:
        document = ChatDocument.objects.get(pk=document_id, workflow=self.workflow)
        with document.file.open("rb") as handle:
            return handle.read()

    async def save(
        self, document: ProducedDocument, *, label: str, round: int, task: int, action: int
    ) -> DocumentRef:
        """Store a produced or fetched document and add it to the index."""
        ref = await self._save(document, label, round)
        self._refs.append(ref)
        return ref

    @database_sync_to_async
    def _save(self, document: ProducedDocument, label: str, round: int) -> DocumentRef:
        stored = services.document_create(
            workflow=self.workflow,
            name=document.name,
            data=document.data,
            label=label,
            round=round,
            mime_type=document.mime,
            source=document.source,
            source_url=document.source_url or "",
        )
        return stored.as_ref()
