"""Tool calls from the fake model server, for agents built on the OpenAI tools API.

FakeOpenAIServer answers with message content only; LangChain, LangGraph and other agent
libraries also need `message.tool_calls`. A ToolCallServer is a FakeOpenAIServer whose
scripted replies may be `tool_calls(...)`, sent as the assistant's tool calls:

    script = [tool_calls(("get_weather", {"city": "Paris"})), "It is sunny in Paris."]
    with ToolCallServer(script) as server:
        ...

Tool calls are sent in non-streamed completions only.
"""

from __future__ import annotations

import json
from typing import Any

from .fake_openai import FakeOpenAIServer, _Handler

__all__ = ["ToolCallServer", "tool_calls"]

_MARKER = "__fake_tool_calls__"


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """Reply content the server sends as the assistant's tool calls: (name, arguments) pairs."""
    return {_MARKER: [{"name": name, "arguments": arguments} for name, arguments in calls]}


def with_tool_calls(payload: Any) -> Any:
    """A chat completion whose content is a `tool_calls(...)` reply, as tool calls instead."""
    if not isinstance(payload, dict) or payload.get("object") != "chat.completion":
        return payload
    choice = payload["choices"][0]
    content = choice["message"].get("content") or ""
    if not content.startswith('{"' + _MARKER):
        return payload
    calls = json.loads(content)[_MARKER]
    choice["message"] = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [
            {
                "id": f"call_{payload['id']}_{index}",
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
            }
            for index, call in enumerate(calls)
        ],
    }
    choice["finish_reason"] = "tool_calls"
    return payload


class _ToolCallHandler(_Handler):
    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        super()._json(status, with_tool_calls(payload), headers)


class ToolCallServer(FakeOpenAIServer):
    """A FakeOpenAIServer that can answer with tool calls (see the module docstring)."""

    def start(self) -> ToolCallServer:
        """Serve as FakeOpenAIServer does, with the handler that knows tool calls."""
        super().start()
        assert self._httpd is not None
        self._httpd.RequestHandlerClass = _ToolCallHandler  # before anyone knows the port
        return self
