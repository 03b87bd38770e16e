"""The demo model: a deterministic offline policy for machines with no model configured.

It speaks the same LLM protocol as a real model and reads the engine's own prompts:
extract the uploaded documents, write a report, stop, and answer with an extractive
summary. Without documents it says that it cannot answer, and the round fails: it never
passes off a request it could not do as done. Labelled "demo model" everywhere.

Given `delay_ms` it takes its time like a model: each call waits a few hundred milliseconds
and the answer streams in small pieces, so the loop can be watched, stopped and steered.
Every wait is an asyncio sleep, which a stop cancels at once. It reports no tokens: it
reads none, and an estimate would pass for a real count.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from workflows.engine.demo.text import (
    FENCE,
    READABLE,
    TITLE,
    answer_prompt,
    doc_lists,
    documents_part,
    fenced_texts,
    join_blocks,
    markdown_blocks,
    readable_text,
    section,
    stream_pieces,
    whole_blocks,
)
from workflows.engine.prompting.shared import ANSWER_AFTER
from workflows.engine.records.protocols import (
    AnswerSink,
    Completion,
    InvalidModelOutput,
    Message,
    ModelUnavailable,
    T,
    TextCompletion,
    Usage,
    describe_error,
)

DEMO_LABEL = "demo model"
CANNOT = "No language model is configured, so the demo model cannot answer this."
"""What the demo says of a request it cannot do: it only reads and summarises documents."""
SUMMARY = "> Summary by the demo model (extractive): what it read, quoted as written."
"""The line its summaries open with: a note (quoted), not a claim about the documents."""
REPORT = "Report on the uploaded documents"
"""The report's objective, which is also its title (the title's default)."""


def answers(verdict: str, prompt: str) -> bool:
    """Whether the call asks for the answer to the user with this verdict: a key of the JSON
    ("answer": with "stop"), or, with the shared head, after the JSON."""
    return f'"answer": with "{verdict}"' in prompt or ANSWER_AFTER in prompt


class DemoLLM:
    """A deterministic policy behind the LLM protocol, paced like a model when asked."""

    label = DEMO_LABEL

    def __init__(
        self,
        *,
        delay_ms: int = 0,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.delay_ms = max(0, delay_ms)
        """The typical wait of one call; 0 answers at once."""
        self._sleep = sleep

    def call_delay(self, kind: str, prompt: str) -> float:
        """Seconds one call waits: 0.6 to 1.4 times `delay_ms`, always the same for the same
        kind and prompt size (so a run is as reproducible as its answers)."""
        spread = zlib.crc32(f"{kind}:{len(prompt)}".encode()) % 1001 / 1000
        return self.delay_ms * (0.6 + 0.8 * spread) / 1000

    def piece_delay(self, pieces: int) -> float:
        """Seconds between two streamed pieces: a twenty-fifth of `delay_ms`, and the whole
        answer within six times `delay_ms`."""
        return min(self.delay_ms / 25, 6 * self.delay_ms / max(1, pieces)) / 1000

    async def _wait(self, seconds: float) -> None:
        if seconds > 0:
            await self._sleep(seconds)  # cancellable: a stop ends the wait at once

    def _usage(self, kind: str, started: float) -> Usage:
        # No token counts: the demo reads none, and an estimate would look real.
        return Usage(kind=kind, latency_ms=int((time.perf_counter() - started) * 1000))

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        output: type[T],
        kind: str,
        key: str = "",
        on_answer: AnswerSink | None = None,
    ) -> Completion[T]:
        """Answer the engine's structured prompts by reading them; an answer to the user
        written inside one goes to `on_answer` in small pieces with short pauses first."""
        prompt = "\n\n".join(m["content"] for m in messages)  # the catalog is in the system
        started = time.perf_counter()
        await self._wait(self.call_delay(kind, prompt))
        answer = self.decide(kind, prompt)
        if on_answer is not None and isinstance(text := answer.get("answer"), str):
            pieces = stream_pieces(text)
            pause = self.piece_delay(len(pieces))
            for index, piece in enumerate(pieces):
                if index:
                    await self._wait(pause)
                await on_answer(piece)
        usage = self._usage(kind, started)
        try:
            return Completion(output.model_validate(answer), usage)
        except ValueError as error:
            raise InvalidModelOutput(
                describe_error(error), raw=json.dumps(answer), usage=usage
            ) from error

    def decide(self, kind: str, prompt: str) -> dict[str, Any]:
        """The structured answer for one call kind."""
        match kind:
            case "taskplan":
                return self.taskplan(prompt)
            case "select":
                return self.select(prompt)
            case "parameters":
                return self.parameters(prompt)
            case "refine":
                return self.refine(prompt)
            case "review":
                return self.review(prompt)
            case "actionplan":
                return self.actionplan(prompt)
            case "thought":
                return self.thought(prompt)
        raise InvalidModelOutput(f"the demo model does not answer {kind!r} calls")

    def review(self, prompt: str) -> dict[str, Any]:
        """The verdict the steps bear out: success when every step succeeded (the report
        written, when there is one), else failed; said in a sentence."""
        steps = section(prompt, "Steps")
        if "(failed)" in steps or "(success)" not in steps:
            reason = "A step did not succeed, so the task is not done."
            return {"status": "failed", "reason": reason}
        reason = "Every step succeeded."
        if "document.generateReport (success)" in steps:
            reason = "Every step succeeded: the documents were read and the report is written."
        verdict = {"status": "success", "reason": reason}
        if answers("success", prompt):  # it answers too
            verdict["answer"] = self.drafted(prompt)
        return verdict

    def taskplan(self, prompt: str) -> dict[str, Any]:
        uploaded, _ = doc_lists(prompt)
        if not uploaded:
            return {"approach": "direct"}
        task = {
            "objective": "Extract the uploaded documents and write a report about them.",
            "successCriteria": ["The documents are extracted.", "A report is written."],
            "taskType": "document",
        }
        first = self.select(prompt) if '"firstAction": the first action' in prompt else None
        plan: dict[str, Any] = {"tasks": [task]}  # actions (the default), one task: no overview
        if '"plan": with exactly one task' in prompt:  # Actionplan: the action list comes too
            return {**plan, "plan": self.actionplan(prompt)["actions"]}
        return {**plan, "firstAction": first}

    def select(self, prompt: str) -> dict[str, Any]:
        steps = section(prompt, "Steps so far in this task")
        catalog = section(prompt, "Catalog")
        uploaded, produced = doc_lists(prompt)
        extracted = re.search(r"document\.extract \(success\)", steps)
        if not extracted and "document.extract(" in catalog:
            return {
                "action": "document.extract",
                "actionObjective": "Extract the text of the uploaded documents.",
                "requiredInputDocuments": [f"docList:{label}" for label in uploaded],
            }  # the defaults fit: no parameter to ask for, no context for Stage 2
        sources = produced[-1:] if extracted and produced else uploaded
        return {  # its title defaults to the objective, which fits: no parameter to ask for
            "action": "document.generateReport",
            "actionObjective": REPORT,
            "requiredInputDocuments": [f"docList:{label}" for label in sources],
        }

    def parameters(self, prompt: str) -> dict[str, Any]:
        names = re.findall(r"^- (\w+) \(", prompt.split("PARAMETERS_SCHEMA:", 1)[-1], re.M)
        objective = re.search(r"^ACTION_OBJECTIVE: (.*)$", prompt, re.M)
        values = {
            "aiPrompt": "Extract the main points, facts and figures.",
            "title": "Report on the uploaded documents",
            "query": objective.group(1) if objective else "summary",
        }
        return {
            "schema": "parameters_v1",
            "parameters": {n: values[n] for n in names if n in values},
        }

    def refine(self, prompt: str) -> dict[str, Any]:
        steps = section(prompt, "Steps so far")
        if "document.generateReport (success)" in steps:
            decision = {"decision": "stop", "reason": "The report is written.", "criteriaMet": True}
            if answers("stop", prompt):  # a round of one task: refine answers too
                decision["answer"] = self.drafted(prompt)
            return decision
        observed = section(prompt, "Latest observation")
        if '"success":false' in observed:
            what = "was rejected" if "rejected by the user" in observed else "failed"
            return {"decision": "stop", "reason": f"The action {what}; nothing more to try."}
        return {
            "decision": "continue",
            "reason": "The report is still missing.",
            "next": self.select(prompt),
        }

    def drafted(self, prompt: str) -> str:
        """The answer written with refine's stop: extractive, from the latest observation's
        previews (the report's text included)."""
        previews: list[dict[str, Any]] = []
        for block in FENCE.findall(prompt):  # the latest observation is the last JSON fenced
            try:
                previews = json.loads(block).get("previews", previews)
            except (ValueError, AttributeError):
                continue
        results = "\n".join(
            f"{p.get('name', '')}: {TITLE.sub('', p.get('snippet', ''), count=1)}" for p in previews
        )
        request = section(prompt, "User request")
        return self.final(
            f"## Results\n<<<UNTRUSTED DATA from results>>>\n{results}\n"
            f"<<<END UNTRUSTED DATA>>>\n\n## User request\n{request}",
            reports=True,
        )

    def actionplan(self, prompt: str) -> dict[str, Any]:
        uploaded, _ = doc_lists(prompt)
        where = re.search(r"docList:round(\d+)_task(\d+)_action(\d+)_extract", prompt)
        r, t, a = where.groups() if where else ("1", "1", "1")
        extract = f"docList:round{r}_task{t}_action{a}_extract"
        return {
            "actions": [
                {  # the defaults fit both: no parameters
                    "action": "document.extract",
                    "actionObjective": "Extract the uploaded documents.",
                    "requiredInputDocuments": [f"docList:{label}" for label in uploaded],
                    "resultLabel": "extract",
                },
                {
                    "action": "document.generateReport",
                    "actionObjective": REPORT,
                    "requiredInputDocuments": [extract],
                    "resultLabel": "report",
                },
            ]
        }

    def thought(self, prompt: str) -> dict[str, Any]:
        """One thought, honest about what the demo can do: the attached documents summarised
        extractively; without any, it says it cannot reason and leaves the solving step
        pending (the host then ends the round unfinished)."""
        read = [
            f"**{name}**\n\n{join_blocks(found)}"
            for name, text in fenced_texts(documents_part(prompt))
            if (found := whole_blocks(markdown_blocks(readable_text(text))))
        ]
        if read:
            summary = f"{SUMMARY}\n\n" + "\n\n".join(read[:6])
            return {
                "current_thinking": summary,
                "planning": [
                    {"description": "Read the attached documents", "status": "Done"},
                    {"description": "Quote their main points", "status": "Done"},
                ],
                "next_thought_needed": False,
            }
        return {
            "current_thinking": f"{CANNOT} It can only read and summarise documents you attach.",
            "planning": [
                {"description": "Read the problem", "status": "Done"},
                {"description": "Solve the problem", "status": "Pending"},
            ],
            "next_thought_needed": False,
        }

    def final(self, prompt: str, *, reports: bool = False) -> str:
        """An extractive answer: what was read, with its headings and lists, and the files
        made (`reports`: a report's own text is summarised too)."""
        blocks = FENCE.findall(section(prompt, "Results"))
        parts: list[str] = []
        files: list[str] = []
        for block in blocks:
            for line in block.splitlines():
                name, _, text = line.partition(": ")
                if not text:
                    continue
                report = "report" in name.lower()
                if report or not name.lower().endswith(READABLE):
                    files.append(name)
                readable = (reports or not report) and name.lower().endswith(READABLE)
                if readable and (found := whole_blocks(markdown_blocks(readable_text(text)))):
                    parts.append(f"**{name}**\n\n{join_blocks(found)}")
        parts = parts[:6]
        if files:
            parts.append("Files written: " + ", ".join(f"`{name}`" for name in files[:6]) + ".")
        if not parts and "## Results" not in prompt:  # a direct answer: nothing to quote
            raise ModelUnavailable(
                f"{CANNOT} Attach a document to have it read and summarised, or ask the "
                "administrator to configure a model.",
                cause="demo",
            )
        if not parts:
            return "The demo model found nothing it could quote in what the steps produced."
        return f"{SUMMARY}\n\n" + "\n\n".join(parts)

    async def complete_text(self, messages: Sequence[Message], *, kind: str) -> TextCompletion:
        """A plain-text answer (the extractive final answer)."""
        started = time.perf_counter()
        text = self.final(answer_prompt(messages))
        await self._wait(self.call_delay(kind, text))
        return TextCompletion(text, self._usage(kind, started))

    async def stream_text(
        self, messages: Sequence[Message], *, kind: str, key: str = ""
    ) -> AsyncIterator[str | Usage]:
        """The extractive answer in small pieces with short pauses, then its usage."""
        started = time.perf_counter()
        text = self.final(answer_prompt(messages))
        await self._wait(self.call_delay(kind, text))  # until the first piece
        pieces = stream_pieces(text)
        pause = self.piece_delay(len(pieces))
        for index, piece in enumerate(pieces):
            if index:
                await self._wait(pause)
            yield piece
        yield self._usage(kind, started)
