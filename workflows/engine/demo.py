"""The demo model: a deterministic offline policy for machines with no model configured.

It speaks the same LLM protocol as a real model and reads the engine's own prompts:
extract the uploaded documents, write a report, stop, and answer with an extractive
summary. Without documents it answers directly. Labelled "demo model" everywhere.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from .contracts import (
    Completion,
    InvalidModelOutput,
    Message,
    T,
    TextCompletion,
    Usage,
    describe_error,
)

DEMO_LABEL = "demo model"
_PRODUCED = re.compile(r"^round\d+_task\d+_action\d+_")
_FENCE = re.compile(r"<<<UNTRUSTED DATA from [^>]*>>>\n(.*?)\n<<<END UNTRUSTED DATA>>>", re.S)


def section(prompt: str, title: str) -> str:
    """The text under `## title` up to the next heading."""
    match = re.search(rf"^## {re.escape(title)}[^\n]*\n(.*?)(?=^## |\Z)", prompt, re.S | re.M)
    return match.group(1).strip() if match else ""


def doc_lists(prompt: str) -> tuple[list[str], list[str]]:
    """(uploaded, produced) docList labels of the prompt's documents index."""
    labels = re.findall(r"^- docList:(\S+)", section(prompt, "Documents"), re.M)
    uploaded = [label for label in labels if not _PRODUCED.match(label)]
    produced = [label for label in labels if _PRODUCED.match(label)]
    return uploaded, produced


_META = re.compile(r"_[^_\n]{1,160}_")
_FILE_HEADING = re.compile(r"#+\s+\S+\.\w{2,5}\b")
_SECTION_HEADING = re.compile(r"#+\s+(?:Page \d+|Sheet \d+|Section \d+|Text|Content)\b")
_READABLE = (".md", ".txt", ".csv", ".json")


def readable_text(preview: str) -> str:
    """A preview of extracted Markdown without its metadata lines and section markers."""
    text = _META.sub(" ", preview)
    text = _FILE_HEADING.sub(" ", text)
    text = _SECTION_HEADING.sub(" ", text)
    return " ".join(text.replace("#", " ").split())


def leading_sentences(text: str, count: int = 2) -> str:
    """The first sentences of a text, whitespace collapsed."""
    plain = " ".join(re.sub(r"(^|\s)#+\s", " ", text).split())
    sentences = re.split(r"(?<=[.!?])\s+", plain)
    return " ".join(sentences[:count])[:400]


