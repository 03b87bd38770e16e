"""One prompt head for every call that plans, chooses or judges, for a hosted provider's
prompt cache (POWERON_LLM_SCHEMAS=shared).

A provider bills a prompt's repeated prefix at a fraction of the price, and OpenAI counts a
response format's schema as the start of the prompt: a schema per kind of call keeps the
calls of different kinds from sharing a prefix. Here no call sends a schema; the system
message — the rules, the catalog, then how every kind of answer is written — is the same for
the task plan, Stage 1, refine, the review and the action plan of a round (and byte-identical
across rounds and runs), so one cached prefix serves them all and passes the cache's minimum
even with a small catalog. The user message keeps its data in the same order and ends with a
short "## Now" saying which answer this call wants, and what applies to it alone.

Answers are written compact, without the keys that would be empty, and an answer to the user
follows the JSON object as plain markdown rather than as an escaped JSON string. Stage 2 is
not laid out this way: it sees only its action's schema and context (the seeds' protocol).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from workflows.engine.prompting.prompts import NOW, template
from workflows.engine.records.protocols import Message
from workflows.engine.records.schemas import FORBIDDEN_PARAMETER_NAMES

SHARED_KINDS = frozenset({"taskplan", "select", "refine", "review", "actionplan"})
"""The kinds of call that share the head."""
ANSWER_AFTER = "your answer to the user follows the JSON object"
"""What "## Now" says when the answer to the user comes with this call."""
MAX_TASKS = 5
"""The most tasks a round's plan holds."""


@functools.cache
def answers_section(*, language: str) -> str:
    """How every kind of answer is written, in both modes (a deployment running React and
    Actionplan workflows caches one head): the part of the head after the rules and the
    catalog."""
    forbidden = ", ".join(sorted(FORBIDDEN_PARAMETER_NAMES))
    return template("shared").substitute(
        max_tasks=MAX_TASKS, forbidden=forbidden, language=language
    )


NOW_LINES = {
    "taskplan": "The task plan (### Task plan).",
    "select": "Stage 1: the next single action for this task (### Action).",
    "refine": "Refine (### Refine).",
    "review": "The review of this task (### Review).",
    "actionplan": "The action plan of this task (### Action plan).",
}
"""What "## Now" says, per kind of call."""
FIRST_ACTION = 'With "firstAction": the first action of task 1.'
"""What the task plan's "## Now" adds in React mode."""
PLAN = 'With "plan": with exactly one task, its whole action list'
"""How the task plan's "## Now" starts what it adds in Actionplan mode."""


def now_line(kind: str, *, answering: bool, extra: str = "") -> str:
    """The "## Now" of a call of this kind (`extra`: what applies to this call alone, such as
    the task plan's first action or the numbering of an action plan's documents)."""
    line = NOW_LINES[kind]
    if extra:
        line = f"{line} {extra}"
    if answering:
        verdict = "success" if kind == "review" else "stop and criteriaMet true"
        line += f" With {verdict}, {ANSWER_AFTER} (### Answer to the user)."
    return line


_EMPTY = re.compile(r"^## [^\n]+\n\(none\)\n\n", re.MULTILINE)
"""A section with nothing in it (no history, connections, learnings or documents)."""


def shared_layout(messages: Sequence[Message], *, answers: str, now: str) -> list[Message]:
    """The prompt with the shared head: its system message (rules and catalog) followed by
    `answers`, its own "## Now" instruction replaced by `now`, and its empty sections left
    out (a capable model reads no history, connections or documents as none)."""
    out: list[Message] = [{"role": m["role"], "content": m["content"]} for m in messages]
    if len(out) < 2 or out[0]["role"] != "system" or out[-1]["role"] != "user":
        return out
    out[0]["content"] = f"{out[0]['content']}\n\n{answers}"
    data, _, _ = out[-1]["content"].partition(NOW)
    data = _EMPTY.sub("", data + "\n\n").rstrip()
    out[-1]["content"] = f"{data}{NOW}{now}"
    return out
