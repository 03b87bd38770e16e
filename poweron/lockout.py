"""The page django-axes shows when a sign-in is refused after too many failures."""

from __future__ import annotations

from typing import Any

from axes.helpers import get_client_username, get_cool_off
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def login_refused(
    request: HttpRequest, original_response: HttpResponse | None, credentials: Any = None
) -> HttpResponse:
    """429 with how many failures locked the sign-in and for how long it stays refused."""
    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    context = {
        "username": get_client_username(request, credentials) or "",
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "minutes": minutes,
    }
    return render(request, "registration/locked_out.html", context, status=429)
