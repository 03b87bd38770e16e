"""Too large uploads are refused by a real Daphne before their body is read: 413 with the
message the upload form shows, and the server's memory does not grow with the body."""

from __future__ import annotations

import re
import select
import socket
from pathlib import Path

import httpx
import pytest

from poweron.bodylimit import BodyLimitMiddleware
from tests.support.apps import AppProcesses, app_env, sign_in_and_create_workflow
from tests.support.fake_openai import FakeOpenAIServer

LIMIT = 1024 * 1024
MB = 1024 * 1024


@pytest.fixture
def app(tmp_path):
    with FakeOpenAIServer() as model:
        env = app_env(tmp_path, model.url, POWERON_MAX_UPLOAD_BYTES=str(LIMIT))
        processes = AppProcesses(env, tmp_path)
        try:
            yield processes
        finally:
            processes.stop()


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+) kB", status)[1])


def reset_peak(pid: int) -> int:
    """Reset the process's peak RSS (VmHWM) to its current RSS, and return that."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return rss_kb(pid)


def peak_kb(pid: int) -> int:
    return rss_kb(pid, "VmHWM")


def post_raw(port: int, head: str, chunks, *, cookie: str) -> bytes:
    """Send a request's head, then body chunks until the server answers or stops reading;
    return what it answered."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    answer = b""
    try:
        sock.sendall(f"{head}Cookie: {cookie}\r\n\r\n".encode())
        for chunk in chunks:
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(chunk)
            except OSError:
                break
        while b"\r\n\r\n" not in answer or not answer.endswith(b"</ul>"):
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    finally:
        sock.close()
    return answer


