"""A model of the chat page for tests: which element ids exist, and whether every out-of-band
swap of a fragment finds its target when fragments arrive in order, as HTMX applies them."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    ids: set[str] = field(default_factory=set)
    """Ids of this element and everything inside it."""
    text: list[str] = field(default_factory=list)


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.top: list[Element] = []
        self.open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        if "id" in element.attrs:
            for holder in [*self.open, element]:
                holder.ids.add(element.attrs["id"])
        if not self.open:
            self.top.append(element)
        if tag not in VOID:
            self.open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self.open:
            if self.open.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        for holder in self.open:
            holder.text.append(data)


def parse(html: str) -> list[Element]:
    """The top-level elements of a fragment, with the ids inside each."""
    parser = _Parser()
    parser.feed(html)
    parser.close()
    return parser.top


class Page:
    """The ids of a page, changed by fragments the way HTMX's ws extension swaps them."""

    def __init__(self, html: str) -> None:
        self.ids: set[str] = set()
        for element in parse(html):
            self.ids |= element.ids
        self.texts: dict[str, str] = {}
        """The latest text of each swapped-in element, by id."""

    def apply(self, fragment: str) -> list[str]:
        """Swap a fragment in; the swaps whose target is missing (empty when all hit)."""
        missing = []
        for element in parse(fragment):
            swap = element.attrs.get("hx-swap-oob") or "true"
            if swap in ("true", "outerHTML"):
                target = element.attrs.get("id", "")
                if target not in self.ids:
                    missing.append(f"#{target or '(no id)'} ({element.tag})")
                self.texts[target] = "".join(element.text)
            else:
                _, _, selector = swap.partition(":")
                if not selector.startswith("#") or selector[1:] not in self.ids:
                    missing.append(f"{selector} ({swap})")
            self.ids |= element.ids
        return missing
