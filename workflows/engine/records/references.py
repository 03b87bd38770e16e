"""References to a workflow's documents: the docList:/docItem: strings a model writes, resolved
against the documents the workflow holds, and the labels an action's documents are stored
under."""

from __future__ import annotations

import re
from collections.abc import Sequence

from workflows.engine.records.protocols import DocumentRef


class ReferenceNotFound(ValueError):
    """A docList:/docItem: reference names nothing this workflow holds."""


_DOC_ITEM = re.compile(r"^docItem:(?P<id>[^:]+)(?::(?P<name>.*))?$")


def resolve_references(refs: Sequence[str], index: Sequence[DocumentRef]) -> list[DocumentRef]:
    """Resolve docList:/docItem: references against the workflow's own documents, in order.

    Deterministic: a docList gives its documents oldest first; duplicates are dropped.
    Raises ReferenceNotFound for anything that does not match.
    """
    found: dict[str, DocumentRef] = {}
    for raw in refs:
        ref = raw.strip()
        if ref.startswith("docList:"):
            label = ref.removeprefix("docList:")
            matches = [doc for doc in index if doc.label == label]
        elif match := _DOC_ITEM.match(ref):
            matches = [doc for doc in index if doc.id == match["id"]]
        else:
            raise ReferenceNotFound(f"{ref!r} is not a docList:<label> or docItem:<id>:<name>")
        if not matches:
            raise ReferenceNotFound(f"{ref!r} names no document of this workflow")
        for doc in matches:
            found.setdefault(doc.id, doc)
    return list(found.values())


def result_label(round: int, task: int, action: int, label: str) -> str:
    """The deterministic label of an action's documents: round{r}_task{t}_action{a}_{label}."""
    safe = re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_").lower() or "results"
    return f"round{round}_task{task}_action{action}_{safe}"
