"""A suggestion fill on the model's worker, and whether the user's typing still leaves it useful.

A typist sends a change and a new request on every key.  Cancelling the fill in flight each time
means that at 6 characters a second no fill ever finishes.  A fill is kept instead while the
document differs from the one it was computed for only by characters typed at its cursor (a
*typed run*) and those characters agree with what the fill is writing (its latest preview); its
answer then lands in the typed-ahead cache, which serves the rest of the suggestion.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from difill.server.config import Settings
from difill.server.engine_host import Job
from difill.server.features.suggestions.cache import MAX_TYPED_AHEAD, NOTHING_BEYOND, Asked, Beyond
from difill.server.suggestion_path import SuggestionRequest
from difill.text.context import FillContext, to_lf


def typed_run(before: str, offset: int, after: str, max_chars: int = MAX_TYPED_AHEAD) -> str | None:
    """The characters typed at ``offset`` that turn ``before`` into ``after`` ("" when they are
    equal); None when ``after`` is any other change, or more than ``max_chars`` typed."""
    grown = len(after) - len(before)
    if not 0 <= grown <= max_chars:
        return None
    if not (after.startswith(before[:offset]) and after.endswith(before[offset:])):
        return None
    return after[offset : offset + grown]


@dataclass(eq=False)
class RunningFill:
    """One suggestion fill that the worker runs or will run, and what it was computed for."""

    request: SuggestionRequest  # the document's text when the fill started, and its cursor
    asked: Asked
    settings: Settings  # the editor's settings it runs with (steps, maxTokens, ...)
    job: Job
    task: asyncio.Future[list[str]] | None = None  # the shown texts; also stored in the cache
    # The hole's best text so far (LF line endings): written by the worker after each denoising
    # step, read on the event loop.  A str assignment is atomic, so no lock is needed.
    preview: str = ""
    waiting: int = 0  # requests awaiting this fill; 0 once $/cancelRequest took them all
    speculative: bool = False  # computed before anyone asked (see service.py)
    # Speculative only: what the user would type from where ghost text was shown to reach this
    # fill's cursor (the suggestion, and a line break when it ends the line)
    path: str = ""
    far: Beyond = NOTHING_BEYOND  # what it reads beyond the cache's window, when it started (cache.py)

    @property
    def uri(self) -> str:
        return self.request.uri

    @property
    def text(self) -> str:
        return self.request.text

    @property
    def offset(self) -> int:
        return self.request.offset

    @property
    def ctx(self) -> FillContext:
        return self.request.ctx

    def on_preview(self, text: str, step: int) -> bool:  # noqa: ARG002 - the engine's PreviewCallback
        """The engine's one call per denoising step, on the worker: keep the preview, then the
        job's step (``Job.before_step``: urgent fills between steps, and whether to stop)."""
        self.preview = text
        return self.job.before_step()

    def typed_since(self, text: str) -> str | None:
        """What was typed at the fill's cursor since it started, if that is the only change."""
        return typed_run(self.text, self.offset, text)

    def agrees(self, typed: str) -> bool:
        """Whether the typed characters can still be the start of this fill's answer.

        Judged by the latest preview: before the first step there is nothing to judge, so the fill
        is kept; a preview shorter than what was typed cannot serve it."""
        preview = self.preview
        return not preview or preview.startswith(to_lf(typed))

    def serves(self, text: str, offset: int, asked: Asked, settings: Settings) -> bool:
        """Whether a request at ``offset`` in ``text``, asking ``asked`` with ``settings``, should
        wait for this fill rather than start its own: same ask and settings, cursor at the end of
        a typed run that agrees."""
        if asked != self.asked or settings != self.settings or self.job.cancelled:
            return False
        typed = self.typed_since(text)
        return typed is not None and offset == self.offset + len(typed) and self.agrees(typed)

    def still_useful(self, text: str) -> bool:
        """After a change to the document: keep this fill?"""
        if self.speculative:  # useful while the user is on the way to its position, or there
            start = self.offset - len(self.path)  # where the suggestion was shown
            shown_at = self.text[:start] + self.text[self.offset :]  # the text it was shown in
            typed = typed_run(shown_at, start, text, max_chars=len(self.path) + MAX_TYPED_AHEAD)
            if typed is None:
                return False
            if len(typed) <= len(self.path):
                return self.path.startswith(typed)
            return typed.startswith(self.path) and self.agrees(typed[len(self.path) :])
        typed = self.typed_since(text)
        return typed is not None and self.agrees(typed)


MAX_KEPT_FILLS = 2  # fills nobody waits for that may still run, over all documents
MAX_KEPT_STEPS = 64  # a fill with a larger step budget is cancelled when nobody waits for it


@dataclass
class KeptWork:
    """The bound on work nobody waits for: a fill whose requests were all cancelled may finish to
    fill the cache only if it is short (``MAX_KEPT_STEPS``) and among the ``MAX_KEPT_FILLS``
    newest such fills."""

    kept: list[RunningFill] = field(default_factory=list)

    def keep(self, fill: RunningFill) -> None:
        """``fill`` lost its last waiter: keep it, or cancel it (or an older kept one)."""
        if fill.settings.steps > MAX_KEPT_STEPS:
            fill.job.cancel()
            return
        self.kept = [f for f in self.kept if not (f.task and f.task.done()) and not f.job.cancelled]
        self.kept.append(fill)
        while len(self.kept) > MAX_KEPT_FILLS:
            self.kept.pop(0).job.cancel()
