"""Log filters of the project's logging configuration (settings.LOGGING)."""

from __future__ import annotations

import logging


class WithoutTraceback(logging.Filter):
    """Keep a record's message, drop its traceback: for refusals that are not faults of the
    app (a request for a host it does not serve)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True
