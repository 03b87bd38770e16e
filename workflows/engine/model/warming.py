"""Ready at start what a process's first round would otherwise build on its first calls.

The answer model of a call is narrowed to the catalog (narrowed.py) and its schema generated
for the model server's format (formats.py): a few milliseconds each, cached for the process.
`prepare_answers` builds them for the calls that open a round: the task plan (React's and
Actionplan's, with and without an upload) and, for every task type, Stage 1 and refine, for
the catalog a user without connections sees. Nothing is asked, run or stored. A user whose
catalog differs (connections, their MCP servers) builds theirs on their first calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from workflows.engine.demo.policy import DemoLLM
from workflows.engine.loop.controls import AutoControls
from workflows.engine.loop.core import RoundContext, TaskState
from workflows.engine.loop.round import taskplan_output_for, taskplan_view
from workflows.engine.model.formats import ResponseFormat, response_format
from workflows.engine.prompting.narrowed import refinement_output, selection_output
from workflows.engine.prompting.selection import selection_choices
from workflows.engine.records.protocols import DocumentRef, ProducedDocument, ToolExecutor
from workflows.engine.records.schemas import TASK_TYPES, TaskItem
from workflows.engine.records.state import Policy, RoundState

UPLOAD = DocumentRef(
    id="0", name="upload", mime="text/plain", label="round1_upload", round=1, source="uploaded"
)
"""A round's upload: its references make a narrow schema's answers their templated kind."""


class _Documents:
    """A store that holds only an index: nothing is read or saved while preparing."""

    def __init__(self, index: Sequence[DocumentRef]) -> None:
        self._index = list(index)

    def index(self) -> list[DocumentRef]:
        return list(self._index)

    async def read(self, ref: DocumentRef) -> bytes:
        raise NotImplementedError("nothing is read while preparing")

    async def save(
        self, document: ProducedDocument, *, label: str, round: int, task: int, action: int
    ) -> DocumentRef:
        raise NotImplementedError("nothing is saved while preparing")


def answer_models(
    tools: ToolExecutor,
    *,
    schemas: Literal["narrow", "stable", "shared"],
    max_steps: int,
    policy: Policy,
) -> list[type[BaseModel]]:
    """The answer models of the calls that open a round, for this catalog: every mode's task
    plan and, for every task type, Stage 1 and refine (answering or not), in a round without
    documents and in one with the user's upload."""
    models: list[type[BaseModel]] = []
    for mode in ("react", "actionplan"):
        state = RoundState(
            mode=mode, round=1, prompt="", max_steps=max_steps, schemas=schemas, policy=policy
        )
        for index in ((), (UPLOAD,)):
            ctx = RoundContext(
                state,
                llm=DemoLLM(),  # never called
                tools=tools,
                store=_Documents(index),
                controls=AutoControls(),
            )
            models.append(taskplan_output_for(ctx, taskplan_view(ctx)))
            if mode != "react":
                continue  # Actionplan's plan comes with its task plan
            for task_type in TASK_TYPES:
                task = TaskState(1, TaskItem(objective="Prepare.", taskType=task_type))
                choices = selection_choices(ctx, task)
                models.append(selection_output(*choices))
                models += [refinement_output(*choices, answering=a) for a in (True, False)]
    return models


def prepare_answers(
    tools: ToolExecutor,
    *,
    schemas: Literal["narrow", "stable", "shared"],
    max_steps: int,
    policy: Policy,
    fmt: ResponseFormat,
) -> int:
    """Build the answer models of `answer_models` and their schemas in `fmt`; how many."""
    models = answer_models(tools, schemas=schemas, max_steps=max_steps, policy=policy)
    for model in models:
        response_format(model, fmt)
    return len(models)
