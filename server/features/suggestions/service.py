"""Suggestions at a cursor, shared by inline completion and the completion fallback.

document -> FillContext (engine/text/context.py) -> cache or engine (off the event loop) ->
the text pipeline (engine/text/pipeline.py) -> distinct texts, best first.  A result computed
for a document version that is no longer current is dropped, never returned.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from difill.engine.text.context import FillContext
from difill.engine.text.pipeline import shown_texts
from difill.engine.text.shape import only_closers
from difill.server.config import Settings
from difill.server.documents import Document, Documents
from difill.server.engine_host import EngineHost, JobCancelled, Jobs, OneJobPerDocument
from difill.server.features.suggestions.cache import SuggestionCache
from difill.server.served import context_for, fill_for_editor, model_declines
from difill.server.trees import SyntaxTrees

log = logging.getLogger("difill.server.suggestions")


@dataclass(frozen=True)
class Suggestions:
    texts: list[str]  # best first, distinct, non-empty, in the document's line endings
    source: str  # "model", "cache", or why there are none ("stale", "cancelled", "loading", ...)
    # What an editor auto-closed after the cursor (``})``) when the rest of the line is only that;
    # a text of several lines ends on a line of its own for them, and its item may replace them.
    closers: str = ""


def auto_closed(ctx: FillContext) -> str:
    """The rest of the cursor's line when it is only closers an editor typed for the user."""
    return ctx.line_after if only_closers(ctx.line_after) else ""


class SuggestionService(OneJobPerDocument):
    def __init__(
        self,
        documents: Documents,
        host: EngineHost,
        settings: Callable[[], Settings],
        trees: SyntaxTrees | None = None,
    ) -> None:
        self.documents = documents
        self.host = host
        self.settings = settings
        self.trees = trees or SyntaxTrees()
        self.cache = SuggestionCache()
        self.jobs = Jobs()
        self._declined: dict[str, str] = {}  # uri -> why its language gets no model text (logged once)

    def _say_once(self, uri: str, why: str) -> None:
        """Log (the editor's output panel) why a document gets no suggestions, once per document."""
        if self._declined.get(uri) != why:
            self._declined[uri] = why
            log.info("no suggestions in %s: %s", uri, why)

    def context_at(self, document: Document, offset: int) -> FillContext:
        tree = self.trees.tree_for(document)
        return context_for(document.text, offset, document.language_id, document.uri, self.settings(), tree)

    async def suggest(self, document: Document, offset: int, invoked: bool) -> Suggestions:
        """Up to ``candidates`` suggestions when invoked, one when automatic."""
        settings = self.settings()
        if not settings.enabled_for(document.language_id):
            return Suggestions([], "language disabled")
        count = settings.candidates if invoked else 1
        ctx = self.context_at(document, offset)

        hit = self.cache.lookup(ctx.prefix, ctx.suffix)
        if hit is not None:
            log.info("suggestion from the cache (typed ahead %d characters)", hit.typed)
            return Suggestions(hit.suggestions[:count], "cache", auto_closed(ctx))

        job = self.jobs.start(document.uri)
        started = time.perf_counter()
        try:
            if settings.debounce_ms:
                await asyncio.sleep(settings.debounce_ms / 1000)
            engine = await self.host.wait_ready(settings.load_wait_ms / 1000)
            if engine is None:
                return Suggestions([], self.host.state.value)
            declined = model_declines(engine, ctx.language, document.language_id)
            if declined is not None:
                self._say_once(document.uri, declined)
                return Suggestions([], "language not served")
            result = await self.host.run(
                job,
                lambda engine: fill_for_editor(engine, ctx, settings, invoked, job.should_stop),
                urgent=True,
            )
        except JobCancelled:
            log.info("fill cancelled after %d denoising steps", job.steps_done)
            return Suggestions([], "cancelled")
        finally:
            self.jobs.finish(job)

        current = self.documents.get(document.uri)
        if current is None or current.version != document.version:
            now = current.version if current else "closed"
            log.info("result for version %s dropped: the document is at %s", document.version, now)
            return Suggestions([], "stale")
        texts = shown_texts(result.candidates, ctx)
        self.cache.store(ctx.prefix, ctx.suffix, texts)
        log.info(
            "%d suggestion(s) in %.0f ms (%d steps, shape %s)",
            len(texts), (time.perf_counter() - started) * 1000, result.stats.steps, ctx.shape.kind.value,
        )  # fmt: skip
        return Suggestions(texts[:count], "model", auto_closed(ctx))
