"""WebSocket routes."""

from django.urls import path

from .consumer import WorkflowConsumer

websocket_urlpatterns = [
    path("ws/workflows/<int:workflow_id>/", WorkflowConsumer.as_asgi()),
]
