"""The model a round runs with: which one (and the small one beside it), its client, its
prices, the schemas it gets, and what to fix when it fails — all from settings."""

from __future__ import annotations

import logging
from typing import Literal
from urllib.parse import urlsplit

from django.conf import settings

from workflows import pricing
from workflows.engine.model.money import Prices
from workflows.engine.model.nature import demo_label
from workflows.engine.records.protocols import LLM, Closable
from workflows.tools.web.addresses import literal_reason

logger = logging.getLogger(__name__)


def model_configured() -> bool:
    """Whether a real model is configured (otherwise the demo model answers)."""
    return bool(settings.POWERON_LLM_BASE_URL or settings.POWERON_LLM_API_KEY)


def model_label() -> str:
    """What users are told answers them."""
    return settings.POWERON_LLM_MODEL if model_configured() else demo_label()


def small_model() -> str:
    """The small model that answers Stage 2 and the review ("": the main model answers every
    call; never with the demo model)."""
    return settings.POWERON_LLM_MODEL_SMALL if model_configured() else ""


def build_llm() -> LLM:
    """The configured OpenAI-compatible model (with the small model beside it, when one is
    set), or the offline demo model. Call it in the event loop the run uses: every run of the
    loop shares one HTTP client per server (its connections stay open between runs; it is
    never closed by a run)."""
    from workflows.engine.demo.policy import DemoLLM
    from workflows.engine.model.llm import OpenAICompatibleLLM
    from workflows.engine.model.staged import StagedLLM

    if not model_configured():
        return DemoLLM(delay_ms=settings.POWERON_DEMO_DELAY_MS)
    main = OpenAICompatibleLLM(
        base_url=settings.POWERON_LLM_BASE_URL or None,
        api_key=settings.POWERON_LLM_API_KEY or "not-needed",
        model=settings.POWERON_LLM_MODEL,
        timeout=float(settings.POWERON_LLM_TIMEOUT),
        timeout_per_1k_tokens=float(settings.POWERON_LLM_TIMEOUT_PER_1K),
        advice=model_advice(),
        shared=True,
        max_reply_bytes=settings.POWERON_LLM_MAX_REPLY_BYTES,
        slots=model_slots(),
    )
    if not small_model():
        return main
    small = OpenAICompatibleLLM(
        base_url=small_base_url() or None,
        api_key=settings.POWERON_LLM_API_KEY_SMALL or settings.POWERON_LLM_API_KEY or "not-needed",
        model=small_model(),
        timeout=float(settings.POWERON_LLM_TIMEOUT),
        timeout_per_1k_tokens=float(settings.POWERON_LLM_TIMEOUT_PER_1K),
        advice=model_advice(small=True),
        shared=True,
        max_reply_bytes=settings.POWERON_LLM_MAX_REPLY_BYTES,
        slots=model_slots(small=True),
    )
    return StagedLLM(main, small)


def model_slots(*, small: bool = False) -> int | Literal["auto"]:
    """POWERON_LLM_SLOTS for the model's server (with `small`, the small model's): a count
    (0 for off), or auto — asked from a server on this machine or a private network, none
    for a hosted provider (which is never asked)."""
    choice = settings.POWERON_LLM_SLOTS
    if choice in ("off", "none", "no"):
        return 0
    if choice.isdigit():
        return min(int(choice), 64)
    if choice != "auto":
        logger.warning("POWERON_LLM_SLOTS=%r is not auto, off or a count; auto is used", choice)
    server = small_base_url() if small else settings.POWERON_LLM_BASE_URL
    return "auto" if local_model_server(server) else 0


def small_base_url() -> str:
    """The small model's server: its own, else the main model's."""
    return settings.POWERON_LLM_BASE_URL_SMALL or settings.POWERON_LLM_BASE_URL


