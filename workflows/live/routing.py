"""WebSocket routes."""

from django.urls import path

from .consumers import WorkflowConsumer

websocket_urlpatterns = [
    path("ws/workflows/<int:workflow_id>/", WorkflowConsumer.as_asgi()),
]
