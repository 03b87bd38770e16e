"""The one module that talks to a model: any OpenAI-compatible chat-completions server.

Structured answers ask for a json_schema response format (strict when the schema allows),
fall back to json_object, then to plain text, remembering per server and model what it
accepts; the JSON is then extracted robustly and validated into the requested model. Each
output model's schema is computed once per process, compact (the prompt explains the fields;
the schema only fixes their shape; see formats.py).

One AsyncOpenAI client per settings and event loop serves every run (`clients.py`); `warm`
rehearses a call at start through an in-process transport. The SDK retries transient failures
(honouring Retry-After); what still fails becomes one ModelUnavailable saying what failed and,
with the host's advice, what to fix (`reports.py`, which also reads the usage). The requests
themselves (parameters, limits, retries, the guard, failures) are `transport.py`'s.

Every call is bounded: `max_tokens` per kind of call, and a timeout that grows with the prompt
for slow local servers. A structured answer that was cut off at its limit or did not come in
time is not retried as it was (it would loop the same way): it becomes InvalidModelOutput
with its tokens counted, and the loop's corrective retry is a shorter, different prompt.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal

import openai
from openai import AsyncOpenAI
from pydantic import ValidationError

from workflows.engine.model.bounded import MAX_REPLY_BYTES, bounded_http_client, capped, cut_note
from workflows.engine.model.clients import (
    REHEARSAL,
    Rehearsal,
    ignore,
    rehearsal_client,
    shared_client,
    unlogged_requests,
)
from workflows.engine.model.formats import (
    ANSWER_KEY,
    ASKED,
    ResponseFormat,
    extract_json,
    response_format,
    split_answer,
)
from workflows.engine.model.jsonstream import FieldStream, TailStream
from workflows.engine.model.reports import (
    estimated_usage,
    usage_of,
)
from workflows.engine.model.transport import MAX_TOKENS, ChatTransport
from workflows.engine.records.protocols import (
    AnswerSink,
    Completion,
    InvalidModelOutput,
    Message,
    T,
    TextCompletion,
    Usage,
    describe_error,
)

_FORMATS: tuple[ResponseFormat, ...] = ("json_schema", "json_object", "text")
_FORMAT_ERROR = re.compile(r"response_format|json_schema|json_object|structured", re.IGNORECASE)

_ACCEPTED: dict[tuple[str | None, str], ResponseFormat] = {}
"""Per server and model, the richest response format it accepted (absent: not yet refused)."""


class OpenAICompatibleLLM(ChatTransport):
    """contracts.LLM over AsyncOpenAI, for OpenAI, Azure, vLLM, Ollama, llama.cpp and others.

    Cheap to create: with `shared=True` it uses the loop's shared client (see
    `shared_client`) and leaves it open; otherwise it opens its own and `aclose` closes it.
    """

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str,
        model: str,
        timeout: float = 60.0,
        max_retries: int = 2,
        temperature: float | None = 0.0,
        label: str | None = None,
        advice: Mapping[str, str] | None = None,
        shared: bool = False,
        timeout_per_1k_tokens: float = 0.0,
        max_tokens: Mapping[str, int] | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        slots: int | Literal["auto"] = 0,
    ) -> None:
        self.model = model
        self.label = label or model
        self.timeout = timeout
        self.max_retries = max_retries
        self.temperature = temperature
        self.advice = dict(advice or {})
        """What to fix, per failure cause (the host names its settings here)."""
        self.response_format: ResponseFormat = _ACCEPTED.get((base_url, model), "json_schema")
        """The richest format the server accepted so far (remembered for the process, so a
        server that refuses a format is not asked again by every run); it only degrades."""
        self.stream_usage = True
        self.timeout_per_1k_tokens = timeout_per_1k_tokens
        """Seconds added to `timeout` per 1,000 tokens of prompt (estimated) and answer limit:
        a slow local server gets the time a long prompt needs."""
        self.max_tokens = {**MAX_TOKENS, **(max_tokens or {})}
        self.token_limit_name = "max_tokens"
        """Newer OpenAI models refuse max_tokens and want max_completion_tokens."""
        self.slots = slots
        """The server's slots for prefix reuse (`slots.py`): a count, 0 for none, or "auto"
        to ask the server (llama.cpp's /props) on the first call."""
        self.max_reply_bytes = max_reply_bytes
        """A reply's text is cut at this many bytes, whatever the server does (`bounded.py`)."""
        self._base_url = base_url
        self._owns_client = not shared
        if shared:
            self._client = shared_client(
                base_url=base_url,
                api_key=api_key,
                timeout=timeout,
                max_retries=max_retries,
                max_reply_bytes=max_reply_bytes,
            )
        else:
            self._client = AsyncOpenAI(
                base_url=base_url,
                api_key=api_key or "unused",
                timeout=timeout,
                max_retries=max_retries,
                http_client=bounded_http_client(max_reply_bytes),
            )

    @property
    def client(self) -> AsyncOpenAI:
        """The AsyncOpenAI client this model calls through."""
        return self._client

    async def warm(self) -> None:
        """Rehearse a structured call, plain and streamed, through this client's SDK and settings
        without a request (an in-process transport answers), so a process's first round does
        not pay for what the SDK builds on its first call: its chat resources, the request's
        and response's types, the transport's connection pool."""
        twin = copy.copy(self)
        twin._client, twin._owns_client = rehearsal_client(self._client), True
        twin._guard = lambda: None  # type: ignore[method-assign]  # nothing leaves the process
        twin.slots = 0 if self.slots == "auto" else self.slots  # nothing to ask the server
        async with twin:
            with unlogged_requests():
                await twin.complete(REHEARSAL, output=Rehearsal, kind="rehearsal")
                await twin.complete(REHEARSAL, output=Rehearsal, kind="rehearsal", on_answer=ignore)

    async def aclose(self) -> None:
        """Close the HTTP connections of a client of its own (a shared one stays open)."""
        if self._owns_client:
            await self._client.close()

    async def __aenter__(self) -> OpenAICompatibleLLM:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # The protocol --------------------------------------------------------------------------

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        output: type[T],
        kind: str,
        key: str = "",
        on_answer: AnswerSink | None = None,
    ) -> Completion[T]:
        """Ask for JSON shaped as `output`; raise InvalidModelOutput when it does not fit, was
        cut off at its token limit, or did not come in time. With `on_answer`, the reply is
        streamed and its `answer` field handed to it as it arrives."""
        after = ASKED.get(output) == "answer_after"  # the answer follows the JSON, as text
        await self._resolve_slots()
        while True:
            fmt = self.response_format
            shape = response_format(output, fmt)
            try:
                if on_answer is None:
                    response, latency = await self._call(messages, kind=kind, response_format=shape)
                    usage = usage_of(kind, response, latency)
                    choice = response.choices[0] if response.choices else None
                    text = (choice.message.content or "") if choice else ""
                    finish = choice.finish_reason if choice else None
                else:
                    stream = TailStream() if after else FieldStream(ANSWER_KEY)
                    text, finish, usage = await self._streamed(
                        messages, kind, shape, on_answer, stream
                    )
                break
            except openai.BadRequestError as error:
                if "stream_options" in str(error) and self.stream_usage:
                    self.stream_usage = False  # a server that streams without usage
                    continue
                if fmt == "text" or not _FORMAT_ERROR.search(str(error)):
                    raise self._unavailable(error) from error
                self.response_format = _FORMATS[_FORMATS.index(fmt) + 1]
                _ACCEPTED[self._base_url, self.model] = self.response_format
            except openai.APITimeoutError as error:
                raise self._timed_out(messages, kind, "") from error
        try:
            value = output.model_validate(split_answer(text) if after else extract_json(text))
        except (ValueError, ValidationError) as error:
            if finish == "length":
                raise InvalidModelOutput(
                    f"the answer was cut off at its limit of {self.limit(kind)} tokens before it "
                    "was complete",
                    raw=text,
                    usage=usage,
                    cause="cut_off",
                ) from error
            raise InvalidModelOutput(describe_error(error), raw=text, usage=usage) from error
        return Completion(value, usage)

    async def _streamed(
        self,
        messages: Sequence[Message],
        kind: str,
        shape: dict[str, Any] | None,
        on_answer: AnswerSink,
        stream: FieldStream | TailStream,
    ) -> tuple[str, str | None, Usage]:
        """A structured reply streamed: (its text, why it finished, usage); the answer's
        characters (its `answer` field, or the text after the JSON) go to `on_answer` as
        `stream` decodes them."""
        params: dict[str, Any] = {**self._params(messages, kind), "stream": True}
        if shape is not None:
            params["response_format"] = shape
        if self.stream_usage:
            params["stream_options"] = {"include_usage": True}
        started = time.perf_counter()
        chunks = capped(
            await self._calling(lambda: self._create_once(params)), self.max_reply_bytes
        )
        text, finish, usage = "", None, None
        try:
            async for chunk in chunks:
                if chunk.usage is not None:
                    usage = usage_of(kind, chunk, int((time.perf_counter() - started) * 1000))
                for choice in chunk.choices or []:
                    finish = choice.finish_reason or finish
                    piece = choice.delta.content if choice.delta else None
                    if piece:
                        text += piece
                        if decoded := stream.feed(piece):
                            await on_answer(decoded)
        except openai.APITimeoutError as error:
            raise self._timed_out(messages, kind, text) from error
        except openai.APIError as error:
            raise self._unavailable(error, broke_off=True) from error
        latency = int((time.perf_counter() - started) * 1000)
        return text, finish, usage or estimated_usage(kind, messages, text, latency)

    async def complete_text(self, messages: Sequence[Message], *, kind: str) -> TextCompletion:
        """A plain-text answer."""
        await self._resolve_slots()
        try:
            response, latency = await self._call(messages, kind=kind, response_format=None)
        except openai.BadRequestError as error:
            raise self._unavailable(error) from error
        except openai.APITimeoutError as error:
            raise self._unavailable(error, seconds=self.call_timeout(messages, kind)) from error
        text = response.choices[0].message.content or "" if response.choices else ""
        return TextCompletion(text, usage_of(kind, response, latency))

    async def stream_text(
        self, messages: Sequence[Message], *, kind: str, key: str = ""
    ) -> AsyncIterator[str | Usage]:
        """Yield text deltas as they arrive, then one Usage (estimated if the server sent none)."""
        await self._resolve_slots()
        started = time.perf_counter()
        seconds = self.call_timeout(messages, kind)
        try:
            stream = capped(
                await self._calling(lambda: self._open_stream(messages, kind)),
                self.max_reply_bytes,
                note=cut_note(self.max_reply_bytes),
            )
        except (openai.BadRequestError, openai.APITimeoutError) as error:
            raise self._unavailable(error, seconds=seconds) from error
        text, usage = "", None
        try:
            async for chunk in stream:
                if chunk.usage is not None:
                    usage = usage_of(kind, chunk, int((time.perf_counter() - started) * 1000))
                for choice in chunk.choices or []:
                    piece = choice.delta.content if choice.delta else None
                    if piece:
                        text += piece
                        yield piece
        except openai.APIError as error:
            raise self._unavailable(error, broke_off=True, seconds=seconds) from error
        latency = int((time.perf_counter() - started) * 1000)
        yield usage or estimated_usage(kind, messages, text, latency)
