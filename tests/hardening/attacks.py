"""The attacks of issue 31 that need many requests at once, against real app processes: a
signed-in user's parallel uploads and parallel sends (through one or several Daphnes)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.support.apps import PASSWORD
from tests.support.sockets import connect

SLOW = httpx.Timeout(300.0)


class Session:
    """alice signed in on one process (a session every process of the site accepts)."""

    def __init__(self, base: str) -> None:
        self.base = base
        with httpx.Client(base_url=base, timeout=SLOW) as client:
            login = client.get("/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)[1]
            data = {"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token}
            assert client.post("/login/", data=data).status_code == 302
            client.get("/")
            self.cookies = dict(client.cookies)

    @property
    def cookie_header(self) -> str:
        return "; ".join(f"{name}={value}" for name, value in self.cookies.items())

    def client(self, base: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=base or self.base, timeout=SLOW, cookies=self.cookies)

    def workflows(self, count: int) -> list[int]:
        """`count` new workflows of alice's."""
        made = []
        with self.client() as client:
            for number in range(count):
                data = {
                    "title": f"Attack {number}",
                    "mode": "react",
                    "max_steps": 3,
                    "csrfmiddlewaretoken": self.cookies["csrftoken"],
                }
                created = client.post("/workflows/new/", data=data)
                made.append(int(created.headers["location"].rstrip("/").split("/")[-1]))
        return made


def upload(session: Session, base: str, workflow: int, files: int) -> int:
    """One upload of `files` small text files; its status."""
    parts = [
        ("files", (f"note-{n}.txt", f"note {n}\n".encode(), "text/plain")) for n in range(files)
    ]
    with session.client(base) as client:
        answer = client.post(
            f"/workflows/{workflow}/documents/upload/",
            files=parts,
            headers={"X-CSRFToken": session.cookies["csrftoken"], "Referer": base + "/"},
        )
    return answer.status_code


def parallel_uploads(
    session: Session, bases: Sequence[str], workflows: Sequence[int], *, files: int
) -> list[int]:
    """One upload per workflow, all at once, spread over the processes; their statuses."""
    with ThreadPoolExecutor(len(workflows)) as pool:
        futures = [
            pool.submit(upload, session, bases[index % len(bases)], workflow, files)
            for index, workflow in enumerate(workflows)
        ]
        return [future.result() for future in futures]


async def parallel_sends(session: Session, sockets: Sequence[str], text: str) -> list[str]:
    """One message sent on each socket URL at once; what each socket heard back first (a
    user message event: started; a notice: refused)."""

    async def send(url: str) -> str:
        headers = {"Cookie": session.cookie_header}
        async with connect(url, additional_headers=headers, ping_interval=None) as socket:
            await socket.send(json.dumps({"action": "send", "text": text}))
            while True:
                event = json.loads(await asyncio.wait_for(socket.recv(), 120))
                if event["type"] == "message" and event["payload"]["role"] == "user":
                    return "started"
                if event["type"] == "notice":
                    return "refused: " + event["payload"]["text"]

    return await asyncio.gather(*(send(url) for url in sockets))


COUNT_ROWS = """
from workflows.models import ChatDocument, ChatMessage
print(ChatDocument.objects.filter(source="uploaded").count(),
      ChatMessage.objects.filter(role="user").count())
"""
