"""An approval says what it approves: the documents the action will read and the
connection it will use, besides its parameters."""

from __future__ import annotations

from tests.engine.conftest import collect, make_state, of, params, select, stop, taskplan
from workflows.engine.records.state import ConnectionInfo, Policy
from workflows.engine.testing import ScriptedLLM


async def test_an_approval_names_the_documents_and_the_connection_the_action_will_use(store):
    """The documents come resolved from the references (by name), the connection by label."""
    llm = ScriptedLLM(
        [
            taskplan("Search with the notes"),
            select(requiredInputDocuments=["docList:round1_uploads"], requiredConnection="mine"),
            params(query="PowerOn"),
            stop(),
            "Found.",
        ]
    )
    state = make_state(
        policy=Policy(approval=["web.*"]), connections=[ConnectionInfo(label="mine", kind="tavily")]
    )
    events = await collect(state, llm, store=store)
    asked, answered = of(events, "approval")
    assert (asked.status, answered.status) == ("waiting", "approved")
    assert [d.name for d in asked.documents] == ["notes.txt"]
    assert asked.connection == "mine"
    assert answered.documents == asked.documents and answered.connection == "mine"
