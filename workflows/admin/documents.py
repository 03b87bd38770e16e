"""Documents in admin: what each is and where it came from, with a download for staff."""

from __future__ import annotations

from django.contrib import admin
from django.http import FileResponse, Http404, HttpRequest
from django.urls import URLPattern, path

from workflows.models import ChatDocument

from .safety import SecretSafeAdmin
from .timeline import document_link


@admin.register(ChatDocument)
class ChatDocumentAdmin(SecretSafeAdmin[ChatDocument]):
    list_display = ("name", "workflow", "label", "mime_type", "size", "source", "download")
    list_filter = ("source", "mime_type")
    search_fields = ("name", "label", "source_url")
    list_select_related = ("workflow",)
    raw_id_fields = ("workflow", "message")
    readonly_fields = ("sha256", "size", "download")

    @admin.display(description="Download")
    def download(self, document: ChatDocument) -> str:
        return document_link(document) if document.pk else "-"

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.download_view)
        own = [path("<int:pk>/download/", view, name="workflows_chatdocument_download")]
        return own + super().get_urls()

    def download_view(self, request: HttpRequest, pk: int) -> FileResponse:
        """Let staff download any document (owners use the chat's own download link)."""
        if not self.has_view_permission(request):
            raise Http404
        document = ChatDocument.objects.filter(pk=pk).first()
        if document is None:
            raise Http404
        return FileResponse(document.file.open("rb"), as_attachment=True, filename=document.name)
