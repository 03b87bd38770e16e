"""A real web site on 127.0.0.1 for the web tools' tests: pages, links, and hostile answers.

Runs a stdlib ThreadingHTTPServer in a daemon thread. Every request is recorded, so a test
can show that a refused URL never reached the site.

Paths:
    /                     index linking to /a, /b, /private/secret and an external site
    /a /b /c              articles; /b links to /c, /c links back to /a
    /robots.txt           disallows /private/ (unless robots=None)
    /private/secret       an article robots.txt forbids
    /redirect/<n>         redirects n times, then lands on /a
    /redirect-to?url=U    one redirect to U (any address, e.g. http://10.0.0.1/)
    /large                6 MB of text with a Content-Length
    /large-stream         6 MB of text without a Content-Length
    /gzip                 a small gzip-encoded article
    /gzip-bomb            ~20 KB of gzip that inflates to 20 MB
    /slow                 waits up to `slow_seconds` before answering
    /drip                 sends one byte every 0.1 s for up to `slow_seconds`
    /image.png            image/png (a content type the tools refuse)
    /data.json /notes.txt JSON and plain text
    /error                HTTP 500
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

LARGE_SIZE = 6 * 1024 * 1024
BOMB_SIZE = 20 * 1024 * 1024

ARTICLES = {
    "/a": (
        "Solar Power in Northern Europe",
        "Solar power capacity in Northern Europe grew by 40 percent in 2023. "
        "The Baltic Energy Agency reports that rooftop panels now supply homes in Riga. "
        "Engineers at Aalto University measured output during the long summer days. "
        "Winter output remains low, so storage matters for solar power.",
    ),
    "/b": (
        "Wind Farms at Sea",
        "Offshore wind farms in the North Sea produce steady power through the winter. "
        "The Danish Energy Agency counted 2400 turbines in 2023. "
        "Cables carry the power to shore, where grids balance supply and demand. "
        "Read more about storage on the next page.",
    ),
    "/c": (
        "Battery Storage",
        "Battery storage smooths the daily swings of solar power and wind power. "
        "Grid operators in Northern Europe installed 5 gigawatts of batteries. "
        "Pumped hydro in Norway remains the largest store of energy in the region.",
    ),
    "/private/secret": (
        "Private Notes",
        "These notes are not meant for robots. Solar power secrets live here.",
    ),
}
LINKS = {
    "/": ["/a", "/b", "/private/secret", "http://external.example/page"],
    "/a": ["/b", "/a#top", "http://external.example/other"],
    "/b": ["/c"],
    "/c": ["/a"],
}


def article_html(path: str) -> bytes:
    """The HTML of one article of the site, with its navigation links."""
    title, text = ARTICLES.get(path, ("Energy in the North", "An index of energy articles."))
    sentences = [part.strip().rstrip(".") for part in text.split(". ")]
    paragraphs = "".join(f"<p>{sentence}.</p>" for sentence in sentences if sentence)
    links = "".join(f'<li><a href="{href}">{href}</a></li>' for href in LINKS.get(path, []))
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body>"
        f"<nav><ul>{links}</ul></nav><main><article><h1>{title}</h1>{paragraphs}"
        f"</article></main><footer>Copyright Test Site</footer></body></html>"
    ).encode()


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class LocalServer:
    """A ThreadingHTTPServer on 127.0.0.1 in a daemon thread that records every request."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.release = threading.Event()
        """Set on stop, so slow handlers finish at once."""

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not started"
        return self._server.server_address[1]

    @property
    def origin(self) -> str:
        """ "127.0.0.1:PORT", the form allow_hosts takes."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The base URL, without a trailing slash."""
        return f"http://{self.origin}"

    @property
    def paths(self) -> list[str]:
        """The paths (with query) requested so far, in order."""
        with self._lock:
            return [request.path for request in self.requests]

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def handle(self, handler: BaseHTTPRequestHandler, method: str, body: bytes) -> None:
        """Answer one request; subclasses implement it."""
        raise NotImplementedError

    def start(self) -> LocalServer:
        """Bind a free port and serve in a daemon thread."""
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: LocalServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (time cap, size cap) closes the socket mid-answer: expected.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _dispatch(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        owner = self.server.owner
        owner.record(Recorded(method, self.path, dict(self.headers.items()), body))
        owner.handle(self, method, body)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")


def send(
    handler: BaseHTTPRequestHandler,
    status: int,
    body: bytes = b"",
    content_type: str = "text/html; charset=utf-8",
    headers: dict[str, str] | None = None,
    length: bool = True,
) -> None:
    """Write one complete response."""
    handler.send_response(status)
    if content_type:
        handler.send_header("Content-Type", content_type)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    if length:
        handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class TestWebsite(LocalServer):
    """The local test site. `robots` is the robots.txt text, or None for a 404."""

    __test__ = False  # not a test class, whatever pytest thinks of the name

    def __init__(
        self,
        *,
        robots: str | None = "User-agent: *\nDisallow: /private/\n",
        slow_seconds: float = 5.0,
    ) -> None:
        super().__init__()
        self.robots = robots
        self.slow_seconds = slow_seconds
        self.extra: dict[str, Callable[[BaseHTTPRequestHandler], None]] = {}
        """Extra routes a test adds: path -> handler."""

    def page_url(self, path: str) -> str:
        """The absolute URL of a path on this site."""
        return f"{self.url}{path}"

    def handle(self, handler: BaseHTTPRequestHandler, method: str, body: bytes) -> None:
        parts = urlsplit(handler.path)
        path, query = parts.path, parse_qs(parts.query)
        if path in self.extra:
            self.extra[path](handler)
        elif path == "/robots.txt":
            if self.robots is None:
                send(handler, 404, b"no robots here", "text/plain")
            else:
                send(handler, 200, self.robots.encode(), "text/plain")
        elif path == "/" or path in ARTICLES:
            send(handler, 200, article_html(path))
        elif path.startswith("/redirect/"):
            hops = int(path.removeprefix("/redirect/"))
            target = "/a" if hops <= 1 else f"/redirect/{hops - 1}"
            send(handler, 302, b"", "", {"Location": target})
        elif path == "/redirect-to":
            send(handler, 302, b"", "", {"Location": query["url"][0]})
        elif path == "/large":
            send(handler, 200, b"x" * LARGE_SIZE, "text/plain")
        elif path == "/large-stream":
            self._stream(handler, LARGE_SIZE)
        elif path == "/gzip":
            packed = gzip.compress(article_html("/a"))
            send(handler, 200, packed, headers={"Content-Encoding": "gzip"})
        elif path == "/gzip-bomb":
            send(handler, 200, _bomb(), "text/plain", {"Content-Encoding": "gzip"})
        elif path == "/slow":
            self.release.wait(self.slow_seconds)
            send(handler, 200, article_html("/a"))
        elif path == "/drip":
            self._drip(handler)
        elif path == "/image.png":
            send(handler, 200, b"\x89PNG\r\n\x1a\nnot really", "image/png")
        elif path == "/data.json":
            send(handler, 200, b'{"energy": "solar", "share": 0.4}', "application/json")
        elif path == "/notes.txt":
            send(handler, 200, b"Plain notes about solar power.", "text/plain; charset=utf-8")
        elif path == "/error":
            send(handler, 500, b"boom", "text/plain")
        else:
            send(handler, 404, b"<h1>Not found</h1>")

    def _drip(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.end_headers()
        for _ in range(int(self.slow_seconds * 10)):
            if self.release.wait(0.1):
                return
            handler.wfile.write(b".")
            handler.wfile.flush()

    @staticmethod
    def _stream(handler: BaseHTTPRequestHandler, size: int) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Connection", "close")
        handler.end_headers()
        chunk = b"y" * 65536
        for _ in range(size // len(chunk)):
            handler.wfile.write(chunk)


_BOMB: bytes | None = None


def _bomb() -> bytes:
    global _BOMB
    if _BOMB is None:
        _BOMB = gzip.compress(b"\0" * BOMB_SIZE, compresslevel=9)
    return _BOMB
