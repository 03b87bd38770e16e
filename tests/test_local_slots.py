"""POWERON_LLM_SLOTS: prefix reuse on a local llama.cpp server is asked for from the server
itself (auto), set as a count, or off; a hosted provider is never asked."""

from __future__ import annotations

import logging

import pytest

from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.model.staged import StagedLLM
from workflows.execution import llm_setup


@pytest.mark.parametrize(
    ("choice", "url", "slots"),
    [
        ("auto", "http://127.0.0.1:8081/v1", "auto"),
        ("auto", "http://192.168.1.20:8080/v1", "auto"),
        ("auto", "https://api.openai.com/v1", 0),
        ("2", "https://api.openai.com/v1", 2),
        ("off", "http://127.0.0.1:8081/v1", 0),
    ],
)
async def test_the_slots_setting_reaches_the_model(settings, choice, url, slots) -> None:
    """auto asks a server on this machine or a private network; a count is taken as it is;
    off sends plain requests."""
    settings.POWERON_LLM_BASE_URL, settings.POWERON_LLM_API_KEY = url, "x"
    settings.POWERON_LLM_MODEL_SMALL, settings.POWERON_LLM_SLOTS = "", choice
    llm = llm_setup.build_llm()
    assert isinstance(llm, OpenAICompatibleLLM) and llm.slots == slots


async def test_the_small_models_server_is_judged_on_its_own(settings) -> None:
    """A hosted main model beside a small model on a local server: only the small one asks."""
    settings.POWERON_LLM_BASE_URL, settings.POWERON_LLM_API_KEY = "https://api.openai.com/v1", "x"
    settings.POWERON_LLM_MODEL_SMALL = "qwen2.5-coder-0.5b"
    settings.POWERON_LLM_BASE_URL_SMALL = "http://127.0.0.1:8081/v1"
    settings.POWERON_LLM_SLOTS = "auto"
    llm = llm_setup.build_llm()
    assert isinstance(llm, StagedLLM)
    assert (llm.main.slots, llm.small.slots) == (0, "auto")


def test_a_setting_that_is_not_understood_is_said_and_auto_is_used(settings, caplog) -> None:
    """A typo is logged with the setting's name; auto applies."""
    settings.POWERON_LLM_BASE_URL, settings.POWERON_LLM_SLOTS = "http://127.0.0.1:1/v1", "many"
    with caplog.at_level(logging.WARNING):
        assert llm_setup.model_slots() == "auto"
    assert "POWERON_LLM_SLOTS='many'" in caplog.text
