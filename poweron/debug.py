"""Error reports without secrets: Django's debug page (DEBUG=1, which `make run` sets) and the
reports sent to admins show the settings, the request and each frame's variables. Django hides
settings whose names say API, AUTH, TOKEN, KEY, SECRET or PASS; here also the MCP servers
(their headers and environments), the channel layer's and databases' addresses, a password in
any URL, the request's POST fields and frame variables by the same names, even with DEBUG on;
and, last, every secret value the site knows is struck from the page wherever it shows."""

from __future__ import annotations

import html
import json
import re
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.safestring import SafeString, mark_safe
from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

HIDDEN = re.compile(
    r"API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|CREDENTIAL|MCP_SERVERS|HEADERS"
    r"|CHANNEL_LAYERS|DATABASE_URL|REDIS_URL|ENV$",
    flags=re.I,
)
"""Names whose values are never shown: settings, request headers, POST fields, variables."""
SUBSTITUTE = SafeExceptionReporterFilter.cleansed_substitute
_URL_PASSWORD = re.compile(r"\b([a-z][a-z0-9+.-]*://)([^/@\s:]*):([^/@\s]*)@", re.I)


def without_url_passwords(text: str) -> str:
    """Text with the password of any URL in it (scheme://user:password@host) struck."""
    return _URL_PASSWORD.sub(lambda m: f"{m[1]}{m[2]}:{SUBSTITUTE}@", text)


class SecretSafeFilter(SafeExceptionReporterFilter):
    """Django's filter, hiding more names, and active with DEBUG on too."""

    hidden_settings = HIDDEN

    def is_active(self, request: Any) -> bool:
        """POST fields and frame variables are cleansed with DEBUG on as well."""
        return True

    def cleanse_setting(self, key: Any, value: Any) -> Any:
        cleansed = super().cleanse_setting(key, value)
        return without_url_passwords(cleansed) if type(cleansed) is str else cleansed

    def get_post_parameters(self, request: Any) -> Any:
        parameters = super().get_post_parameters(request)
        if not parameters:
            return parameters
        cleansed = parameters.copy()
        for name in cleansed:
            if HIDDEN.search(name):
                cleansed[name] = SUBSTITUTE
        return cleansed

    def get_traceback_frame_variables(self, request: Any, tb_frame: Any) -> Any:
        variables = super().get_traceback_frame_variables(request, tb_frame)
        return [
            (name, SUBSTITUTE if HIDDEN.search(str(name)) else value) for name, value in variables
        ]


class SecretSafeReporter(ExceptionReporter):
    """Django's report, with every secret value the site knows struck wherever it shows (a
    variable's repr, an exception's message, a URL)."""

    def get_traceback_html(self) -> SafeString:
        return mark_safe(strike(super().get_traceback_html(), escaped=True))

    def get_traceback_text(self) -> SafeString:
        return mark_safe(strike(super().get_traceback_text(), escaped=False))


def known_secrets() -> set[str]:
    """The secret values in the site's settings: keys, passwords in URLs, the MCP servers'
    header and environment values."""
    found: set[str] = {settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS}
    for name in dir(settings):
        if name.isupper() and re.search(r"API_KEY|TOKEN|SECRET|PASSWORD", name):
            value = getattr(settings, name)
            if isinstance(value, str):
                found.add(value)
    for name in ("REDIS_URL", "POWERON_DBOS_DATABASE_URL", "POWERON_SEARXNG_URL"):
        found.add(urlsplit(str(getattr(settings, name, "") or "")).password or "")
    for database in settings.DATABASES.values():
        found.add(str(database.get("PASSWORD") or ""))
    found |= _mcp_secrets(settings.POWERON_MCP_SERVERS)
    return {value for value in found if len(value) >= 6}


def _mcp_secrets(raw: str) -> set[str]:
    """The header and environment values of the configured MCP servers (as `load_servers`
    reads them; a file named with @ is read too)."""
    from workflows.tools.mcp.servers import load_servers, secrets_of

    try:
        servers, _ = load_servers(raw)
    except (ValueError, TypeError, json.JSONDecodeError):
        return set()
    return {secret for server in servers for secret in secrets_of(server)}


def strike(text: str, *, escaped: bool) -> str:
    """`text` without any known secret value (nor its HTML-escaped form)."""
    for secret in sorted(known_secrets(), key=len, reverse=True):
        text = text.replace(secret, SUBSTITUTE)
        if escaped:
            text = text.replace(html.escape(secret), SUBSTITUTE)
    return without_url_passwords(text)
