"""The HTTP side of a model call: each request's parameters (its token limit, its timeout
that grows with the prompt, the server's slots), one chat-completions request (asked again
with `max_completion_tokens` when a server wants it; a structured one not repeated as it was
when it timed out), the guard that keeps tests on this machine, and what still fails said as
one readable ModelUnavailable. `llm.py` speaks the protocol over it."""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI

from workflows.engine.model.reports import estimated_tokens, estimated_usage, failure, timed_out
from workflows.engine.model.slots import reuse_body, server_slots
from workflows.engine.records.protocols import InvalidModelOutput, Message, ModelUnavailable

ALLOW_REMOTE_MODEL_REQUESTS = True
"""Tests set this to False: then only 127.0.0.1/localhost servers may be called."""

R = TypeVar("R")

MAX_TOKENS: dict[str, int] = {
    "taskplan": 900,
    "select": 600,
    "parameters": 400,
    "refine": 1_900,  # 700 for the decision, 1,200 for the answer it may carry
    "review": 1_600,  # 400 for the verdict, 1,200 for the answer it may carry (Actionplan)
    "actionplan": 1_200,
    "thought": 1_500,
    "final": 1_200,
}
"""The most tokens an answer of each kind may take; enough for any sensible answer, so a model
that loops is cut off instead of running until the timeout."""
DEFAULT_MAX_TOKENS = 2_000
"""Calls of other kinds (the actions' own, such as ai.process)."""
_MAX_TOKENS_ERROR = re.compile(r"max_tokens", re.IGNORECASE)


class ChatTransport:
    """Requests to an OpenAI-compatible chat-completions server, for a model over it (the
    attributes are set by the model's constructor)."""

    model: str
    timeout: float
    max_retries: int
    temperature: float | None
    advice: dict[str, str]
    stream_usage: bool
    timeout_per_1k_tokens: float
    max_tokens: dict[str, int]
    token_limit_name: str
    slots: int | Literal["auto"]
    max_reply_bytes: int
    _base_url: str | None
    _client: AsyncOpenAI

    def _timed_out(self, messages: Sequence[Message], kind: str, text: str) -> InvalidModelOutput:
        """A structured answer that did not come in time (`text`: what had streamed of it)."""
        seconds = self.call_timeout(messages, kind)
        usage = estimated_usage(kind, messages, text, int(seconds * 1000))
        return timed_out(seconds, text, usage=usage, advice=self.advice.get("timeout", ""))

    def limit(self, kind: str) -> int:
        """The most tokens an answer of this kind may take."""
        return self.max_tokens.get(kind, DEFAULT_MAX_TOKENS)

    def call_timeout(self, messages: Sequence[Message], kind: str) -> float:
        """The timeout of one call: the base, plus time per 1,000 tokens of prompt and limit."""
        tokens = estimated_tokens(messages) + self.limit(kind)
        return self.timeout + self.timeout_per_1k_tokens * tokens / 1000

    async def _open_stream(self, messages: Sequence[Message], kind: str) -> Any:
        params = self._params(messages, kind)
        if self.stream_usage:
            try:
                return await self._create(
                    params, stream=True, stream_options={"include_usage": True}
                )
            except openai.BadRequestError as error:
                if "stream_options" not in str(error):
                    raise
                self.stream_usage = False
        return await self._create(params, stream=True)

    def _params(self, messages: Sequence[Message], kind: str) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "timeout": self.call_timeout(messages, kind),
            self.token_limit_name: self.limit(kind),
        }
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if isinstance(self.slots, int) and (reuse := reuse_body(kind, self.slots)):
            params["extra_body"] = reuse
        return params

    async def _resolve_slots(self) -> None:
        """With slots "auto", ask the server once per process how many it has."""
        if self.slots == "auto":
            self._guard()
            self.slots = await server_slots(self._client, self._base_url or "")

    async def _create(
        self, params: dict[str, Any], *, client: AsyncOpenAI | None = None, **extra: Any
    ) -> Any:
        """One chat-completions request; a server that refuses `max_tokens` is asked again
        with `max_completion_tokens` (and from then on)."""
        create = (client or self._client).chat.completions.create
        try:
            return await create(**params, **extra)
        except openai.BadRequestError as error:
            if self.token_limit_name != "max_tokens" or not _MAX_TOKENS_ERROR.search(str(error)):
                raise
            self.token_limit_name = "max_completion_tokens"
            params = {**params, "max_completion_tokens": params.pop("max_tokens")}
            return await create(**params, **extra)

    async def _call(
        self, messages: Sequence[Message], *, kind: str, response_format: dict[str, Any] | None
    ) -> tuple[Any, int]:
        params = self._params(messages, kind)
        if response_format is not None:
            params["response_format"] = response_format
        started = time.perf_counter()
        if response_format is None:
            response = await self._calling(lambda: self._create(params))
        else:
            response = await self._calling(lambda: self._create_once(params))
        return response, int((time.perf_counter() - started) * 1000)

    async def _create_once(self, params: dict[str, Any]) -> Any:
        """A structured request that is not repeated as it was when it timed out (the model
        would loop the same way); other transient failures get the SDK's retries."""
        try:
            return await self._create(params, client=self._client.with_options(max_retries=0))
        except openai.APITimeoutError:
            raise
        except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError):
            if not self.max_retries:
                raise
            retrying = self._client.with_options(max_retries=self.max_retries - 1)
            return await self._create(params, client=retrying)

    async def _calling(self, call: Callable[[], Awaitable[R]]) -> R:
        """Make the call (the SDK retries connection errors, timeouts, 429 and 5xx); what
        still fails is ModelUnavailable, except a 400 the caller may handle."""
        self._guard()
        try:
            return await call()
        except (openai.BadRequestError, openai.APITimeoutError):
            raise  # the caller decides: a response format to drop, a refusal, a shorter retry
        except openai.APIError as error:
            raise self._unavailable(error) from error

    def _unavailable(
        self, error: Exception, *, broke_off: bool = False, seconds: float | None = None
    ) -> ModelUnavailable:
        """One readable failure: what happened at which server, and what to fix (`seconds`:
        the call's timeout, when it is known)."""
        return failure(
            error,
            server=self._server(),
            model=self.model,
            timeout=self.timeout if seconds is None else seconds,
            retries=self.max_retries,
            advice=self.advice,
            broke_off=broke_off,
        )

    def _server(self) -> str:
        parts = urlsplit(self._base_url or "https://api.openai.com/v1")
        return parts.netloc or parts.path

    def _guard(self) -> None:
        host = urlsplit(self._base_url).hostname or ""
        if not ALLOW_REMOTE_MODEL_REQUESTS and host not in {"127.0.0.1", "localhost", "::1"}:
            raise RuntimeError(f"model requests to {host!r} are disabled here")
