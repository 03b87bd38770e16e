"""Who calls the API, and what they may do: a personal API token (`Authorization: Bearer`),
or the browser's session cookie. Each operation names the scope it needs with `auth=READ`
or `auth=RUN`; its view reads the caller with `caller(request)`.

A token is refused with 401 (unknown, expired, revoked), 403 (the scope is missing) or 429
(its requests this minute are used up); a session has every scope, and a request it
authenticates that changes something must pass Django's CSRF check, exactly as a form of
the page does. A bearer request is no browser's and needs no CSRF token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.http import HttpRequest
from ninja.security import HttpBearer
from ninja.security.apikey import APIKeyCookie
from ninja.utils import check_csrf

from workflows.models import ApiToken

from . import tokens
from .errors import REALM, Problem, rate_limited

if TYPE_CHECKING:
    from django.contrib.auth.models import User

SAFE_METHODS = {"GET", "HEAD", "OPTIONS", "TRACE"}


@dataclass(frozen=True)
class Principal:
    """The caller of one request: the user it acts for, and the token it came with (None
    for the browser's session, which has every scope)."""

    user: User
    token: ApiToken | None = None


def caller(request: HttpRequest) -> Principal:
    """The authenticated caller of an API request (set by the operation's auth)."""
    principal = getattr(request, "auth", None)
    assert isinstance(principal, Principal), "an API operation without auth=READ or auth=RUN"
    return principal


REFUSALS = {
    "unknown": ("token-invalid", "The bearer token is not a token of this site."),
    "expired": ("token-expired", "The bearer token has expired."),
    "revoked": ("token-revoked", "The bearer token was revoked."),
}


class BearerToken(HttpBearer):
    """A personal API token with `scope` (`read` or `run`)."""

    def __init__(self, scope: str) -> None:
        super().__init__()
        self.scope = scope

    def __call__(self, request: HttpRequest) -> Principal | None:
        header = request.headers.get("Authorization", "")
        if not header:
            return None  # perhaps the session's
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Problem(
                "unauthenticated",
                "Authorization must read `Bearer <token>`.",
                headers={"WWW-Authenticate": f'{REALM}, error="invalid_request"'},
            )
        return self.authenticate(request, value.strip())

    def authenticate(self, request: HttpRequest, token: str) -> Principal:
        try:
            found = tokens.token_authenticate(token)
        except tokens.TokenRefused as refused:
            slug, detail = REFUSALS[refused.reason]
            challenge = f'{REALM}, error="invalid_token", error_description="{detail}"'
            raise Problem(slug, detail, headers={"WWW-Authenticate": challenge}) from None
        if self.scope not in found.scopes:
            challenge = f'{REALM}, error="insufficient_scope", scope="{self.scope}"'
            raise Problem(
                "insufficient-scope",
                f"This operation needs the scope {self.scope!r}; the token has "
                f"{', '.join(found.scopes) or 'none'}.",
                headers={"WWW-Authenticate": challenge},
                scope=self.scope,
            )
        wait = tokens.token_spend(found, limit=settings.POWERON_API_REQUESTS_PER_MINUTE)
        if wait is not None:
            most = settings.POWERON_API_REQUESTS_PER_MINUTE
            raise rate_limited(f"This token may make {most} requests a minute.", wait)
        return Principal(user=found.owner, token=found)


class SessionCookie(APIKeyCookie):
    """The browser's signed-in session (every scope); CSRF-checked when it changes
    something."""

    param_name = settings.SESSION_COOKIE_NAME

    def __init__(self) -> None:
        super().__init__(csrf=False)  # checked below, after we know it is a session at all

    def __call__(self, request: HttpRequest) -> Principal | None:
        return self.authenticate(request, request.COOKIES.get(self.param_name))

    def authenticate(self, request: HttpRequest, key: str | None) -> Principal | None:
        user = getattr(request, "user", None)
        if not key or user is None or not user.is_authenticated:
            return None
        if request.method not in SAFE_METHODS and check_csrf(request) is not None:
            raise Problem(
                "csrf-failed",
                "Send the CSRF token in X-CSRFToken with the session cookie, or use a token.",
            )
        return Principal(user=user)


def still_allowed(principal: Principal, session_key: str) -> bool:
    """Whether the caller of a long request may still be served: its token neither revoked
    nor expired and its owner active, or its session still signed in (a stream checks this
    as it goes on)."""
    if principal.token is not None:
        usable = ApiToken.objects.filter(
            pk=principal.token.pk, revoked__isnull=True, owner__is_active=True
        ).first()
        return usable is not None and not usable.is_expired
    from workflows.live.consumer import signed_in

    return signed_in(session_key, principal.user.pk)


READ = [BearerToken("read"), SessionCookie()]
"""The auth of operations that only read."""
RUN = [BearerToken("run"), SessionCookie()]
"""The auth of operations that change something: create, rename, delete, upload, send,
stop, steer, answer."""