def model_advice(*, small: bool = False) -> dict[str, str]:
    """What to fix for each way the model (or, with `small`, the small model) can fail, naming
    the settings to change (the time per 1,000 tokens only for a server on this machine or a
    private network, where it is the setting that helps)."""
    if small:
        return small_model_advice()
    where = settings.POWERON_LLM_BASE_URL or "OpenAI's default URL"
    timeout = f"Raise POWERON_LLM_TIMEOUT (now {settings.POWERON_LLM_TIMEOUT:g} s)"
    if local_model_server():
        per_1k = settings.POWERON_LLM_TIMEOUT_PER_1K
        timeout += (
            f" or POWERON_LLM_TIMEOUT_PER_1K (now {per_1k:g} s per 1,000 tokens, which a slow "
            "local server needs)"
        )
    return {
        "unreachable": f"Check POWERON_LLM_BASE_URL (now {where}) and that the server runs.",
        "timeout": f"{timeout}, or check the server's load.",
        "auth": "Check POWERON_LLM_API_KEY (or OPENAI_API_KEY).",
        "model": f"Check POWERON_LLM_MODEL (now {settings.POWERON_LLM_MODEL!r}).",
        "rate_limit": "Wait a moment and send again, or raise the provider's rate limit.",
        "refused": f"Check that {settings.POWERON_LLM_MODEL!r} supports chat completions.",
        "server": "Try again later; the model server's own logs say more.",
    }


def small_model_advice() -> dict[str, str]:
    """The main model's advice, with the small model's own settings named where it has them."""
    advice = model_advice()
    where = small_base_url() or "OpenAI's default URL"
    name = settings.POWERON_LLM_MODEL_SMALL
    advice["unreachable"] = (
        f"Check POWERON_LLM_BASE_URL_SMALL (now {where}; the main model's URL when it is not "
        "set) and that the server runs."
    )
    advice["auth"] = "Check POWERON_LLM_API_KEY_SMALL (or the main model's key it falls back to)."
    advice["model"] = f"Check POWERON_LLM_MODEL_SMALL (now {name!r})."
    advice["refused"] = f"Check that {name!r} supports chat completions."
    return advice


async def close_llm(llm: LLM) -> None:
    """Release what the run's model holds of its own (the shared client stays open; the
    demo model holds nothing)."""
    if isinstance(llm, Closable):
        await llm.aclose()


def call_schemas(*, small: bool = False) -> Literal["narrow", "stable", "shared"]:
    """POWERON_LLM_SCHEMAS, with auto decided by where the model server is (with `small`, the
    small model's): narrow schemas for one on this machine or a private network (llama.cpp,
    vLLM and Ollama make grammars of them), the shared head for a hosted provider (its prompt
    cache holds one prefix for every kind of call; see engine/shared.py)."""
    choice = settings.POWERON_LLM_SCHEMAS
    if choice in ("narrow", "stable", "shared"):
        return choice  # type: ignore[return-value]  # narrowed by the test just above
    if choice != "auto":
        logger.warning(
            "POWERON_LLM_SCHEMAS=%r is not auto, narrow, stable or shared; auto is used", choice
        )
    server = small_base_url() if small else settings.POWERON_LLM_BASE_URL
    return "narrow" if local_model_server(server) else "shared"


def local_model_server(url: str | None = None) -> bool:
    """Whether the server's host (POWERON_LLM_BASE_URL's by default) is `localhost` or a
    literal loopback or private IP address (a host name is never resolved)."""
    base_url = settings.POWERON_LLM_BASE_URL if url is None else url
    host = (urlsplit(base_url).hostname or "").lower()
    return bool(literal_reason(host))


def model_prices(*, small: bool = False) -> Prices | None:
    """What the configured model's tokens cost (with `small`, the small model's): the
    deployment's POWERON_PRICE_* (POWERON_PRICE_*_SMALL) when set, else genai-prices' table;
    None for the demo model or a model of unknown price."""
    if not model_configured() or (small and not small_model()):
        return None
    end = "_SMALL" if small else ""
    own = pricing.deployment_prices(
        input=getattr(settings, f"POWERON_PRICE_INPUT{end}"),
        cached_input=getattr(settings, f"POWERON_PRICE_CACHED_INPUT{end}"),
        output=getattr(settings, f"POWERON_PRICE_OUTPUT{end}"),
        currency=settings.POWERON_PRICE_CURRENCY,
    )
    if small:
        return own or pricing.table_prices(small_model(), base_url=small_base_url())
    return own or pricing.table_prices(
        settings.POWERON_LLM_MODEL, base_url=settings.POWERON_LLM_BASE_URL
    )
