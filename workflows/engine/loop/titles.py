"""The documents a request titles ("a report titled 'Aurora summary'") that the round has not
written yet: work a model may call done before it is (checked by refine's stop and the
review)."""

from __future__ import annotations

from workflows.engine.loop.answer import names_a_document, produced_documents, words_of
from workflows.engine.loop.core import RoundContext
from workflows.engine.loop.defaults import requested_titles


async def unwritten_titles(ctx: RoundContext) -> list[str]:
    """The titles the request gives documents it asks for that no document of this round
    carries, as its name or its first heading: work a model may call done before it is."""
    produced = produced_documents(ctx)
    titles = [t for t in requested_titles(ctx.state.prompt) if not names_a_document(t, produced)]
    if not titles:
        return []
    headings = set()
    for ref in produced:
        if ref.mime.startswith("text/"):
            head = (await ctx.store.read(ref))[:2_000].decode("utf-8", "replace").lstrip()
            if head.startswith("#"):
                headings.add(words_of(head.splitlines()[0]))
    return [title for title in titles if words_of(title) not in headings]