class DemoLLM:
    """A deterministic policy behind the LLM protocol."""

    label = DEMO_LABEL

    def _usage(self, kind: str, messages: Sequence[Message], text: str) -> Usage:
        prompt = sum(len(m["content"]) for m in messages)
        return Usage(kind=kind, prompt_tokens=prompt // 4, completion_tokens=len(text) // 4)

    async def complete(
        self, messages: Sequence[Message], *, output: type[T], kind: str
    ) -> Completion[T]:
        """Answer the engine's structured prompts by reading them."""
        prompt = "\n\n".join(m["content"] for m in messages)  # the catalog is in the system
        started = time.perf_counter()
        answer = self.decide(kind, prompt)
        usage = self._usage(kind, messages, json.dumps(answer))
        usage.latency_ms = int((time.perf_counter() - started) * 1000)
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
                failed = "(failed)" in section(prompt, "Steps")
                return {"status": "failed" if failed else "success", "reason": "Demo review."}
            case "actionplan":
                return self.actionplan(prompt)
            case "thought":
                return self.thought(prompt)
        raise InvalidModelOutput(f"the demo model does not answer {kind!r} calls")

    def taskplan(self, prompt: str) -> dict[str, Any]:
        uploaded, _ = doc_lists(prompt)
        if not uploaded:
            return {"overview": "Answer directly.", "tasks": []}
        task = {
            "objective": "Extract the uploaded documents and write a report about them.",
            "successCriteria": ["The documents are extracted.", "A report is written."],
            "taskType": "document",
        }
        first = self.select(prompt) if "firstAction: the first action" in prompt else None
        return {"overview": "Extract, then report.", "tasks": [task], "firstAction": first}

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
                "parametersContext": "Extract the text as it is.",
                "parametersSchema": {"fields": []},
            }
        sources = produced[-1:] if extracted and produced else uploaded
        return {
            "action": "document.generateReport",
            "actionObjective": "Write a report from the extracted text.",
            "requiredInputDocuments": [f"docList:{label}" for label in sources],
            "parametersContext": "A short report of the documents' content.",
            "parametersSchema": {"fields": [{"name": "title", "type": "string"}]},
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
            return {"decision": "stop", "reason": "The report is written.", "criteriaMet": True}
        if '"success":false' in section(prompt, "Latest observation"):
            return {"decision": "stop", "reason": "The action failed; nothing more to try."}
        return {
            "decision": "continue",
            "reason": "The report is still missing.",
            "next": self.select(prompt),
        }

    def actionplan(self, prompt: str) -> dict[str, Any]:
        uploaded, _ = doc_lists(prompt)
        where = re.search(r"docList:round(\d+)_task(\d+)_action<(\d+)", prompt)
        r, t, a = where.groups() if where else ("1", "1", "1")
        extract = f"docList:round{r}_task{t}_action{a}_extract"
        return {
            "actions": [
                {
                    "action": "document.extract",
                    "actionObjective": "Extract the uploaded documents.",
                    "requiredInputDocuments": [f"docList:{label}" for label in uploaded],
                    "parameters": {"aiPrompt": "Extract the main points."},
                    "resultLabel": "extract",
                },
                {
                    "action": "document.generateReport",
                    "actionObjective": "Write a report.",
                    "requiredInputDocuments": [extract],
                    "parameters": {"title": "Report on the uploaded documents"},
                    "resultLabel": "report",
                },
            ]
        }

    def thought(self, prompt: str) -> dict[str, Any]:
        problem = section(prompt, "Problem")
        summary = leading_sentences(problem)
        return {
            "current_thinking": f"(demo model) The problem, in its own words: {summary}",
            "planning": [
                {"description": "Read the problem", "status": "Done", "result": summary[:120]},
                {"description": "State it back", "status": "Done", "result": "Done extractively."},
            ],
            "next_thought_needed": False,
        }

    def final(self, prompt: str) -> str:
        """An extractive answer: the leading sentences of what was read, and the files made."""
        blocks = _FENCE.findall(section(prompt, "Results"))
        lines: list[str] = []
        files: list[str] = []
        for block in blocks:
            for line in block.splitlines():
                name, _, text = line.partition(": ")
                if not text:
                    continue
                if "report" in name.lower() or not name.lower().endswith(_READABLE):
                    files.append(name)
                elif sentences := leading_sentences(readable_text(text)):
                    lines.append(f"- **{name}**: {sentences}")
        if files:
            lines.append("\nFiles written: " + ", ".join(f"`{name}`" for name in files[:6]) + ".")
        if not lines:
            request = leading_sentences(section(prompt, "User request"), 1)
            return (
                "I am the demo model: no language model is configured, so I can only extract "
                f"and summarise uploaded documents. Your message was: {request}"
            )
        return "Summary by the demo model (extractive):\n\n" + "\n".join(lines[:12])

    async def complete_text(self, messages: Sequence[Message], *, kind: str) -> TextCompletion:
        """A plain-text answer (the extractive final answer)."""
        text = self.final(messages[-1]["content"] if messages else "")
        return TextCompletion(text, self._usage(kind, messages, text))

    async def stream_text(
        self, messages: Sequence[Message], *, kind: str, key: str = ""
    ) -> AsyncIterator[str | Usage]:
        """The extractive answer, word by word, then its usage."""
        text = self.final(messages[-1]["content"] if messages else "")
        for index, word in enumerate(text.split(" ")):
            yield word if index == 0 else " " + word
        yield self._usage(kind, messages, text)
