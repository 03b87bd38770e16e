"""Django admin, one module per model: workflows, messages, documents, events (and steps),
connections, users and API tokens; the inlines and columns of a run in `timeline`, the
guard on connection secrets in `safety`, the guarded deletion in `deletion`."""

# Importing a module registers its admin.
from . import (  # noqa: F401
    connections,
    documents,
    events,
    messages,
    tokens,
    users,
    workflows,
)
