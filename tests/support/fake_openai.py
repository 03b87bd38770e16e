"""A real localhost HTTP server that speaks the OpenAI chat-completions API from a script.

The real `openai` client (sync or async) talks to it over TCP, so everything between the
app and the wire is exercised. It runs in a background thread, which makes it usable from
sync tests, async tests and standalone benchmark scripts alike:

    with FakeOpenAIServer(["Hello there.", {"answer": 42}]) as server:
        client = OpenAI(base_url=server.url, api_key="sk-test", max_retries=0)
        ...
        server.assert_complete()

Each POST {url}/chat/completions takes the next scripted reply. Token counts are
deterministic: prompt = characters of all message contents // 4, completion =
characters of the reply // 4.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import socketserver
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel

__all__ = ["FakeOpenAIServer", "FakeReply", "Reply"]

MODEL_ID = "fake-model"
EXHAUSTED = "fake model server: no scripted reply left"


@dataclass(frozen=True)
class FakeReply:
    """A reply with more than content: an error status, a delay, explicit usage.

    `error` is the error message (or a full OpenAI error object) sent when `status` is not
    200; `delay` waits before answering, `chunk_delay` between streamed chunks, `stall`
    after a streamed reply's first piece (a model that stops partway). `usage`
    overrides any of prompt_tokens, completion_tokens, total_tokens, cached_tokens.
    `headers` are added to the response (e.g. {"x-should-retry": "false"}). `finish_reason`
    "length" says the answer was cut off at its token limit.
    """

    content: str | dict[str, Any] | BaseModel | None = None
    status: int = 200
    error: str | dict[str, Any] | None = None
    delay: float = 0.0
    usage: dict[str, int] | None = None
    chunk_delay: float = 0.0
    stall: float = 0.0
    headers: dict[str, str] | None = None
    finish_reason: str = "stop"


Reply = str | dict[str, Any] | BaseModel | FakeReply | Callable[[dict[str, Any]], Any]

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def error_body(
    status: int, message: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """An OpenAI-style error body: {"error": {message, type, param, code}}."""
    kind, default_code = _ERROR_TYPES.get(status, ("server_error", None))
    error = {"message": message, "type": kind, "param": param, "code": code or default_code}
    return {"error": error}


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, BaseModel):
        return content.model_dump_json(by_alias=True)
    if isinstance(content, dict | list):
        return json.dumps(content)
    return str(content)


def _prompt_chars(body: dict[str, Any]) -> int:
    total = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):  # content parts: count the text ones
            total += sum(len(p.get("text", "")) for p in content if isinstance(p, dict))
    return total


def _timings(usage: dict[str, int] | None) -> dict[str, Any]:
    """llama.cpp's timings of a reply that reused a slot's prefix ({} otherwise)."""
    if not usage or "cache_n" not in usage:
        return {}
    reused = usage["cache_n"]
    return {"timings": {"cache_n": reused, "prompt_n": usage["prompt_tokens"] - reused}}


def _usage(body: dict[str, Any], text: str, override: dict[str, int] | None) -> dict[str, Any]:
    given = override or {}
    prompt = given.get("prompt_tokens", _prompt_chars(body) // 4)
    completion = given.get("completion_tokens", len(text) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": given.get("total_tokens", prompt + completion),
        "prompt_tokens_details": {"cached_tokens": given.get("cached_tokens", 0)},
    }


def _pieces(text: str) -> list[str]:
    """One piece per word, each keeping the whitespace after it, so "".join() == text."""
    return [piece for piece in re.split(r"(?<=\s)(?=\S)", text) if piece]


class FakeOpenAIServer:
    """Scripted OpenAI-compatible server on 127.0.0.1 (see the module docstring)."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        reject_json_schema: bool = False,
        reject_response_format: bool = False,
        slots: int = 0,
    ) -> None:
        self.slots = slots
        """With slots, the server plays llama.cpp's: GET /props answers `total_slots`, and
        each slot keeps its last prompt: a request (to its `id_slot`, else slot 0) reuses the
        characters its prompt shares with it (a token per four), unless `cache_prompt` is
        false, and its usage and `timings` say how many it reused and evaluated."""
        self.gets: list[str] = []
        """The path of every GET request, in arrival order."""
        self.slot_prompts: dict[int, str] = {}
        self.reuse: list[tuple[int, int, int]] = []
        """Per request with slots: (slot, prompt tokens evaluated, prompt tokens reused)."""
        self.reject_json_schema = reject_json_schema
        self.reject_response_format = reject_response_format
        self.requests: list[dict[str, Any]] = []
        """Every parsed chat-completions request body, in arrival order (rejected ones too)."""
        self.headers: list[dict[str, str]] = []
        """The HTTP headers of each entry in `requests` (lower-cased names)."""
        self.unanswered: int = 0
        """How many requests arrived when the script was empty."""
        self.delivered: int = 0
        """How many requests got their whole reply (a cancelled call never does)."""
        self._replies: deque[Reply] = deque(replies)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        """Bind a free port on 127.0.0.1 and serve in a background thread."""
        if self._httpd is not None:
            raise RuntimeError("FakeOpenAIServer is already running")
        self._stopping.clear()
        self._httpd = _Server(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-openai-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, drop open connections and wait for every handler thread."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the peer
                connection.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()  # also waits for the handler threads
        assert self._thread is not None
        self._thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running; call start() first")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """The base URL to give the openai client, e.g. http://127.0.0.1:50123/v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    # --- the script ------------------------------------------------------------------

    def add(self, *replies: Reply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._replies.extend(replies)

    def kinds(self) -> list[str]:
        """What each recorded request asked for: a schema name, "text" (a tool's own call) or
        "final" (the streamed answer)."""
        kinds = []
        for body in list(self.requests):
            schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
            kinds.append(schema or ("final" if body.get("stream") else "text"))
        return kinds

    @property
    def remaining(self) -> int:
        """How many scripted replies are still unused."""
        with self._lock:
            return len(self._replies)

    def assert_complete(self) -> None:
        """Fail when scripted replies remain unused or a request found the script empty."""
        with self._lock:
            left, unanswered = len(self._replies), self.unanswered
        assert not left, f"{left} scripted model replies were never requested"
        assert not unanswered, f"{unanswered} model requests arrived after the script ran out"

    # --- answering (called from handler threads) -------------------------------------

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> int:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self._counter += 1
            return self._counter

    def _rejection(self, body: dict[str, Any]) -> dict[str, Any] | None:
        response_format = body.get("response_format")
        if not response_format:
            return None
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if self.reject_response_format or (self.reject_json_schema and kind == "json_schema"):
            return error_body(
                400,
                f"response_format of type '{kind}' is not supported by this model server",
                param="response_format",
                code="unsupported_response_format",
            )
        return None

    def _next_reply(self, body: dict[str, Any]) -> FakeReply:
        with self._lock:
            if not self._replies:
                self.unanswered += 1
                return FakeReply(status=500, error=EXHAUSTED, headers={"x-should-retry": "false"})
            reply = self._replies.popleft()
        if callable(reply) and not isinstance(reply, BaseModel | FakeReply):
            try:
                reply = reply(body)
            except Exception as error:  # report it to the client and the test, loudly
                message = f"fake model server: scripted callable raised {error!r}"
                return FakeReply(status=500, error=message, headers={"x-should-retry": "false"})
        return reply if isinstance(reply, FakeReply) else FakeReply(content=reply)

    def _reused(self, body: dict[str, Any]) -> dict[str, int] | None:
        """With slots: the request's prompt against its slot's last one (what it reused and
        evaluated, in tokens), the slot keeping this prompt; None without slots."""
        if not self.slots:
            return None
        prompt = "".join(f"<{m.get('role')}>{m.get('content')}" for m in body.get("messages") or [])
        slot = body.get("id_slot", -1)
        slot = 0 if not isinstance(slot, int) or slot < 0 else slot % self.slots
        with self._lock:
            before = self.slot_prompts.get(slot, "")
            self.slot_prompts[slot] = prompt
        shared = 0
        if body.get("cache_prompt", True):
            while shared < min(len(before), len(prompt)) and before[shared] == prompt[shared]:
                shared += 1
        total = _prompt_chars(body) // 4
        reused = min(total, shared // 4)
        with self._lock:
            self.reuse.append((slot, total - reused, reused))
        return {"prompt_tokens": total, "cached_tokens": reused, "cache_n": reused}

    def _sleep(self, seconds: float) -> bool:
        """Wait, but wake up when the server stops; returns False if it did."""
        return not (seconds > 0 and self._stopping.wait(seconds))


class _Server(ThreadingHTTPServer):
    def __init__(self, address: tuple[str, int], handler: type, owner: FakeOpenAIServer):
        self.owner = owner
        self.handler_threads: list[threading.Thread] = []
        super().__init__(address, handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would look up the host's FQDN; nothing here needs it.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request: Any, client_address: Any) -> None:
        # Daemon threads, so a script that never calls stop() can still exit, yet tracked,
        # so stop() can wait for every one of them.
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True
        )
        self.handler_threads = [t for t in self.handler_threads if t.is_alive()] + [thread]
        thread.start()

    def server_close(self) -> None:
        super().server_close()
        for thread in self.handler_threads:
            thread.join()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (timeout tests, stop()) is not an error worth a traceback.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects
    server_version = "FakeOpenAI/1.0"
    timeout = 30  # an idle keep-alive connection never pins a thread for long
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle's algorithm holds
        # the body back until the client's delayed ACK, 40 ms a call (real servers set it).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.owner._lock:
            self.server.owner._connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.owner._lock:
                self.server.owner._connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    # --- routes ----------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        with self.server.owner._lock:
            self.server.owner.gets.append(path)
        if path == "/props" and self.server.owner.slots:
            self._json(200, {"total_slots": self.server.owner.slots, "build_info": "fake"})
        elif path.endswith("/models"):
            self._json(200, {"object": "list", "data": [_model(MODEL_ID)]})
        elif "/models/" in path:
            self._json(200, _model(path.rsplit("/", 1)[1]))
        else:
            self._json(404, error_body(404, f"fake model server: no route GET {self.path}"))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.split("?")[0].rstrip("/").endswith("/chat/completions"):
            self._json(404, error_body(404, f"fake model server: no route POST {self.path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, error_body(400, "fake model server: request body is not JSON"))
            return
        owner = self.server.owner
        number = owner._record(body, {k.lower(): v for k, v in self.headers.items()})
        rejection = owner._rejection(body)
        if rejection is not None:
            self._json(400, rejection)
            return
        reply = owner._next_reply(body)
        if (reused := owner._reused(body)) is not None:
            reply = replace(reply, usage={**reused, **(reply.usage or {})})
        if not owner._sleep(reply.delay):
            self.close_connection = True
            return
        if reply.status != 200:
            self._error(reply)
        elif body.get("stream"):
            if not self._stream(body, reply, number):
                return
        else:
            self._json(200, _completion(body, reply, number), reply.headers)
        with owner._lock:
            owner.delivered += 1

    # --- writing ---------------------------------------------------------------------

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, reply: FakeReply) -> None:
        if isinstance(reply.error, dict):
            payload = reply.error if "error" in reply.error else {"error": reply.error}
        else:
            try:
                phrase = HTTPStatus(reply.status).phrase
            except ValueError:
                phrase = "error"
            payload = error_body(reply.status, reply.error or f"fake model server: {phrase}")
        self._json(reply.status, payload, reply.headers)

    def _stream(self, body: dict[str, Any], reply: FakeReply, number: int) -> bool:
        """Send the reply as server-sent events; False when the server stopped midway."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in (reply.headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        owner = self.server.owner
        due = time.monotonic()  # chunks are paced by a clock, so pauses do not add up late
        for index, event in enumerate(_chunks(body, reply, number)):
            stalls = index == 2 and reply.stall  # chunk 1 is the first piece
            due += (reply.stall if stalls else reply.chunk_delay) if index else 0.0
            if index and not owner._sleep(due - time.monotonic()):
                self.close_connection = True
                return False
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")  # end of the chunked body
        return True

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


# --- response bodies -----------------------------------------------------------------


def _model(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "poweron-tests"}


def _header(body: dict[str, Any], number: int, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": kind,
        "created": int(time.time()),
        "model": body.get("model") or MODEL_ID,
        "system_fingerprint": "fp_fake",
    }


def _completion(body: dict[str, Any], reply: FakeReply, number: int) -> dict[str, Any]:
    text = _text(reply.content)
    message = {"role": "assistant", "content": text, "refusal": None}
    return {
        **_header(body, number, "chat.completion"),
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
        ],
        "usage": _usage(body, text, reply.usage),
        **_timings(reply.usage),
    }


def _chunks(body: dict[str, Any], reply: FakeReply, number: int) -> Iterator[dict[str, Any]]:
    text = _text(reply.content)
    options = body.get("stream_options") or {}
    include_usage = bool(options.get("include_usage"))
    extra = {"usage": None} if include_usage else {}
    header = _header(body, number, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**header, "choices": [choice], **extra}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(text):
        yield chunk({"content": piece})
    yield chunk({}, reply.finish_reason)
    if include_usage:
        yield {
            **header,
            "choices": [],
            "usage": _usage(body, text, reply.usage),
            **_timings(reply.usage),
        }
