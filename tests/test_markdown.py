"""Markdown rendering: CommonMark with tables, sanitised for untrusted text."""

from __future__ import annotations

from workflows.markdown import render_markdown, sanitize_html


def test_renders_commonmark_and_tables():
    """Headings, emphasis, lists and pipe tables become the matching HTML."""
    source = "# Title\n\n*a* **b**\n\n- one\n- two\n\n| x | y |\n|---|--:|\n| 1 | 2 |"
    html = render_markdown(source)
    assert "<h1>Title</h1>" in html
    assert "<em>a</em> <strong>b</strong>" in html
    assert "<li>one</li>" in html
    assert "<th>x</th>" in html
    assert '<td style="text-align:right">2</td>' in html


def test_script_tags_are_escaped_not_executed():
    """A <script> in the markdown shows as text; no script element survives."""
    html = render_markdown("hello <script>alert(1)</script>")
    assert "<script" not in html
    assert "&lt;script&gt;" in html


def test_event_handler_attributes_never_survive():
    """An inline <img onerror=...> is escaped text, never an element with a handler."""
    html = render_markdown('<img src="x" onerror="alert(1)">')
    assert "<img" not in html
    assert "&lt;img" in html


def test_raw_html_blocks_have_no_effect():
    """Block-level raw HTML (iframe, style, form) is rendered as inert text."""
    html = render_markdown('<iframe src="https://evil.test"></iframe>\n\n<style>body{}</style>')
    assert "<iframe" not in html
    assert "<style" not in html


def test_javascript_links_are_not_links():
    """javascript:, data: and vbscript: links, whatever their case, produce no href."""
    html = render_markdown(
        "[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](data:text/html,x) "
        "[d](vbscript:x) <javascript:alert(1)>"
    )
    assert "href" not in html


def test_links_get_safe_rel():
    """Allowed links keep their href and get rel=noopener noreferrer nofollow."""
    html = render_markdown("[site](https://example.org/page)")
    assert 'href="https://example.org/page"' in html
    assert 'rel="noopener noreferrer nofollow"' in html


def test_images_become_links():
    """An image would load without a click, so it is rendered as a plain link instead."""
    html = render_markdown("![chart](https://evil.test/pixel.png?leak=1)")
    assert "<img" not in html
    assert '<a href="https://evil.test/pixel.png?leak=1"' in html
    assert ">chart</a>" in html


def test_sanitize_html_strips_disallowed_markup():
    """The sanitiser drops scripts with their content, handlers and unknown attributes."""
    html = sanitize_html(
        '<p onclick="x()" class="c">hi<script>alert(1)</script></p><a href="javascript:x">l</a>'
    )
    assert html == '<p>hi</p><a rel="noopener noreferrer nofollow">l</a>'


def test_on_the_page_an_answers_headings_sit_under_the_pages():
    """The page has its h1, a round's h2 and the answer's h3: an answer's top heading becomes
    h4 and the levels below it follow, nothing past h6; the export keeps the model's own."""
    from workflows.markdown import render_markdown_for_page

    html = render_markdown_for_page("# Title\n\n## Part\n\n#### Deep\n\nText with `<h1>`.")
    assert "<h4>Title</h4>" in html and "<h5>Part</h5>" in html and "<h6>Deep</h6>" in html
    assert "<h1" not in html and "&lt;h1&gt;" in html
    assert "<h1>Title</h1>" in render_markdown("# Title")
    # An answer whose top heading is `##` keeps its steps (they all became h5 and h6).
    html = render_markdown_for_page("## Findings\n\n### Costs\n\n#### Detail\n\ntext")
    assert "<h4>Findings</h4>" in html and "<h5>Costs</h5>" in html and "<h6>Detail</h6>" in html
