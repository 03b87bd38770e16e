"""Limits the loop enforces: which actions a task may use, budgets, sanitised parameters."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

from workflows.engine.model.money import Cost
from workflows.engine.records.protocols import Tool
from workflows.engine.records.state import Budgets, Policy

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_URL_KEY = re.compile(r"url|link|href", re.IGNORECASE)
_PATH_KEY = re.compile(r"path|file", re.IGNORECASE)
_LOCAL_PATH = re.compile(r"^(/|~|\.\.?/|[A-Za-z]:\\)|(^|[/\\])\.\.([/\\]|$)")


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)


def is_allowed(policy: Policy, task_type: str, name: str) -> bool:
    """Whether the action may run in a task of this type (deny wins over allow)."""
    allowed = policy.allowed.get(task_type, policy.allowed.get("*", []))
    denied = [*policy.denied.get("*", []), *policy.denied.get(task_type, [])]
    return _matches(name, allowed) and not _matches(name, denied)


def allowed_tools(policy: Policy, task_type: str, tools: Sequence[Tool]) -> list[Tool]:
    """The catalog for one task, in catalog order."""
    return [tool for tool in tools if is_allowed(policy, task_type, tool.name)]


def needs_approval(policy: Policy, name: str) -> bool:
    """Whether the user must approve the action before it runs."""
    return _matches(name, policy.approval)


_HOST = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z][a-z0-9-]*[a-z0-9]", re.I)
ADDRESS_READERS = ("web.crawl",)
"""Actions that fetch the web addresses their input documents hold."""


def hosts_named(request: str) -> set[str]:
    """The host names a user's request names (in a URL or alone: `example.org`)."""
    return {host.lower().rstrip(".") for host in _HOST.findall(request)}


def sends_offsite(
    policy: Policy, name: str, parameters: dict[str, Any], sources: Sequence[str], request: str
) -> bool:
    """Whether the action would send data to a host the request does not name, so that it
    waits for approval (with `policy.offsite_approval`): a URL parameter on another host; an
    external tool's call that carries documents (`sources`: where they came from); an
    address reader given documents other than pages the host fetched (a document, or an
    injected instruction in one, may hold an address that carries data away)."""
    if not policy.offsite_approval:
        return False
    if sources and _matches(name, policy.external):
        return True
    if name in ADDRESS_READERS and any(source != "fetched" for source in sources):
        return True
    named = hosts_named(request)
    return any(not _named(host, named) for host in _url_hosts(parameters))


def _named(host: str, named: set[str]) -> bool:
    return any(host == each or host.endswith("." + each) for each in named)


def _url_hosts(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [host for item in value.values() for host in _url_hosts(item)]
    if isinstance(value, list):
        return [host for item in value for host in _url_hosts(item)]
    if isinstance(value, str) and value.strip().lower().startswith(("http://", "https://")):
        return [(urlsplit(value.strip()).hostname or "").lower()]
    return []


class UnsafeParameter(ValueError):
    """A parameter value the engine refuses to pass to an action."""


def sanitize_parameters(parameters: dict[str, Any]) -> dict[str, Any]:
    """Trim strings and refuse non-web URLs and local file references; raise UnsafeParameter."""
    return {key: _clean(key, value) for key, value in parameters.items()}


def _clean(key: str, value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(key, item) for item in value]
    if not isinstance(value, str):
        return value
    text = value.strip()
    if _SCHEME.match(text) and not re.match(r"^[A-Za-z]:\\", text):
        scheme = text.split(":", 1)[0].lower()
        if "//" in text[:12] or scheme in {"file", "javascript", "data", "ftp", "gopher"}:
            _check_url(key, text)
    elif _URL_KEY.search(key) and text:
        raise UnsafeParameter(f"{key}: {text[:80]!r} is not an http(s) URL")
    if _PATH_KEY.search(key) and _LOCAL_PATH.search(text):
        raise UnsafeParameter(f"{key}: local file references are not allowed ({text[:80]!r})")
    return text


def _check_url(key: str, text: str) -> None:
    parts = urlsplit(text)
    if parts.scheme.lower() not in {"http", "https"}:
        raise UnsafeParameter(f"{key}: only http and https URLs are allowed, not {parts.scheme}:")
    if not parts.hostname:
        raise UnsafeParameter(f"{key}: {text[:80]!r} has no host")
    if parts.username or parts.password:
        raise UnsafeParameter(f"{key}: URLs must not carry credentials")


@dataclass
class Budget:
    """Tokens, money and time spent by a round, against the workflow's budgets."""

    limits: Budgets
    clock: Callable[[], float] = time.monotonic
    tokens: int = 0
    """Tokens spent by this round."""
    cost: Cost | None = None
    """Money spent by this round (None: the model's price is unknown)."""
    started: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def spend(self, tokens: int, cost: Cost | None = None) -> None:
        """Count a model call's tokens, and its cost when it is known."""
        self.tokens += tokens
        if cost is not None:
            self.cost = cost if self.cost is None else self.cost + cost

    def elapsed_ms(self) -> int:
        """Milliseconds since the round started."""
        return int((self.clock() - self.started) * 1000)

    def remaining_seconds(self) -> float | None:
        """What is left of the time budget (None: no time limit)."""
        if self.limits.seconds is None:
            return None
        return max(0.0, self.limits.seconds - (self.clock() - self.started))

    def exhausted(self) -> tuple[str, str] | None:
        """(code, reason) when the token or time budget is spent, else None."""
        limit = self.limits.tokens
        if limit is not None and self.tokens >= limit:
            return "token_budget", (
                f"This round's token budget is spent ({self.tokens} of {limit} tokens); "
                "a new message starts with a fresh budget."
            )
        day = self.limits.day_tokens
        used = self.limits.day_tokens_used + self.tokens
        if day is not None and used >= day:
            return "token_budget", (
                f"This workflow's daily token budget is spent ({used} of {day} tokens in "
                "24 hours); it frees up as the day's earlier rounds age past 24 hours."
            )
        if spent := self.day_cost_spent():
            return "cost_budget", spent
        seconds = self.limits.seconds
        if seconds is not None and self.clock() - self.started >= seconds:
            return "time_budget", self.time_spent()
        return None

    def time_spent(self) -> str:
        """Why the round stops when its time budget is spent, in words for people."""
        return (
            f"This round's time budget is spent ({self.limits.seconds or 0:g} s); a new message "
            "starts with a fresh budget."
        )

    def day_cost_spent(self) -> str | None:
        """The reason the workflow's daily budget in money is spent, else None (also when
        there is no such budget, or no price to count with)."""
        limit = self.limits.day_cost
        if limit is None or self.cost is None:
            return None
        used = self.limits.day_cost_used + self.cost.total
        if used < limit:
            return None
        currency = self.cost.currency
        return (
            f"This workflow's daily cost budget is spent ({used:.4f} of {limit:g} {currency} "
            "in 24 hours). It frees up as the day's earlier rounds age past 24 hours; to go on "
            "now, an administrator can raise the daily cost budget."
        )
