"""Suggestions at a cursor, shared by inline completion and the completion fallback.

document -> prefix/suffix windows and shape -> cache or engine (off the event loop) -> filters
-> distinct texts, best first.  A result computed for a document version that is no longer
current is dropped, never returned.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from difill.server.config import Settings
from difill.server.documents import Document, Documents
from difill.server.features.cache import SuggestionCache
from difill.server.features.context import FillContext, build_context
from difill.server.features.engine_host import EngineHost, JobCancelled, Jobs
from difill.server.features.filters import apply_filters
from difill.server.features.shape import SyntaxTrees

log = logging.getLogger("difill.server.suggestions")


@dataclass(frozen=True)
class Suggestions:
    texts: list[str]  # best first, distinct, non-empty, in the document's line endings
    source: str  # "model", "cache", or why there are none ("stale", "cancelled", "loading", ...)


class SuggestionService:
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

    def context_at(self, document: Document, offset: int) -> FillContext:
        settings = self.settings()
        tree = self.trees.tree_for(document)
        return build_context(document, offset, settings.context_tokens, settings.max_tokens, tree)

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
            return Suggestions(hit.suggestions[:count], "cache")

        job = self.jobs.start(document.uri)
        started = time.perf_counter()
        try:
            if settings.debounce_ms:
                await asyncio.sleep(settings.debounce_ms / 1000)
            engine = await self.host.wait_ready(settings.load_wait_ms / 1000)
            if engine is None:
                return Suggestions([], self.host.state.value)
            result = await self.host.run(
                job, lambda engine: fill_for_editor(engine, ctx, settings, invoked, job.should_stop)
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
        texts = shown_texts(result, ctx)
        self.cache.store(ctx.prefix, ctx.suffix, texts)
        log.info(
            "%d suggestion(s) in %.0f ms (%d steps, shape %s)",
            len(texts), (time.perf_counter() - started) * 1000, result.stats.steps, ctx.shape.kind.value,
        )  # fmt: skip
        return Suggestions(texts[:count], "model")

    def document_changed(self, uri: str) -> None:
        """A change makes the fill in flight for ``uri`` useless: stop it."""
        self.jobs.cancel(uri)


@dataclass
class Shown:
    """One answer as the editor shows it, and what it cost."""

    text: str  # first suggestion after the filters; "" when none survives
    forwards: int
    tokens_per_forward: float
    ms: float
    result: Any  # the engine's FillResult, before the filters


class ServedModel:
    """The server's suggestion path for one document at a time, without the LSP transport.

    ``difill fill`` and ``difill eval`` use it, so both print and score what the editor shows.
    """

    def __init__(self, engine: Any, settings: Settings | None = None, experiment: dict | None = None) -> None:
        self.engine = engine
        self.settings = settings or Settings()
        self.experiment = experiment or {}  # FillOptions fields to override (`difill eval --revise`)
        self.trees = SyntaxTrees()
        self._version = 0

    def suggest(
        self, text: str, offset: int, uri: str = "file:///untitled.py", language_id: str = "python"
    ) -> Shown:
        """The first suggestion an automatic request at ``offset`` would show ("" for none)."""
        self._version += 1
        document = Document(uri, language_id, self._version, text)
        ctx = build_context(document, offset, self.settings.context_tokens, self.settings.max_tokens,
                            self.trees.tree_for(document))  # fmt: skip
        started = time.perf_counter()
        result = fill_for_editor(self.engine, ctx, self.settings, invoked=False, experiment=self.experiment)
        ms = (time.perf_counter() - started) * 1000
        texts = shown_texts(result, ctx)
        first = texts[0] if texts else ""
        return Shown(first, result.stats.decoder_forwards, result.stats.tokens_per_forward, ms, result)


def fill_for_editor(
    engine: Any,
    ctx: FillContext,
    settings: Settings,
    invoked: bool,
    should_stop: Callable[[], bool] = lambda: False,
    experiment: dict | None = None,
) -> Any:
    """The engine call behind a suggestion, with the request's shape and the editor's settings.

    ``difill eval`` calls this and ``shown_texts`` too, so it scores exactly what the editor shows;
    ``experiment`` overrides FillOptions fields there, to measure an option before it ships.
    """
    from dataclasses import replace

    from difill.engine.infill import FillOptions

    options = FillOptions(
        max_hole_tokens=ctx.shape.max_tokens,
        # Typing (automatic) shows one suggestion: one hole length, the longest, costs a third of
        # the batch.  `difill eval` measured no exact-match loss from it (selection rules "engine"
        # and "longest_hole" tie).  An explicit request tries three lengths for distinct candidates.
        hole_candidates=() if invoked else (ctx.shape.max_tokens,),
        single_line=ctx.shape.single_line,
        language=ctx.language,
        max_steps=settings.steps,
        prefix_tokens=settings.context_tokens,
    )
    if experiment:
        options = replace(options, **experiment)
    return engine.fill(ctx.prefix, ctx.suffix, options, should_stop=should_stop)


def shown_texts(result: Any, ctx: FillContext) -> list[str]:
    """The candidates of a fill as the editor shows them: filtered, non-empty, distinct, best first."""
    return distinct(apply_filters(c.text, ctx) for c in result.candidates)


def distinct(texts) -> list[str]:
    out: list[str] = []
    for text in texts:
        if text and text not in out:
            out.append(text)
    return out
