"""The channel layer's outages, said once each: the first failure of an outage is one
warning, what fails after it is quiet (a debug line) until the layer answers again, which
is one more line. During a 5 s Redis cut one process logged 769 tracebacks, one per socket
per second; the layer is a best-effort doorbell and the database the record, so viewers
follow from the database meanwhile (`live.follow`) and nothing needs saying twice.
"""

from __future__ import annotations

import logging
import time

logger = logging.getLogger(__name__)

_down_since: float | None = None


def is_down() -> bool:
    """Whether the layer failed last time it was used in this process."""
    return _down_since is not None


def failed(what: str, error: BaseException) -> None:
    """Something the layer was asked to do failed (`what`, e.g. "could not send event 5")."""
    global _down_since
    if _down_since is not None:
        logger.debug("%s: %s: %s", what, type(error).__name__, error)
        return
    _down_since = time.monotonic()
    logger.warning(
        "%s: %s: %s. The channel layer is down: viewers follow from the database until it is "
        "back (said once per outage).",
        what,
        type(error).__name__,
        error,
    )


def answered() -> None:
    """The layer did what it was asked: an outage, if any, is over."""
    global _down_since
    if _down_since is None:
        return
    seconds, _down_since = time.monotonic() - _down_since, None
    logger.warning("The channel layer is back after %.1f s.", seconds)
