"""A model of the chat page for tests: a small DOM that fragments change the way HTMX's ws
extension swaps them out of band, and that says which swap found no target and which id is
on the page twice.

Each top-level element of a fragment is one out-of-band swap (`hx-swap-oob`): "true" (or
none) replaces the element with its id; `outerHTML:#id` replaces that element; `innerHTML`,
`beforebegin`, `afterbegin`, `beforeend` and `afterend` (with `:#id`, else the element's own
id) put the element's children there, as HTMX does for every style but outerHTML.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
RAW = {"noscript", "script", "style", "textarea", "template"}
"""Elements whose content the page does not hold as elements here (with scripts on, a
<noscript>'s content is text; a <template>'s is not in the document)."""


@dataclass(eq=False)
class Element:
    """An element, its attributes and its children (elements and text, in order)."""

    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)
    parent: Element | None = None

    @property
    def id(self) -> str:
        """The element's id ("" without one)."""
        return self.attrs.get("id", "")

    @property
    def elements(self) -> list[Element]:
        """The child elements, in order."""
        return [child for child in self.children if isinstance(child, Element)]

    def walk(self) -> Iterator[Element]:
        """This element and every element inside it, in document order."""
        yield self
        for child in self.elements:
            yield from child.walk()

    @property
    def ids(self) -> set[str]:
        """Ids of this element and everything inside it."""
        return {element.id for element in self.walk() if element.id}

    @property
    def text(self) -> str:
        """Its text, as one string with runs of white space made one space."""
        parts: list[str] = []
        for child in self.children:
            parts.append(child if isinstance(child, str) else f" {child.text} ")
        return " ".join("".join(parts).split())

    def find(self, predicate) -> list[Element]:
        """The elements inside (this one included) that `predicate` accepts, in order."""
        return [element for element in self.walk() if predicate(element)]

    def classes(self) -> set[str]:
        """The element's classes."""
        return set(self.attrs.get("class", "").split())


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#fragment", {})
        self.open: list[Element] = [self.root]
        self.raw: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.raw:
            return
        element = Element(tag, {k: v or "" for k, v in attrs}, parent=self.open[-1])
        self.open[-1].children.append(element)
        if tag in RAW:
            self.raw = tag
            self.set_cdata_mode(tag)
        if tag not in VOID:
            self.open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID and not self.raw:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.raw and tag != self.raw:
            return
        self.raw = None
        for index in range(len(self.open) - 1, 0, -1):
            if self.open[index].tag == tag:
                del self.open[index:]
                break

    def handle_data(self, data: str) -> None:
        self.open[-1].children.append(data)


def parse(html: str) -> list[Element]:
    """The top-level elements of a fragment, each with what is inside it."""
    parser = _Parser()
    parser.feed(html)
    parser.close()
    return parser.root.elements


class Page:
    """A page as the ws extension changes it: every fragment's out-of-band swaps, in order."""

    def __init__(self, html: str) -> None:
        self.root = Element("#document", {})
        for element in parse(html):
            self._adopt(self.root, len(self.root.children), [element])

    def apply(self, fragment: str) -> list[str]:
        """Swap a fragment in; the swaps whose target is missing (empty when all hit)."""
        missing = []
        for element in parse(fragment):
            swap = element.attrs.pop("hx-swap-oob", "") or "true"
            style, _, selector = swap.partition(":")
            if style == "true":
                style, selector = "outerHTML", ""
            selector = selector or f"#{element.id}"
            target = self.by_id(selector[1:]) if selector.startswith("#") else None
            if target is None:
                missing.append(f"{selector} ({swap}, {element.tag})")
                continue
            self._swap(style, target, element)
        return missing

    def _swap(self, style: str, target: Element, element: Element) -> None:
        content = [element] if style == "outerHTML" else list(element.children)
        parent = target.parent
        assert parent is not None or style in ("innerHTML", "afterbegin", "beforeend")
        if style == "outerHTML":
            assert parent is not None
            at = parent.children.index(target)
            del parent.children[at]
            self._adopt(parent, at, content)
        elif style == "innerHTML":
            target.children = []
            self._adopt(target, 0, content)
        elif style == "afterbegin":
            self._adopt(target, 0, content)
        elif style == "beforeend":
            self._adopt(target, len(target.children), content)
        elif style in ("beforebegin", "afterend"):
            assert parent is not None
            at = parent.children.index(target) + (style == "afterend")
            self._adopt(parent, at, content)
        else:
            raise ValueError(f"a swap style the page does not know: {style}")

    @staticmethod
    def _adopt(parent: Element, at: int, content: list[Element | str]) -> None:
        for child in content:
            if isinstance(child, Element):
                child.parent = parent
        parent.children[at:at] = content

    def by_id(self, element_id: str) -> Element | None:
        """The first element with this id, if any."""
        return next((e for e in self.root.walk() if e.id == element_id), None)

    def repeated_ids(self) -> dict[str, int]:
        """Ids on the page more than once, with how often."""
        counts = Counter(element.id for element in self.root.walk() if element.id)
        return {element_id: n for element_id, n in counts.items() if n > 1}

    @property
    def ids(self) -> set[str]:
        """Every id on the page."""
        return self.root.ids
