"""WebSocket routes."""

from django.urls import path

from .consumer import WorkflowConsumer

websocket_urlpatterns = [
    # django-stubs' path() knows only Django's views; Channels routes consumers with it too.
    path("ws/workflows/<int:workflow_id>/", WorkflowConsumer.as_asgi()),  # type: ignore[arg-type]
]
