"""The comparison of bench/host_overhead.py: LangGraph's prebuilt ReAct agent over a scripted
chat model and one trivial tool, bare and with its SQLite checkpointers."""

from __future__ import annotations

import time
import uuid
import warnings
from pathlib import Path
from typing import Any


class LangGraph:
    """LangGraph's prebuilt ReAct agent over a scripted chat model and one trivial tool."""

    def __init__(self, steps: int, directory: str, *, prompt: str, answer: str) -> None:
        warnings.filterwarnings("ignore", message="create_react_agent has been moved")
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langchain_core.tools import tool
        from langgraph.prebuilt import create_react_agent

        @tool
        def lookup(query: str) -> str:
            """Look something up."""
            return f"Found: {query}."

        class Scripted(BaseChatModel):
            """A tool call per turn until `steps` were made, then the answer; no latency."""

            @property
            def _llm_type(self) -> str:
                return "scripted"

            def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
                return self

            def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw):
                done = sum(message.type == "ai" for message in messages)
                if done < steps:
                    call = {"name": "lookup", "args": {"query": f"q{done}"}, "id": f"c{done}"}
                    message = AIMessage(content="", tool_calls=[call])
                else:
                    message = AIMessage(content=answer)
                return ChatResult(generations=[ChatGeneration(message=message)])

            async def _agenerate(self, *args: Any, **kwargs: Any):
                return self._generate(*args, **kwargs)

        self.steps, self.prompt = steps, prompt
        self.limit = {"recursion_limit": 2 * steps + 10}
        self.agent = create_react_agent(Scripted(), [lookup])
        self.path = str(Path(directory) / f"langgraph-{steps}.sqlite")
        self.make = lambda saver: create_react_agent(Scripted(), [lookup], checkpointer=saver)

    def config(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": uuid.uuid4().hex}, **self.limit}

    def check(self, result: dict[str, Any]) -> None:
        assert len(result["messages"]) == 2 * self.steps + 2, len(result["messages"])

    async def bare(self) -> dict[str, Any]:
        started = time.perf_counter()
        self.check(await self.agent.ainvoke({"messages": [("user", self.prompt)]}, self.config()))
        return {"seconds": time.perf_counter() - started}

    async def async_sqlite(self) -> dict[str, Any]:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(self.path) as saver:
            agent = self.make(saver)
            started = time.perf_counter()
            self.check(await agent.ainvoke({"messages": [("user", self.prompt)]}, self.config()))
            return {"seconds": time.perf_counter() - started}

    async def sqlite(self) -> dict[str, Any]:
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(self.path) as saver:
            agent = self.make(saver)
            started = time.perf_counter()
            self.check(agent.invoke({"messages": [("user", self.prompt)]}, self.config()))
            return {"seconds": time.perf_counter() - started}
