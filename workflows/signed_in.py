"""The request of a signed-in user, as the views see it."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest


class SignedInRequest(HttpRequest):
    """A request LoginRequiredMiddleware let through: its user is signed in, a `User` and never
    the anonymous one. A type for the views' signatures only: Django makes plain requests."""

    user: User
