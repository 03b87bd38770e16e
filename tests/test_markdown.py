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


def test_on_the_page_task_lists_are_disabled_checkboxes_in_their_labels():
    """GFM task lists render as disabled checkboxes (ticked for [x]) inside a label holding
    the item's text; an input can only ever be such a checkbox."""
    from workflows.markdown import render_markdown_for_page, sanitize_html

    html = render_markdown_for_page("- [x] Read the notes\n- [ ] Compare *them*\n- plain")
    assert '<ul class="contains-task-list">' in html
    assert html.count('<li class="task-list-item"><label><input ') == 2
    assert "> Read the notes</label></li>" in html and "> Compare <em>them</em></label>" in html
    box = {"class": "task-list-item-checkbox", "disabled": "disabled", "type": "checkbox"}
    assert _inputs(html) == [{**box, "checked": "checked"}, box]
    assert "<li>plain</li>" in html
    forced = sanitize_html('<input type="text" name="x" value="y" class="z">', page=True)
    assert _inputs(forced) == [{"class": "", "disabled": "disabled", "type": "checkbox"}]
    assert "<input" not in render_markdown("- [x] done")  # a report keeps the text


def _inputs(html: str) -> list[dict[str, str | None]]:
    """The attributes of each input element of `html`."""
    from html.parser import HTMLParser

    found: list[dict[str, str | None]] = []

    class Inputs(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "input":
                found.append(dict(attrs))

    Inputs().feed(html)
    return found


def test_on_the_page_code_in_a_named_language_is_highlighted_and_reads_as_written():
    """A fence with a known language gets Pygments' token classes (only those classes); its
    text is the code exactly, blank lines and tabs kept; an unknown language is left plain."""
    import html as html_module
    import re

    from workflows.markdown import render_markdown_for_page

    code = '\n\tx = "<b>"  # note\n\nprint(x)\n'
    html = render_markdown_for_page(f"```python\n{code}```\n")
    assert '<span class="s2">' in html and '<span class="c1"># note</span>' in html
    inner = re.search(r"<pre><code>(.*)</code></pre>", html, re.S)[1]
    assert html_module.unescape(re.sub(r"<[^>]+>", "", inner)) == code
    assert "<b>" not in html and "language-python" not in html
    plain = render_markdown_for_page("```nosuchlanguage\nx = 1\n```\n")
    assert "<pre><code>x = 1\n</code></pre>" in plain


def test_the_browsers_allow_list_is_the_servers():
    """The allow-list the page hands to its browser-side sanitiser (#markdown-config) is the
    one the server cleans with: tags, attributes, classes, forced values, schemes, rel."""
    import json
    import re

    from django.template import Context, Template

    from workflows import markdown

    page = Template("{% load chat %}{% markdown_config %}").render(Context())
    shown = json.loads(re.search(r">(.*)</script>", page, re.S)[1])
    assert shown["tags"] == sorted(markdown.PAGE_TAGS)
    assert {tag: set(names) for tag, names in shown["attributes"].items()} == {
        tag: set(names) for tag, names in markdown.PAGE_ATTRIBUTES.items()
    }
    assert {tag: set(names) for tag, names in shown["classes"].items()} == {
        tag: set(names) for tag, names in markdown.PAGE_CLASSES.items()
    }
    assert shown["forced"] == markdown.PAGE_FORCED_ATTRIBUTES
    assert set(shown["urlSchemes"]) == markdown.URL_SCHEMES
    assert shown["linkRel"] == markdown.LINK_REL
    assert set(shown["styleProperties"]) == markdown.STYLE_PROPERTIES
    assert shown["topHeading"] == markdown.PAGE_TOP_HEADING
    # The page's scripts read it by this id, and sanitise with every part of it.
    script = (markdown_js := _static("js/markdown.js"))
    assert 'getElementById("markdown-config")' in markdown_js
    for key in shown:
        assert f"config.{key}" in script, key


def test_the_code_colours_are_generated_from_the_installed_pygments():
    """static/css/highlight.css is what highlight_css() writes (make vendor regenerates it)."""
    from workflows.markdown import highlight_css

    assert _static("css/highlight.css") == highlight_css()


def _static(path: str) -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[1] / "static" / path).read_text()
