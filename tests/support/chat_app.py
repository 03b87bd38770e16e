"""What the tests of the live app share: a workflow with one uploaded note. (The `model`
fixture, the fake model server configured as the app's model, is in tests/conftest.py.)"""

from __future__ import annotations

from channels.db import database_sync_to_async

from workflows import services

NOTE = b"# Notes\n\nRevenue grew 12 percent. Costs fell 3 percent."


@database_sync_to_async
def workflow_with_upload(owner, **fields):
    """A new workflow of `owner` (with `fields`) holding notes.md, uploaded in round 1."""
    workflow = services.workflow_create(owner=owner, **fields)
    upload = services.document_upload(workflow=workflow, name="notes.md", data=NOTE)
    return workflow, upload
