"""Secrets at rest: a connection's key or token is stored sealed, never in clear text.

Sealing is Fernet (AES-128-CBC with HMAC-SHA256) under a key derived from Django's
`SECRET_KEY`; the keys of `SECRET_KEY_FALLBACKS` still open what they sealed, so the site's
key can be rotated the way Django rotates it (then `manage.py reseal_secrets` seals every
secret under the new key). A stored value that no key opens reads as an `UnreadableSecret`:
empty to every reader, its sealed text kept as it is when the row is saved again.
"""

from __future__ import annotations

import base64
import functools
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models
from django.db.models.expressions import Combinable
from django.utils.crypto import salted_hmac

PREFIX = "sealed:v1:"
"""What a sealed value starts with; a value without it is clear text from before sealing."""
PURPOSE = "poweron.sealing.connection-secret"


class UnreadableSecret(str):
    """A stored secret no key opens (the site's key changed without a fallback): "" to its
    readers, who must ask for it again; saved back, it keeps its sealed text."""

    sealed: str

    def __new__(cls, sealed: str) -> UnreadableSecret:
        secret = super().__new__(cls, "")
        secret.sealed = sealed
        return secret


def _key(secret_key: str) -> bytes:
    digest = salted_hmac(PURPOSE, "fernet", secret=secret_key, algorithm="sha256").digest()
    return base64.urlsafe_b64encode(digest)


@functools.lru_cache(maxsize=4)
def _fernet(secret_key: str, fallbacks: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(_key(key)) for key in (secret_key, *fallbacks)])


def fernet() -> MultiFernet:
    """The site's sealing: its SECRET_KEY seals, it and its fallbacks open."""
    return _fernet(settings.SECRET_KEY, tuple(settings.SECRET_KEY_FALLBACKS))


def seal(text: str) -> str:
    """`text` sealed for storage ("" stays "")."""
    if isinstance(text, UnreadableSecret):
        return text.sealed
    if not text:
        return ""
    return PREFIX + fernet().encrypt(text.encode()).decode("ascii")


def unseal(stored: str) -> str:
    """The text a stored value holds: clear text from before sealing as it is, a sealed one
    opened, or an `UnreadableSecret` when no key opens it."""
    if not stored.startswith(PREFIX):
        return stored
    try:
        return fernet().decrypt(stored[len(PREFIX) :].encode("ascii")).decode()
    except (InvalidToken, UnicodeError):
        return UnreadableSecret(stored)


def is_unreadable(secret: str) -> bool:
    """Whether a stored secret could not be opened with this site's keys."""
    return isinstance(secret, UnreadableSecret)


class SealedTextField(models.TextField[str | Combinable, str]):
    """A text column whose values are sealed in the database and clear in Python. Not for
    lookups: each sealing of the same text differs."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return value if value is None else unseal(value)

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith(PREFIX):
            return unseal(value)
        return super().to_python(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return value if value is None else seal(value)

    def value_to_string(self, obj: Any) -> str:
        """Serialised (dumpdata) sealed, as stored (one no key opens keeps its sealed text);
        loaded back, `to_python` opens it."""
        value = self.value_from_object(obj)
        return seal(value if value is not None else "")
