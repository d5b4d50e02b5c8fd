"""Suggestions at a cursor, shared by inline completion and the completion fallback.

document -> FillContext (text/context.py) -> cache or engine (off the event loop) ->
the text pipeline (text/pipeline.py) -> distinct texts, best first.  A result computed
for a document version that is no longer current is dropped, never returned.

A typist sends a change and a request on every key, so a fill is not thrown away when the user
types into it (inflight.py): a change that only adds characters at the fill's cursor, agreeing
with what it writes, leaves it running, and the next request waits for it and is served the rest
of its suggestion from the typed-ahead cache.  A request the client cancels ($/cancelRequest)
leaves its fill running too, to fill the cache, within ``KeptWork``'s bound.  After ghost text is
shown, the fill for the position after accepting it is computed while the user reads
(*speculation*); it runs as a long job, so a real request runs between two of its steps and is
never queued behind it.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from difill.engine.api import BackendError
from difill.server.config import Settings
from difill.server.documents import Document
from difill.server.engine_host import JobCancelled, Jobs, ModelState, OneJobPerDocument
from difill.server.feature_handle import FeatureHandle
from difill.server.features.suggestions.cache import Asked, Beyond, SuggestionCache, beyond
from difill.server.features.suggestions.inflight import KeptWork, RunningFill
from difill.server.model_request import context_for
from difill.server.suggestion_path import SuggestionRequest, Workspace, drafts_without_model, suggest
from difill.text.context import FillContext
from difill.text.filters import keep_line_endings
from difill.text.shape import only_closers

log = logging.getLogger("difill.server.suggestions")

RECENT_ANSWERS = 16  # model answers that the recent latency in difill/status is the median of
SPECULATIVE_VERSION = -1  # the syntax tree of a text the document does not have (yet)


@dataclass(frozen=True)
class Suggestions:
    texts: list[str]  # best first, distinct, non-empty, in the document's line endings
    # "model", "cache", "in flight" (a fill started for an earlier keystroke), or why there are
    # none ("stale", "cancelled", "loading", ...)
    source: str
    # What an editor auto-closed after the cursor (``})``) when the rest of the line is only that;
    # a text of several lines ends on a line of its own for them, and its item may replace them.
    closers: str = ""


def auto_closed(ctx: FillContext) -> str:
    """The rest of the cursor's line when it is only closers an editor typed for the user."""
    return ctx.line_after if only_closers(ctx.line_after) else ""


