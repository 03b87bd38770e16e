"""The facts of a model call read back from its prompt's text, for fake model servers that
receive only the messages over HTTP (the benchmarks' demo-model server): the engine hands the
demo model these facts as data (`workflows.engine.model.request`); a server across a socket
has the prompt alone, so it reads the host's layout here, outside the product."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from workflows.engine.model.request import Facts, StepFact
from workflows.engine.prompting.shared import ANSWER_AFTER
from workflows.engine.records.protocols import DocumentRef, Message
from workflows.engine.records.schemas import Observation

_FENCE = re.compile(
    r"<<<UNTRUSTED DATA from ([^>:]*)[^>]*>>>\n(.*?)\n<<<END UNTRUSTED DATA>>>", re.S
)
_STEP = re.compile(r"^a\d+ (\S+) \((success|failed)\)", re.M)
_SENT = re.compile(r"^- docList:round(\d+)_upload \(.*sent with this message", re.M)


def section(prompt: str, title: str) -> str:
    """The text under `## title` up to the next heading."""
    match = re.search(rf"^## {re.escape(title)}[^\n]*\n(.*?)(?=^## |\Z)", prompt, re.S | re.M)
    return match.group(1).strip() if match else ""


def _documents(prompt: str) -> tuple[DocumentRef, ...]:
    labels = re.findall(r"^- docList:(\S+)", section(prompt, "Documents"), re.M)
    return tuple(DocumentRef(id=label, name=label, mime="", label=label) for label in labels)


def _latest(prompt: str) -> Observation | None:
    latest = None
    for _, block in _FENCE.findall(prompt):  # the latest observation is the last JSON fenced
        try:
            latest = Observation.model_validate(json.loads(block))
        except ValueError:
            continue
    return latest


def _results(prompt: str) -> tuple[tuple[str, str], ...] | None:
    if "## Results" not in prompt:
        return None
    pairs = []
    for _, block in _FENCE.findall(section(prompt, "Results")):
        for line in block.splitlines():
            name, _, text = line.partition(": ")
            pairs.append((name, text))
    return tuple(pairs)


def _texts(prompt: str) -> tuple[tuple[str, str], ...]:
    documents = prompt.partition("\n## Documents\n")[2].partition("\n## History")[0]
    return tuple((name.strip(), body) for name, body in _FENCE.findall(documents))


def facts_from_prompt(kind: str, messages: Sequence[Message]) -> Facts:
    """What a call of `kind` was written from, as its messages say it."""
    if kind in ("final", "text") and len(messages) >= 2:
        prompt = f"{messages[0]['content']}\n\n## User request\n{messages[-1]['content']}"
    else:
        prompt = "\n\n".join(m["content"] for m in messages)
    sent = _SENT.search(prompt)
    where = re.search(r"docList:round(\d+)_task(\d+)_action(\d+)_extract", prompt)
    r, t, a = where.groups() if where else (sent.group(1) if sent else "1", "1", "1")
    objective = re.search(r"^ACTION_OBJECTIVE: (.*)$", prompt, re.M)
    steps = section(prompt, "Steps")  # "Steps" and "Steps so far in this task"
    return Facts(
        kind=kind,
        request=section(prompt, "User request"),
        round=int(sent.group(1)) if sent else int(r),
        task=int(t),
        first_action=int(a),
        documents=_documents(prompt),
        catalog=tuple(re.findall(r"^- ([\w.]+)\(", prompt, re.M)),
        steps=tuple(StepFact(name, status == "success") for name, status in _STEP.findall(steps)),
        latest=_latest(prompt),
        answering='"answer": with "' in prompt or ANSWER_AFTER in prompt,
        asks_first_action='"firstAction": the first action' in prompt,
        asks_plan='"plan": with exactly one task' in prompt,
        objective=objective.group(1) if objective else "",
        parameters=tuple(
            re.findall(r"^- (\w+) \(", prompt.split("PARAMETERS_SCHEMA:", 1)[-1], re.M)
        ),
        texts=_texts(prompt),
        results=_results(prompt),
    )
