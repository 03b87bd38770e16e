"""PowerOn for AG-UI front-ends (the Agent–User Interaction protocol, 1.0): `POST
/api/v1/agui` takes a RunAgentInput and streams the run as AG-UI events, built with the
`ag-ui-protocol` package. A thread is a workflow and a run a round of it, started, resumed
from an interrupt, or replayed, through the same launcher, limits and durable runs as the
page; a personal API token is the key.

Layout:
    models.py      AguiRun: each AG-UI run served, with its workflow, round and first seq
    inputs.py      a RunAgentInput read: the round's message, PowerOn's options
    interrupts.py  a question the round waits on as an interrupt; a resume entry read
    runs.py        what a request does (start, resume, replay), who may, and the runs noted
    state.py       the shared state (checklist, steps, documents, spend) and its patches
    translate.py   a round's events as AG-UI events (the mapping table is there)
    views.py       the endpoint: the request, then the run's events over SSE
"""
