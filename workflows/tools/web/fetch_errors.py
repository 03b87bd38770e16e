"""What the safe fetcher raises: one base type, one subclass per reason, with the URL."""

from __future__ import annotations


class FetchError(Exception):
    """A fetch that did not succeed; the message is meant for the user and the model."""

    def __init__(self, message: str, *, url: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class FetchBlocked(FetchError):
    """The address is not allowed: wrong scheme, a non-public address, a local name."""


class FetchDisallowed(FetchBlocked):
    """The site's robots.txt asks robots like ours not to fetch this path."""


class FetchTooLarge(FetchError):
    """The body, counted after decompression, is larger than the size cap."""


class FetchTimeout(FetchError):
    """The fetch took longer than the time cap."""


class FetchUnsupported(FetchError):
    """The response is of a content type or encoding the tools do not read."""


class FetchFailed(FetchError):
    """The site could not be reached, answered with an error, or redirected too often."""
