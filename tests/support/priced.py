"""A round answered by what each call asks for (one extract of the upload, then stop), with
the usage a provider would report, and what that usage costs at the tests' prices."""

from __future__ import annotations

from tests.support.fake_openai import FakeReply
from tests.support.replies import extract_step, params, review, stop, taskplan

PRICES = {"input": 2.0, "cached": 0.5, "output": 8.0}
"""The deployment's prices of these tests, per million tokens, in EUR."""
PRICE_SETTINGS = {
    "POWERON_PRICE_INPUT": "2",
    "POWERON_PRICE_CACHED_INPUT": "0.5",
    "POWERON_PRICE_OUTPUT": "8",
    "POWERON_PRICE_CURRENCY": "EUR",
}
"""The same prices as environment settings."""
USAGE = {
    "TaskPlan": (1200, 0, 90),
    "ActionSelection": (2100, 1024, 140),
    "ActionParameters": (600, 0, 40),
    "RefinementDecision": (2600, 2048, 60),
    "TaskReview": (1500, 1024, 50),
}
"""(prompt, cached, completion) tokens the fake server reports per kind of call."""
ANSWER_USAGE = (3000, 2048, 210)


def schema_of(body: dict) -> str | None:
    """The name of the response format a request asks for (None: free text, the answer)."""
    return ((body.get("response_format") or {}).get("json_schema") or {}).get("name")


def one_extract(body: dict, *, answer: str = "Done.", usage: bool = False, delay: float = 0.0):
    """The reply to any call of a one-extract round (whatever the order of calls), with the
    usage of USAGE when `usage`."""
    schema = schema_of(body)
    replies = {
        "TaskPlan": taskplan("Summarise"),
        "ActionSelection": extract_step("docList:round1_upload")[0],
        "ActionParameters": params(),
        "RefinementDecision": stop(True, "The notes are read."),
        "TaskReview": review(),
    }
    content = replies.get(schema, answer)
    if not usage:
        return FakeReply(content=content, delay=delay)
    prompt, cached, completion = USAGE.get(schema, ANSWER_USAGE)
    reported = {"prompt_tokens": prompt, "cached_tokens": cached, "completion_tokens": completion}
    return FakeReply(content=content, usage=reported, delay=delay)


def priced(usage: dict) -> float:
    """A call's cost from its stored usage and the tests' prices, by hand."""
    prompt, cached = usage["promptTokens"], usage["cachedTokens"]
    return (
        (prompt - cached) * PRICES["input"]
        + cached * PRICES["cached"]
        + usage["completionTokens"] * PRICES["output"]
    ) / 1e6
