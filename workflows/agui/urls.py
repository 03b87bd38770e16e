"""The AG-UI endpoint's address, beside the HTTP API's."""

from django.urls import path

from .views import agui_run

urlpatterns = [path("api/v1/agui", agui_run, name="agui-run")]
"""Included by the project's urls, before the API's (whose catch-all would answer 404)."""
