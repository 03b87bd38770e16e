"""The model behind the benches' localhost server: the demo policy for PowerOn, a replay of the
React run for LangGraph, every answer written as strict mode writes it, and every request
recorded with its tokens and modelled time.

A request's model id says whose it is: "name@system/size/run" (run 0: the warm-up), where
`name` is the model the request names ("main", or "small" for a call the small model answers:
each request is priced by that name).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, RootModel

from bench.catalog_tools import openai_name
from bench.rendering import count
from bench.tally import SMALL
from bench.vs_react_report import LATENCY_BASE, LATENCY_PER_TOKEN
from bench.written import structured_answer, tool_arguments, tool_call_tokens
from tests.support.fake_openai import FakeReply
from tests.support.fake_tool_calls import tool_calls
from tests.support.prompt_facts import facts_from_prompt
from workflows.engine.demo.policy import DemoLLM
from workflows.engine.model import llm as engine_llm
from workflows.engine.model.formats import ASKED, join_answer
from workflows.engine.model.request import Request
from workflows.engine.model.staged import StagedLLM

BENCH_KIND = "x_bench_kind"
"""The key of the request body that tells the bench's server the engine's call kind."""


def model_id(name: str, system: str, size: int, run: int) -> str:
    """The model id a bench request carries: the model's name, then whose request it is."""
    return f"{name}@{system}/{size}/{run}"


@dataclass
class Trace:
    """What a PowerOn React run did, for LangGraph to do the same."""

    actions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    final: str = ""


@dataclass
class Call:
    """One request the server answered."""

    system: str
    size: int
    run: int
    kind: str
    model: str
    """The model the request named ("main" or "small")."""
    body: dict[str, Any]
    output_tokens: int
    """Output as strict mode writes it (every required key, compact)."""
    old_output_tokens: int
    """Output as the earlier yardstick counted it (the policy's keys, spaced JSON)."""
    seconds: float
    """Modelled model time of the call, as the server waited it (0 for the warm-up)."""
    content: str = ""
    """The answer's text (a structured answer's JSON); LangGraph's tool calls are left out."""
    structured: bool = False


class AnyAnswer(RootModel[dict[str, Any]]):
    """Whatever the demo policy answers; the engine validates it."""


class Model:
    """The server's answers: the demo policy for PowerOn (reading the messages as the demo
    model does), the React run's trace for LangGraph."""

    def __init__(self, latency_scale: float) -> None:
        self.latency_scale = latency_scale
        self.kinds: dict[str, str] = {}
        """Response-format schema name -> the engine's call kind (learnt from the engine)."""
        self.outputs: dict[str, type[BaseModel]] = {}
        """Response-format schema name -> the engine's answer model (learnt from the engine)."""
        self.traces: dict[tuple[int, int], Trace] = {}
        self.calls: list[Call] = []
        self.errors: list[str] = []

    def __call__(self, body: dict[str, Any]) -> FakeReply:
        name, whose = body["model"].split("@")
        system, size, run = whose.split("/")
        messages = body["messages"]
        response_format = body.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("name")
        said = body.get(BENCH_KIND, "")
        structured = bool(schema) or said in self.outputs
        old = 0
        try:
            if body.get("tools"):
                trace = self.traces[int(size), int(run)]
                kind, content, tokens, old = self.agent_turn(trace, messages, body["tools"])
            elif structured:
                kind = said or self.kinds.get(schema, schema)
                request = Request(messages, facts_from_prompt(kind, messages))
                answer = DemoLLM().complete(request, output=AnyAnswer, kind=kind)
                value = asyncio.run(answer).value.root
                answer_model = self.outputs.get(schema or "") or self.outputs.get(kind)
                if answer_model is not None and ASKED.get(answer_model) == "answer_after":
                    content = join_answer(value)  # the answer after the JSON, as plain text
                else:
                    content = structured_answer(value, response_format, answer_model)
                tokens, old = count(content), count(json.dumps(value, ensure_ascii=False))
            else:
                kind = "final" if body.get("stream") else "text"
                request = Request(messages, facts_from_prompt(kind, messages))
                content = asyncio.run(DemoLLM().complete_text(request, kind=kind)).text
                tokens = old = count(content)
        except Exception as error:
            self.errors.append(f"{body['model']} {schema or 'text'}: {error!r}")
            raise
        modelled = LATENCY_BASE + LATENCY_PER_TOKEN * tokens
        scale = self.latency_scale if int(run) else 0.0
        written = content if isinstance(content, str) else ""
        self.calls.append(
            Call(
                system, int(size), int(run), kind, name, body, tokens, old,
                scale * modelled, written, structured,
            )
        )  # fmt: skip
        if not body.get("stream"):
            return FakeReply(content=content, delay=scale * modelled)
        pieces = max(1, len(str(content).split()))  # the server streams a word per chunk
        spread = scale * LATENCY_PER_TOKEN * tokens / (pieces + 2)
        return FakeReply(content=content, delay=scale * LATENCY_BASE, chunk_delay=spread)

    def agent_turn(
        self, trace: Trace, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[str, Any, int, int]:
        """The next tool call of the trace, or its final answer once every tool has run: kind,
        reply, output tokens and the earlier yardstick's output tokens."""
        done = sum(message["role"] == "tool" for message in messages)
        if done < len(trace.actions):
            name, arguments = trace.actions[done]
            called = openai_name(name)
            written = tool_arguments(called, arguments, tools)
            old = count(called) + count(json.dumps(arguments, ensure_ascii=False))
            reply = tool_calls((called, json.loads(written)))
            return "tool call", reply, tool_call_tokens(called, written), old
        return "final", trace.final, count(trace.final), count(trace.final)


class KindRecordingLLM(engine_llm.OpenAICompatibleLLM):
    """The engine's real client; it also tells the server which call kind and answer model
    each request is (the schema's name, and the kind in the request's body, which no provider
    bills: a request without a schema has no name to go by)."""

    def __init__(
        self, *, kinds: dict[str, str], outputs: dict[str, type[BaseModel]], **options: Any
    ) -> None:
        super().__init__(**options)
        self.kinds, self.outputs = kinds, outputs

    async def complete(self, messages: Any, *, output: Any, kind: str, **options: Any) -> Any:
        self.kinds[output.__name__] = kind
        self.outputs[output.__name__] = output
        self.outputs[kind] = output
        return await super().complete(messages, output=output, kind=kind, **options)

    def _params(self, messages: Any, kind: str) -> dict[str, Any]:
        params = super()._params(messages, kind)
        params["extra_body"] = {BENCH_KIND: kind}
        return params


def staged_llm(
    model: Model, system: str, size: int, run: int, small_kinds: frozenset[str], **options: Any
) -> StagedLLM:
    """The product's per-stage routing over two recording clients: the main model's requests
    name "main", the small model's "small" (each priced by the sheet of the model it names)."""
    clients = {
        name: KindRecordingLLM(
            kinds=model.kinds,
            outputs=model.outputs,
            model=model_id(name, system, size, run),
            **options,
        )  # fmt: skip
        for name in ("main", SMALL)
    }
    return StagedLLM(clients["main"], clients[SMALL], small_kinds=small_kinds)