class SuggestionService(OneJobPerDocument):
    def __init__(
        self, handle: FeatureHandle, workspace: Workspace | None = None, speculate: bool = True
    ) -> None:
        self.documents = handle.documents
        self.excluded = handle.excluded  # a document on the secrets deny list (server/context/policy.py)
        self.workspace = workspace  # the workspace index (server/context/feature.py)
        self.host = handle.host
        self.settings = handle.settings
        self.trees = handle.trees
        self.cache = SuggestionCache()
        self.jobs = Jobs()
        self.running: dict[str, RunningFill] = {}  # uri -> its fill in flight (Jobs: one at most)
        self.kept = KeptWork()
        self.speculate = speculate
        self.recent_ms: deque[float] = deque(maxlen=RECENT_ANSWERS)  # request to answer, model answers

    def recent_latency_ms(self) -> float | None:
        """The median time from request to answer of the last model answers (None before one)."""
        return statistics.median(self.recent_ms) if self.recent_ms else None

    async def suggest(self, document: Document, offset: int, invoked: bool) -> Suggestions:
        """Up to ``candidates`` suggestions when invoked, one when automatic; none when the model
        server failed (the status says why: engine_host.py)."""
        settings = self.settings()
        if not settings.enabled_for(document.language_id):
            return Suggestions([], "language disabled")
        if self.excluded(document.uri):  # its text must reach no model and no remote
            return Suggestions([], "excluded")
        count = settings.candidates if invoked else 1
        started = time.perf_counter()
        ctx = context_for(document.text, offset, document.language, settings, self.trees.tree_for(document))
        request = SuggestionRequest(document.uri, document.text, offset, document.language_id, ctx, invoked)
        asked = asked_for(ctx, invoked)

        far = self._beyond(document.uri, document.text, offset)
        hit = self.cache.lookup(asked, ctx.prefix, ctx.suffix, far)
        if hit is not None:
            log.info("suggestion from the cache (typed ahead %d characters)", hit.typed)
            return Suggestions(hit.suggestions[:count], "cache", auto_closed(ctx))

        running = self.running.get(document.uri)
        if running is not None and running.serves(document.text, offset, asked, settings):
            log.info("waiting for the fill in flight (%d characters typed into it)", offset - running.offset)
            try:
                await self._wait(running)
            except (JobCancelled, BackendError) as err:
                return _unanswered(err)
            if (stale := self._stale(document)) is not None:
                return stale
            hit = self.cache.lookup(asked, ctx.prefix, ctx.suffix, far)
            if hit is not None:
                self._answered(started)
                if not invoked:
                    self._speculate(document, offset, (hit.suggestions or [""])[0], asked, settings)
                return Suggestions(hit.suggestions[:count], "in flight", auto_closed(ctx))
            log.info("the fill in flight wrote something other than what was typed: a new fill")

        if settings.debounce_ms:
            await asyncio.sleep(settings.debounce_ms / 1000)
        if (unready := await self._until_ready(request, settings, count)) is not None:
            return unready
        if (stale := self._stale(document)) is not None:  # changed while this waited: not worth a fill
            return stale
        fill = self._start(request, asked, settings)
        try:
            texts = await self._wait(fill)
        except (JobCancelled, BackendError) as err:
            return _unanswered(err)
        if (stale := self._stale(document)) is not None:
            return stale
        self._answered(started)
        log.info(
            "%d suggestion(s) in %.0f ms (shape %s)",
            len(texts), (time.perf_counter() - started) * 1000, ctx.shape.kind.value,
        )  # fmt: skip
        if not invoked:
            self._speculate(document, offset, texts[0] if texts else "", asked, settings)
        return Suggestions(texts[:count], "model", auto_closed(ctx))

    async def _until_ready(
        self, request: SuggestionRequest, settings: Settings, count: int
    ) -> Suggestions | None:
        """None once the model is ready (waiting up to ``loadWaitMs`` for it); else what shows
        without it."""
        if self.host.state is not ModelState.READY:
            # Drafts need no model: offered while it loads, and when it could not load (a remote
            # that is down still leaves jedi's names and the workspace's). On a thread: the
            # workspace's sources may be large.
            early = await asyncio.to_thread(drafts_without_model, settings, request, self.workspace)
            if early:
                state = self.host.state.value
                return Suggestions(early[:count], f"drafts, the model {state}", auto_closed(request.ctx))
        if await self.host.wait_ready(settings.load_wait_ms / 1000) is None:
            return Suggestions([], self.host.state.value)
        return None

    # ------------------------------------------------------------------ fills

    def _start(
        self, request: SuggestionRequest, asked: Asked, settings: Settings, path: str = ""
    ) -> RunningFill:
        """A fill for ``request`` on the worker; it cancels the document's fill in flight.  With a
        ``path`` it is speculative: the request's text is the document after typing ``path`` at
        the cursor."""
        job = self.jobs.start(request.uri)
        fill = RunningFill(request, asked, settings, job, speculative=bool(path), path=path)
        fill.far = self._beyond(request.uri, request.text, request.offset)(0)
        self.running[request.uri] = fill
        fill.task = asyncio.ensure_future(self._run(fill, settings))
        fill.task.add_done_callback(lambda task: self._ended(fill, task))
        return fill

    async def _run(self, fill: RunningFill, settings: Settings) -> list[str]:
        """The fill on the worker: the one suggestion path (server/suggestion_path.py ``suggest``).  Its
        shown texts go to the cache for the text it was computed for (the cache is keyed on that
        text, so this holds even if the document moved on)."""
        try:
            shown = await self.host.run(
                fill.job,
                suggest,
                settings,
                fill.request,
                self.workspace,
                fill.job.before_step,
                fill.on_preview,
                # Speculation runs as a long job: an urgent (real) fill runs between its steps.
                urgent=not fill.speculative,
                background=fill.speculative,
            )
        finally:
            self.jobs.finish(fill.job)
            if self.running.get(fill.uri) is fill:
                del self.running[fill.uri]
        # Keyed on what it read when it started: a change beyond the window meanwhile misses it.
        if shown.cacheable:
            self.cache.store(fill.asked, fill.ctx.prefix, fill.ctx.suffix, shown.texts, fill.far)
        return shown.texts

    async def _wait(self, fill: RunningFill) -> list[str]:
        """The fill's texts.  If this request is cancelled ($/cancelRequest), the fill is not: it
        may finish to fill the cache (bounded by ``KeptWork``)."""
        assert fill.task is not None
        fill.waiting += 1
        try:
            return await asyncio.shield(fill.task)
        except asyncio.CancelledError:
            if fill.waiting == 1 and not fill.task.done():
                self.kept.keep(fill)
            raise
        finally:
            fill.waiting -= 1

    def _ended(self, fill: RunningFill, task: asyncio.Future) -> None:
        if task.cancelled():
            return
        error = task.exception()  # retrieved here, so a fill nobody waits for does not warn
        if isinstance(error, JobCancelled):
            log.info("%sfill cancelled after %d denoising steps",
                     "speculative " if fill.speculative else "", fill.job.steps_done)  # fmt: skip
        elif error is not None and fill.waiting == 0:
            log.warning("a %s fill nobody waited for failed: %s",
                        "speculative" if fill.speculative else "cancelled request's", error)  # fmt: skip
        elif error is None and fill.speculative:
            log.info("speculative fill ready after %d steps", fill.job.steps_done)

    def _speculate(
        self, document: Document, offset: int, shown: str, asked: Asked, settings: Settings
    ) -> None:
        """While the user reads ``shown`` (ghost text, possibly none): the fill for where they go
        next.  That is after accepting it or, when that leaves the cursor at the end of a line, the
        start of the next line (the first request on a new line is the slowest: nothing typed
        there before can serve it; an editor's auto-indent is typed ahead into the answer)."""
        if not self.speculate or document.uri in self.running:
            return
        text = document.text
        after = text[:offset] + shown + text[offset:]
        path = shown + (asked.newline if ends_a_line(after, offset + len(shown)) else "")
        if not path:
            return
        text = text[:offset] + path + text[offset:]
        at = offset + len(path)
        tree = self.trees.tree(document.uri, document.language, SPECULATIVE_VERSION, text)
        ctx = context_for(text, at, document.language, settings, tree)
        if self.cache.lookup(asked, ctx.prefix, ctx.suffix, self._beyond(document.uri, text, at)) is None:
            request = SuggestionRequest(document.uri, text, at, document.language_id, ctx, asked.invoked)
            self._start(request, asked, settings, path=path)

    def _beyond(self, uri: str, text: str, offset: int) -> Callable[[int], Beyond]:
        """What an answer at ``offset`` of ``text`` read beyond the cache's window, as it was
        ``typed`` characters ago: the far text, and the workspace's generation for ``uri``."""
        generation = self.workspace.generation(uri) if self.workspace is not None else 0
        return lambda typed: beyond(text, offset, generation, typed)

    def _stale(self, document: Document) -> Suggestions | None:
        current = self.documents.get(document.uri)
        if current is not None and current.version == document.version:
            return None
        now = current.version if current else "closed"
        log.info("result for version %s dropped: the document is at %s", document.version, now)
        return Suggestions([], "stale")

    def _answered(self, started: float) -> None:
        self.recent_ms.append((time.perf_counter() - started) * 1000)

    # ------------------------------------------------------------------ document events

    def document_changed(self, uri: str) -> None:
        """Cancel the document's fill in flight, unless the change only typed into it (inflight.py)."""
        fill = self.running.get(uri)
        document = self.documents.get(uri)  # None when the document lost sync
        if fill is not None and document is not None and fill.still_useful(document.text):
            return
        self.jobs.cancel(uri)


def ends_a_line(text: str, offset: int) -> bool:
    """Whether ``offset`` is at the end of a non-blank line: where the user presses Enter next."""
    line_start = text.rfind("\n", 0, offset) + 1
    rest = text[offset : offset + 2]
    return bool(text[line_start:offset].strip()) and (rest == "" or rest[0] == "\n" or rest == "\r\n")


def asked_for(ctx: FillContext, invoked: bool) -> Asked:
    """What a request asks, beyond its context (the cache keys on it)."""
    return Asked(invoked, keep_line_endings("\n", ctx))


def _unanswered(err: JobCancelled | BackendError) -> Suggestions:
    """No suggestion: the fill was cancelled (a newer change or request took it), or the model
    server failed (the status already says what it said; ghost text is never an error popup)."""
    return Suggestions([], "cancelled" if isinstance(err, JobCancelled) else "the model server failed")
