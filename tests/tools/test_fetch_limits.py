"""The safe fetcher against the local test site: redirects, caps, types, robots.txt."""

from __future__ import annotations

import asyncio
import gzip

import pytest

from tests.support.website import BOMB_SIZE, TestWebsite, _bomb
from workflows.tools.web.fetch import (
    FetchDisallowed,
    FetchFailed,
    FetchTimeout,
    FetchTooLarge,
    FetchUnsupported,
    SafeFetcher,
)
from workflows.tools.web.inflate import Inflater
from workflows.tools.web.settings import DEFAULT_USER_AGENT


async def test_fetches_a_page_with_an_honest_user_agent(fetcher, website):
    """A page of an allowed origin is fetched; the site sees our User-Agent."""
    page = await fetcher.get(website.page_url("/a"))
    assert page.status == 200
    assert page.media_type == "text/html"
    assert "Solar Power in Northern Europe" in page.text()
    assert website.requests[-1].headers["User-Agent"] == DEFAULT_USER_AGENT
    assert DEFAULT_USER_AGENT.startswith("PowerOnBot/")


async def test_follows_up_to_three_redirects(fetcher, website):
    """Three redirects are followed by hand, each hop recorded."""
    page = await fetcher.get(website.page_url("/redirect/3"))
    assert page.url == website.page_url("/a")
    assert len(page.redirects) == 3
    assert website.paths[-4:] == ["/redirect/3", "/redirect/2", "/redirect/1", "/a"]


async def test_too_many_redirects(fetcher, website):
    """A fourth redirect is not followed."""
    with pytest.raises(FetchFailed, match="redirected more than 3 times"):
        await fetcher.get(website.page_url("/redirect/4"))
    assert "/a" not in website.paths


async def test_redirect_limit_is_a_setting(settings_for, website):
    """With max redirects 0, the first redirect already fails."""
    async with SafeFetcher(settings_for(fetch_max_redirects=0)) as fetcher:
        with pytest.raises(FetchFailed, match="redirected more than 0 times"):
            await fetcher.get(website.page_url("/redirect/1"))


@pytest.mark.parametrize("path", ["/large", "/large-stream"])
async def test_size_cap(path, fetcher, website):
    """A body over 5 MB is refused, with or without a Content-Length."""
    with pytest.raises(FetchTooLarge, match="the 5 MB limit"):
        await fetcher.get(website.page_url(path))


async def test_gzip_bomb_is_stopped_after_decompression(settings_for, website):
    """A small gzip body that inflates past the cap is refused while it inflates."""
    assert len(_bomb()) < 100_000 < BOMB_SIZE
    async with SafeFetcher(settings_for(fetch_max_bytes=1_000_000)) as fetcher:
        with pytest.raises(FetchTooLarge):
            await fetcher.get(website.page_url("/gzip-bomb"))


async def test_gzip_page_is_decoded(fetcher, website):
    """An ordinary gzip-encoded page arrives decompressed."""
    page = await fetcher.get(website.page_url("/gzip"))
    assert "Solar Power in Northern Europe" in page.text()
    assert website.requests[-1].headers["Accept-Encoding"] == "gzip, deflate"


async def test_time_cap(settings_for, website):
    """A page slower than the time cap fails with FetchTimeout."""
    async with SafeFetcher(settings_for(fetch_timeout=0.3)) as fetcher:
        with pytest.raises(FetchTimeout, match="within 0.3 seconds"):
            await fetcher.get(website.page_url("/slow"))


async def test_time_cap_is_an_overall_deadline(settings_for, website):
    """A body trickling in faster than any read timeout still stops at the time cap."""
    async with SafeFetcher(settings_for(fetch_timeout=0.5)) as fetcher:
        with pytest.raises(FetchTimeout):
            await fetcher.get(website.page_url("/drip"))


def test_inflater_never_produces_much_more_than_asked():
    """Decompression is bounded per call, so a bomb in one chunk cannot fill memory."""
    packed = gzip.compress(b"\0" * 10_000_000)
    out = Inflater("gzip", "http://x/").feed(packed, 1000)
    assert 1000 < len(out) <= 1001


async def test_cancellation_propagates(fetcher, website):
    """Cancelling a fetch raises CancelledError in the caller; it is never swallowed."""
    task = asyncio.ensure_future(fetcher.get(website.page_url("/slow")))
    while "/slow" not in website.paths:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_content_type_refusal(fetcher, website):
    """A content type outside the allow-list is refused before its body is read."""
    with pytest.raises(FetchUnsupported, match="image/png"):
        await fetcher.get(website.page_url("/image.png"))


@pytest.mark.parametrize(
    ("path", "media"), [("/data.json", "application/json"), ("/notes.txt", "text/plain")]
)
async def test_allowed_content_types(path, media, fetcher, website):
    """JSON and plain text are read."""
    page = await fetcher.get(website.page_url(path))
    assert page.media_type == media


async def test_http_error_status(fetcher, website):
    """An error status is a FetchFailed carrying the status."""
    with pytest.raises(FetchFailed) as failure:
        await fetcher.get(website.page_url("/error"))
    assert failure.value.status == 500


async def test_robots_txt_is_respected_and_cached(fetcher, website):
    """A disallowed path is not requested; robots.txt is read once per origin."""
    await fetcher.get(website.page_url("/a"))
    with pytest.raises(FetchDisallowed, match="robots.txt"):
        await fetcher.get(website.page_url("/private/secret"))
    await fetcher.get(website.page_url("/b"))
    assert website.paths == ["/robots.txt", "/a", "/b"]


async def test_missing_robots_txt_allows_everything(settings_for):
    """A 404 robots.txt means no restrictions."""
    with TestWebsite(robots=None) as site:
        settings = settings_for(allow_hosts=[site.origin])
        async with SafeFetcher(settings) as fetcher:
            page = await fetcher.get(site.page_url("/private/secret"))
    assert page.status == 200


async def test_failing_robots_txt_disallows(settings_for):
    """A robots.txt that errors means "disallow all", as RFC 9309 asks."""
    with TestWebsite() as site:
        site.extra["/robots.txt"] = lambda handler: handler.send_error(503)
        async with SafeFetcher(settings_for(allow_hosts=[site.origin])) as fetcher:
            with pytest.raises(FetchDisallowed):
                await fetcher.get(site.page_url("/a"))
        assert "/a" not in site.paths


async def test_robots_can_be_switched_off(settings_for, website):
    """respect_robots=False skips robots.txt entirely."""
    async with SafeFetcher(settings_for(respect_robots=False)) as fetcher:
        await fetcher.get(website.page_url("/private/secret"))
    assert website.paths == ["/private/secret"]


async def test_charset_from_the_meta_tag(fetcher, website):
    """An HTML page without a charset header is decoded by its <meta charset>."""

    def latin1(handler):
        body = '<html><head><meta charset="iso-8859-1"><title>Zürich</title></head></html>'
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.end_headers()
        handler.wfile.write(body.encode("latin-1"))

    website.extra["/latin1"] = latin1
    page = await fetcher.get(website.page_url("/latin1"))
    assert "Zürich" in page.text()
