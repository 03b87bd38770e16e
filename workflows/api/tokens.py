"""Personal API tokens: made, looked up, spent and revoked. A token reads
`pon_<prefix>_<secret>`; the prefix finds its row, and only the SHA-256 of the whole token is
stored (the secret is random and long, so a fast digest is as safe as a slow one: there is
no password to guess)."""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import string
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone

from workflows.models import ApiToken

if TYPE_CHECKING:
    from django.contrib.auth.models import User

SCHEME = "pon_"
PREFIX_ALPHABET = string.ascii_lowercase + string.digits
PREFIX_CHARS = 10
SECRET_BYTES = 32
WINDOW = timedelta(minutes=1)
SCOPES: tuple[str, ...] = tuple(ApiToken.Scope.values)


class TokenRefused(Exception):
    """The token cannot authenticate: `reason` is unknown, expired or revoked."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def digest_of(token: str) -> str:
    """The stored form of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def prefix_of(token: str) -> str | None:
    """The lookup prefix of a well-formed token (None when it cannot be one of ours)."""
    if not token.startswith(SCHEME):
        return None
    prefix, _, secret = token[len(SCHEME) :].partition("_")
    if len(prefix) != PREFIX_CHARS or not secret or not set(prefix) <= set(PREFIX_ALPHABET):
        return None
    return prefix


@dataclass(frozen=True)
class Made:
    """A token just made: its row, and the token itself, which is shown this once."""

    token: ApiToken
    secret: str


def token_create(*, owner: User, name: str, scopes: list[str], expires: datetime | None) -> Made:
    """Make a token for `owner` with `scopes` (read, run) and an optional expiry."""
    unknown = set(scopes) - set(SCOPES)
    if unknown or not scopes:
        raise ValueError(f"Scopes are {' and '.join(SCOPES)}; choose at least one.")
    for _ in range(5):  # a prefix already taken (one chance in 10^15) draws again
        prefix = "".join(secrets.choice(PREFIX_ALPHABET) for _ in range(PREFIX_CHARS))
        secret = f"{SCHEME}{prefix}_{secrets.token_urlsafe(SECRET_BYTES)}"
        row = ApiToken(
            owner=owner,
            name=name.strip()[:100] or "API token",
            prefix=prefix,
            digest=digest_of(secret),
            scopes=[scope for scope in SCOPES if scope in scopes],
            expires=expires,
        )
        try:
            with transaction.atomic():
                row.save()
        except IntegrityError:
            continue
        return Made(token=row, secret=secret)
    raise RuntimeError("no free token prefix was found")


def token_authenticate(token: str) -> ApiToken:
    """The usable token this is, with its owner; TokenRefused says why not (the same
    "unknown" for a malformed token, an unknown one and one whose owner cannot sign in)."""
    prefix = prefix_of(token)
    found = (
        ApiToken.objects.select_related("owner").filter(prefix=prefix).first() if prefix else None
    )
    if found is None or not hmac.compare_digest(found.digest, digest_of(token)):
        raise TokenRefused("unknown")
    if not found.owner.is_active:
        raise TokenRefused("unknown")
    if found.revoked is not None:
        raise TokenRefused("revoked")
    if found.is_expired:
        raise TokenRefused("expired")
    return found


def token_spend(token: ApiToken, *, limit: int) -> int | None:
    """Count one request of the token and note its use; the seconds to wait when its minute
    is full (then nothing is counted). `limit` 0: no limit. Each step is one conditional
    UPDATE, so processes counting at once never lose a request."""
    now = timezone.now()
    rows = ApiToken.objects.filter(pk=token.pk)
    if not limit:
        rows.update(last_used=now)
        return None
    minute = now.replace(second=0, microsecond=0)
    if rows.filter(window_start=minute, window_count__lt=limit).update(
        window_count=F("window_count") + 1, last_used=now
    ):
        return None
    if rows.exclude(window_start=minute).update(window_start=minute, window_count=1, last_used=now):
        return None
    return max(1, math.ceil((minute + WINDOW - now).total_seconds()))


def token_revoke(*, token: ApiToken) -> None:
    """Revoke a token for good: its next request is refused (it stays listed, as revoked)."""
    ApiToken.objects.filter(pk=token.pk, revoked__isnull=True).update(revoked=timezone.now())
    token.refresh_from_db(fields=["revoked"])


def token_list(*, user: User) -> QuerySet[ApiToken]:
    """The user's tokens, newest first (never their digests)."""
    return ApiToken.objects.filter(owner=user).defer("digest")


def token_get(*, user: User, token_id: int) -> ApiToken:
    """One of the user's tokens, or 404."""
    return get_object_or_404(ApiToken, pk=token_id, owner=user)
