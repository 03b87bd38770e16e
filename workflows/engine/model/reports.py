"""What a model call cost and why it failed, in words: read off the SDK's responses and errors
for llm.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import openai

from workflows.engine.model.bounded import ReplyTooLarge
from workflows.engine.model.slots import timings_of
from workflows.engine.records.protocols import InvalidModelOutput, Message, ModelUnavailable, Usage

RETRIED = {"timeout", "unreachable", "rate_limit", "server"}
"""Failure causes the SDK retries before giving up."""
PLAIN = {
    "unreachable": "could not be reached",
    "auth": "refused the app's credentials",
    "model": "asked for is not served by its server",
    "rate_limit": "kept refusing requests as too many",
    "refused": "refused the request",
    "server": "server failed",
    "too_large": "sent an answer larger than the app reads",
}
"""What happened, for everyone: no address, no setting, no server's own words."""
ASK = "Ask the administrator to check the model's settings."
ADVICE = {
    "timeout": "Try again; if it keeps happening, ask the administrator to give the model more "
    "time.",
    "unreachable": "Ask the administrator to check the model's settings and that its server runs.",
    "auth": ASK,
    "model": ASK,
    "rate_limit": "Wait a moment and send again.",
    "refused": ASK,
    "server": "Try again later; if it keeps happening, tell the administrator.",
}
"""What everyone can do about it (the operator's own advice is the failure's detail)."""
TIMEOUT_HINT = "if it keeps happening, ask the administrator to give the model more time"
"""Said to everyone after a call that did not answer in time (what to raise is for staff)."""


def failure(
    error: Exception,
    *,
    server: str,
    model: str,
    timeout: float,
    retries: int,
    advice: Mapping[str, str],
    broke_off: bool = False,
) -> ModelUnavailable:
    """One readable failure, said twice: for everyone, what happened and what they can do
    (the plain sentence: no address, no setting); for the operator, at which server and what
    to fix (the host's `advice` per cause), as the failure's `detail`."""
    where = f"The model server at {server}"
    status = getattr(error, "status_code", None)
    body = getattr(error, "body", None)
    detail = body.get("message") if isinstance(body, dict) else None
    detail = str(detail or getattr(error, "message", "") or error)
    if isinstance(error, ReplyTooLarge):
        cause, what, broke_off = "too_large", error.message, False  # said whole, not retried
    elif isinstance(error, openai.APITimeoutError):
        cause, what = "timeout", f"did not answer within {timeout:g} s"
    elif isinstance(error, openai.APIConnectionError):
        cause, what = "unreachable", "could not be reached"
    elif status in (401, 403):
        cause, what = "auth", f"refused the API key ({status})"
    elif status == 404:
        cause, what = "model", f"does not serve the model {model!r} (404)"
    elif status == 429:
        cause, what = "rate_limit", "kept refusing requests as too many (429)"
    elif status is not None and status < 500:
        cause, what = "refused", f"refused the request ({status}: {detail[:200]})"
    else:
        cause, what = "server", f"failed ({status or 'error'}: {detail[:200]})"
    if broke_off and cause == "timeout":
        what = f"stopped partway through its answer: nothing came for {timeout:g} s"
    elif broke_off:
        what = f"broke off its answer ({detail[:200]})"
    elif retries and cause in RETRIED:
        what += f" (tried {retries + 1} times)"
    said = advice.get(cause, "")
    detail = f"{where} {what}." + (f" {said}" if said else "")
    plain = f"The model {PLAIN.get(cause, 'failed')}"
    if cause == "timeout":
        plain = f"The model did not answer within {timeout:g} s"
    said_too = [str(status)] if status and cause != "too_large" else []
    if broke_off and cause == "timeout":
        plain = f"The model stopped partway through its answer: nothing came for {timeout:g} s"
    elif broke_off:
        plain = "The model broke off its answer"
    elif retries and cause in RETRIED:
        said_too.append(f"tried {retries + 1} times")
    plain += f" ({', '.join(said_too)})" if said_too else ""
    return ModelUnavailable(f"{plain}. {ADVICE.get(cause, ASK)}", cause=cause, detail=detail)


def timed_out(seconds: float, text: str, *, usage: Usage, advice: str) -> InvalidModelOutput:
    """A structured answer that did not come within `seconds` (`text`: what had streamed of
    it), with the host's advice for people. The model is said to have maybe looped only when
    its answer had begun: one that never began was slow, or its server busy."""
    message = f"no answer within {seconds:g} s"
    if text:
        message += (
            f": it stopped partway through ({len(text)} characters written) and may have "
            "been looping"
        )
    return InvalidModelOutput(message, raw=text, usage=usage, cause="timeout", advice=advice)


def usage_of(kind: str, response: Any, latency: int) -> Usage:
    """The tokens a response (or a stream's last chunk) reports, the cached ones apart: a
    provider's prompt cache, or the prefix a local server reused (llama.cpp's `timings` say
    it too, where its usage does not)."""
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", 0) or 0
    if not cached and (timings := timings_of(response)) is not None:
        cached = timings[1]
    return Usage(
        kind=kind,
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        cached_tokens=cached,
        latency_ms=latency,
    )


def estimated_usage(kind: str, messages: Sequence[Message], text: str, latency: int) -> Usage:
    """Usage estimated from the characters, when the server reported none."""
    return Usage(
        kind=kind,
        prompt_tokens=estimated_tokens(messages),
        completion_tokens=len(text) // 4,
        latency_ms=latency,
    )


def estimated_tokens(messages: Sequence[Message]) -> int:
    """About four characters per token."""
    return sum(len(m["content"]) for m in messages) // 4
