"""Deletion in admin refused while a run is going: Django's "delete selected" action swapped
for a guarded one."""

from __future__ import annotations

from typing import Any


def guarded_delete(actions: dict[str, Any], guarded: object) -> dict[str, Any]:
    """An admin's actions with Django's "delete selected" replaced by `guarded` (same name
    and description), which refuses while a run is going."""
    if "delete_selected" in actions:
        _, name, description = actions["delete_selected"]
        actions["delete_selected"] = (guarded, name, description)
    return actions
