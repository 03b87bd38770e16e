"""Chat messages in admin: each with its workflow, role, action and summary."""

from __future__ import annotations

from django.contrib import admin

from workflows.models import ChatMessage

from .safety import SecretSafeAdmin


@admin.register(ChatMessage)
class ChatMessageAdmin(SecretSafeAdmin[ChatMessage]):
    list_display = (
        "__str__",
        "workflow",
        "role",
        "action_full_name",
        "status",
        "summary",
        "created",
    )
    list_filter = ("role", "status", "created")
    search_fields = ("content", "summary", "workflow__title")
    list_select_related = ("workflow",)
    raw_id_fields = ("workflow",)
