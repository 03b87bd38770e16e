"""The demo model: a deterministic offline policy for machines with no model configured.

It speaks the same LLM protocol as a real model, and answers from the facts each request
carries (`model/request.py`: the kind of call, the documents, the catalog, the steps, the
results) rather than from the prompt's prose: extract the uploaded documents, write a report,
stop, and answer with an extractive summary. Without documents it says that it cannot
answer, and the round fails: it never passes off a request it could not do as done.
Labelled "demo model" everywhere.

Given `delay_ms` it takes its time like a model: each call waits a few hundred milliseconds
and the answer streams in small pieces, so the loop can be watched, stopped and steered.
Every wait is an asyncio sleep, which a stop cancels at once. It reports no tokens: it
reads none, and an estimate would pass for a real count.
"""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from workflows.engine.demo.text import (
    READABLE,
    TITLE,
    doc_lists,
    join_blocks,
    markdown_blocks,
    readable_text,
    stream_pieces,
    whole_blocks,
)
from workflows.engine.model.request import Facts, facts_of
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
        """Answer the engine's structured calls from the facts their request carries; an
        answer to the user written inside one goes to `on_answer` in small pieces with short
        pauses first."""
        prompt = "\n\n".join(m["content"] for m in messages)  # its size sets the pace
        started = time.perf_counter()
        await self._wait(self.call_delay(kind, prompt))
        answer = self.decide(kind, facts_of(messages, kind))
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

    def decide(self, kind: str, facts: Facts) -> dict[str, Any]:
        """The structured answer for one call kind."""
        match kind:
            case "taskplan":
                return self.taskplan(facts)
            case "select":
                return self.select(facts)
            case "parameters":
                return self.parameters(facts)
            case "refine":
                return self.refine(facts)
            case "review":
                return self.review(facts)
            case "actionplan":
                return self.actionplan(facts)
            case "thought":
                return self.thought(facts)
        raise InvalidModelOutput(f"the demo model does not answer {kind!r} calls")

    def review(self, facts: Facts) -> dict[str, Any]:
        """The verdict the steps bear out: success when every step succeeded (the report
        written, when there is one), else failed; said in a sentence."""
        steps = facts.steps
        if not steps or not all(step.success for step in steps):
            reason = "A step did not succeed, so the task is not done."
            return {"status": "failed", "reason": reason}
        reason = "Every step succeeded."
        if succeeded(facts, "document.generateReport"):
            reason = "Every step succeeded: the documents were read and the report is written."
        verdict = {"status": "success", "reason": reason}
        if facts.answering:  # it answers too
            verdict["answer"] = self.drafted(facts)
        return verdict

    def taskplan(self, facts: Facts) -> dict[str, Any]:
        """One task that extracts the uploads and writes a report (with its first action, or
        its whole action list, when the plan may carry them); none without uploads."""
        uploaded, _ = doc_lists(facts)
        if not uploaded:
            return {"approach": "direct"}
        task = {
            "objective": "Extract the uploaded documents and write a report about them.",
            "successCriteria": ["The documents are extracted.", "A report is written."],
            "taskType": "document",
        }
        first = self.select(facts) if facts.asks_first_action else None
        plan: dict[str, Any] = {"tasks": [task]}  # actions (the default), one task: no overview
        if facts.asks_plan:  # Actionplan: the action list comes too
            return {**plan, "plan": self.actionplan(facts)["actions"]}
        return {**plan, "firstAction": first}

    def select(self, facts: Facts) -> dict[str, Any]:
        """Extract the uploads first (when the catalog can), then write the report from the
        newest result."""
        uploaded, produced = doc_lists(facts)
        extracted = succeeded(facts, "document.extract")
        if not extracted and "document.extract" in facts.catalog:
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

    def parameters(self, facts: Facts) -> dict[str, Any]:
        """The parameters asked for that the demo has a value for."""
        values = {
            "aiPrompt": "Extract the main points, facts and figures.",
            "title": "Report on the uploaded documents",
            "query": facts.objective or "summary",
        }
        return {
            "schema": "parameters_v1",
            "parameters": {n: values[n] for n in facts.parameters if n in values},
        }

    def refine(self, facts: Facts) -> dict[str, Any]:
        """Stop once the report is written (answering, when asked) or an action failed;
        else go on with the next action."""
        if succeeded(facts, "document.generateReport"):
            decision = {"decision": "stop", "reason": "The report is written.", "criteriaMet": True}
            if facts.answering:  # a round of one task: refine answers too
                decision["answer"] = self.drafted(facts)
            return decision
        latest = facts.latest
        if latest is not None and not latest.success:
            rejected = "rejected by the user" in latest.model_dump_json()
            what = "was rejected" if rejected else "failed"
            return {"decision": "stop", "reason": f"The action {what}; nothing more to try."}
        return {
            "decision": "continue",
            "reason": "The report is still missing.",
            "next": self.select(facts),
        }

    def drafted(self, facts: Facts) -> str:
        """The answer written with refine's stop: extractive, from the latest observation's
        previews (the report's text included)."""
        previews = facts.latest.previews if facts.latest is not None else []
        results = [(p.name, TITLE.sub("", p.snippet, count=1)) for p in previews]
        return self.final(results, reports=True)

    def actionplan(self, facts: Facts) -> dict[str, Any]:
        """Extract the uploads, then write the report from the extract."""
        uploaded, _ = doc_lists(facts)
        extract = f"docList:round{facts.round}_task{facts.task}_action{facts.first_action}_extract"
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

    def thought(self, facts: Facts) -> dict[str, Any]:
        """One thought, honest about what the demo can do: the attached documents summarised
        extractively; without any, it says it cannot reason and leaves the solving step
        pending (the host then ends the round unfinished)."""
        read = [
            f"**{name}**\n\n{join_blocks(found)}"
            for name, text in facts.texts
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

    def final(self, results: Sequence[tuple[str, str]] | None, *, reports: bool = False) -> str:
        """An extractive answer: what was read, with its headings and lists, and the files
        made (`results`: each result's name and text, None for a direct answer; `reports`: a
        report's own text is summarised too)."""
        parts: list[str] = []
        files: list[str] = []
        for name, text in results or ():
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
        if not parts and results is None:  # a direct answer: nothing to quote
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
        text = self.final(facts_of(messages, kind).results)
        await self._wait(self.call_delay(kind, text))
        return TextCompletion(text, self._usage(kind, started))

    async def stream_text(
        self, messages: Sequence[Message], *, kind: str, key: str = ""
    ) -> AsyncIterator[str | Usage]:
        """The extractive answer in small pieces with short pauses, then its usage."""
        started = time.perf_counter()
        text = self.final(facts_of(messages, kind).results)
        await self._wait(self.call_delay(kind, text))  # until the first piece
        pieces = stream_pieces(text)
        pause = self.piece_delay(len(pieces))
        for index, piece in enumerate(pieces):
            if index:
                await self._wait(pause)
            yield piece
        yield self._usage(kind, started)


def succeeded(facts: Facts, action: str) -> bool:
    """Whether a step of the task ran `action` with success."""
    return any(step.name == action and step.success for step in facts.steps)