def upload_head(workflow_id: int, **headers: str) -> str:
    lines = [f"POST /workflows/{workflow_id}/documents/upload/ HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return "\r\n".join(lines) + "\r\n"


def test_declared_oversized_upload_is_refused_before_its_body(app):
    """A 1 GB upload declared by Content-Length is answered 413 with the limit, while the
    client still sends; the server's peak RSS stays within 5 MB of where it was while 64 MB
    are sent."""
    port = app.web()
    cookie, workflow_id = sign_in_and_create_workflow(port)
    pid = app.processes[-1].pid
    before = reset_peak(pid)
    head = upload_head(
        workflow_id, Content_Type="multipart/form-data; boundary=x", Content_Length=str(1024**3)
    )
    answer = post_raw(port, head, (b"x" * MB for _ in range(64)), cookie=cookie)
    after = peak_kb(pid)
    print(f"RSS before {before} kB, peak during the upload {after} kB")
    assert answer.startswith(b"HTTP/1.1 413")
    assert b"The upload is too large: at most 1.0\xc2\xa0MB in total" in answer
    assert after - before < 5 * 1024, (before, after)


def test_chunked_upload_is_cut_off_at_the_limit(app):
    """A chunked upload without a length is refused with 413 once it streams past the
    limit, and what it sent is not kept: the peak RSS stays within 5 MB while 32 MB are
    sent."""
    port = app.web()
    cookie, workflow_id = sign_in_and_create_workflow(port)
    pid = app.processes[-1].pid
    before = reset_peak(pid)
    head = upload_head(
        workflow_id,
        Content_Type="multipart/form-data; boundary=x",
        Transfer_Encoding="chunked",
    )
    chunk = b"%x\r\n%s\r\n" % (MB, b"x" * MB)
    answer = post_raw(port, head, (chunk for _ in range(32)), cookie=cookie)
    after = peak_kb(pid)
    print(f"RSS before {before} kB, peak during the upload {after} kB")
    assert answer.startswith(b"HTTP/1.1 413")
    assert b"Nothing was stored" in answer
    assert after - before < 5 * 1024, (before, after)


def test_upload_within_the_limit_still_works(app):
    """An upload under the limit goes through Daphne to the view and is stored; the same
    upload sent chunked (no length) is refused with 411 saying why (it was "Choose at least
    one file": Django's form parser reads by the length)."""
    port = app.web()
    cookie, workflow_id = sign_in_and_create_workflow(port)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        client.cookies.set("sessionid", cookie.removeprefix("sessionid="))
        page = client.get(f"/workflows/{workflow_id}/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        response = client.post(
            f"/workflows/{workflow_id}/documents/upload/",
            data={"csrfmiddlewaretoken": token},
            files={"files": ("notes.txt", b"n" * (LIMIT // 2), "text/plain")},
        )
        assert response.status_code == 200
        assert "notes.txt" in response.text
        body = client.build_request(
            "POST", f"/workflows/{workflow_id}/documents/upload/",
            data={"csrfmiddlewaretoken": token},
            files={"files": ("chunked.txt", b"c" * 100, "text/plain")},
        )  # fmt: skip
        chunked = client.post(
            f"/workflows/{workflow_id}/documents/upload/",
            content=iter([body.read()]),  # an iterator: sent chunked, without a length
            headers={"Content-Type": body.headers["Content-Type"], "X-CSRFToken": token},
        )
    assert chunked.status_code == 411
    assert "a chunked upload cannot be read" in chunked.text


@pytest.fixture
def roomy_app(tmp_path):
    """A Daphne whose uploads may be 25 MB."""
    with FakeOpenAIServer() as model:
        env = app_env(tmp_path, model.url, POWERON_MAX_UPLOAD_BYTES=str(25 * MB))
        processes = AppProcesses(env, tmp_path)
        try:
            yield processes
        finally:
            processes.stop()


def test_an_accepted_upload_costs_memory_near_its_size_not_a_multiple(roomy_app):
    """A 19 MB file uploaded through the page is stored while the server's peak RSS grows by
    less than 60 MB (Twisted's own parse of the multipart body, which Daphne never reads, cost
    about 170 MB at its peak; Daphne still queues the body before the view reads it)."""
    port = roomy_app.web()
    cookie, workflow_id = sign_in_and_create_workflow(port)
    pid = roomy_app.processes[-1].pid
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
        client.cookies.set("sessionid", cookie.removeprefix("sessionid="))
        page = client.get(f"/workflows/{workflow_id}/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        body = b"Nineteen megabytes of notes.\n" * (19 * MB // 29)
        before = reset_peak(pid)
        response = client.post(
            f"/workflows/{workflow_id}/documents/upload/",
            data={"csrfmiddlewaretoken": token},
            files={"files": ("notes.txt", body, "text/plain")},
        )
        after = peak_kb(pid)
    print(f"RSS before {before} kB, peak during the upload {after} kB")
    assert response.status_code == 200 and "notes.txt" in response.text
    assert after - before < 60 * 1024, (before, after)


async def asgi_call(app, headers, bodies):
    """Call an ASGI app with a POST whose body arrives in `bodies`; what it sent, and how
    many body messages it read."""
    messages = [{"type": "http.request", "body": b, "more_body": True} for b in bodies]
    messages[-1]["more_body"] = False
    read = 0
    sent = []

    async def receive():
        nonlocal read
        read += 1
        return messages[read - 1]

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": headers}
    await app(scope, receive, send)
    return sent, read


async def reads_everything(scope, receive, send):
    """An app that reads the whole body, then answers 200."""
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def test_middleware_refuses_a_declared_length_without_reading(settings):
    """Under a server that streams the body, a too large Content-Length is answered 413
    before the first body message is read."""
    settings.POWERON_MAX_UPLOAD_BYTES = LIMIT
    app = BodyLimitMiddleware(reads_everything)
    sent, read = await asgi_call(app, [(b"content-length", b"%d" % 1024**3)], [b"x"])
    assert sent[0]["status"] == 413
    assert read == 0


async def test_middleware_cuts_a_streamed_body_at_the_limit(settings):
    """A body without a length is answered 413 as soon as it passes the limit; the rest is
    not read."""
    settings.POWERON_MAX_UPLOAD_BYTES = LIMIT
    app = BodyLimitMiddleware(reads_everything)
    sent, read = await asgi_call(app, [], [b"x" * MB] * 10)
    assert sent[0]["status"] == 413
    assert read == 2


async def test_middleware_lets_a_body_within_the_limit_through(settings):
    """A body under the limit reaches the app."""
    settings.POWERON_MAX_UPLOAD_BYTES = LIMIT
    sent, _ = await asgi_call(BodyLimitMiddleware(reads_everything), [], [b"x" * 1000] * 3)
    assert sent[0]["status"] == 200


@pytest.mark.django_db
def test_too_many_files_at_once_are_refused_with_the_limit(alice_client, alice, settings):
    """More files in one upload than Django parses (100) get the app's own refusal naming
    the limit (it was Django's bare 400 page), and nothing is stored."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    from workflows import services

    settings.POWERON_MAX_UPLOADS_PER_HOUR = 0
    workflow = services.workflow_create(owner=alice)
    files = [SimpleUploadedFile(f"f{n}.txt", b"x", "text/plain") for n in range(101)]
    refused = alice_client.post(reverse("workflows:upload", args=[workflow.pk]), {"files": files})
    assert refused.status_code == 400
    assert "Choose at most 100 files at once." in refused.content.decode()
    assert not workflow.documents.exists()
