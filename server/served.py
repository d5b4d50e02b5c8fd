"""The server's suggestion path without the LSP transport: context -> engine -> pipeline.

The language server's features call ``context_for`` and ``fill_for_editor``; ``difill fill``,
``difill eval`` and ``difill bench`` call ``ServedModel``, so they print and score exactly what the
editor shows.  No torch and no LSP types are imported here: a remote ``difill fill`` starts fast.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from tree_sitter import Tree

from difill.engine.api import (
    HOLE_TOKENS,
    BackendError,
    FillOptions,
    FillResult,
    FillStats,
    HolesResult,
    InfillBackend,
    ShouldStop,
    backend_languages,
)
from difill.engine.languages import language_of
from difill.engine.text.context import FillContext, build_context, to_lf
from difill.engine.text.pipeline import shown_middles, shown_texts
from difill.engine.text.rules import with_middles
from difill.server.config import Settings
from difill.server.trees import SyntaxTrees


@dataclass
class Shown:
    """One answer as the editor shows it, and what it cost."""

    text: str  # first suggestion after the filters; "" when none survives
    forwards: int
    tokens_per_forward: float
    ms: float
    result: FillResult  # the engine's, before the pipeline
    declined: str | None = None  # why the model was not asked (``model_declines``), if it was not


@dataclass
class ShownHoles:
    """Marked holes filled as the editor's fill-holes edit shows them."""

    text: str  # the input with every marker replaced by its shown middle
    middles: list[str]  # each hole's middle after the pipeline
    ms: float
    result: HolesResult  # the engine's, before the pipeline


class ServedModel:
    """The server's suggestion path for one document at a time, without the LSP transport.

    ``difill fill`` and ``difill eval`` use it, so both print and score what the editor shows.
    """

    def __init__(
        self, engine: InfillBackend, settings: Settings | None = None, experiment: dict | None = None
    ) -> None:
        self.engine = engine
        self.settings = settings or Settings()
        self.experiment = experiment or {}  # FillOptions fields to override (`difill eval --revise`)
        self.trees = SyntaxTrees()
        self._version = 0

    def suggest(
        self,
        text: str,
        offset: int,
        uri: str = "file:///untitled.py",
        language_id: str = "python",
        invoked: bool = False,
    ) -> Shown:
        """The first suggestion a request at ``offset`` would show ("" for none): an automatic one
        (ghost text while typing, the default) or, with ``invoked``, one the user asked for."""
        self._version += 1
        tree = self.trees.tree(uri, language_id, self._version, text)
        ctx = context_for(text, offset, language_id, uri, self.settings, tree)
        declined = model_declines(self.engine, ctx.language, language_id)
        if declined is not None:
            return Shown("", 0, 0.0, 0.0, FillResult("", [], FillStats()), declined)
        started = time.perf_counter()
        result = fill_for_editor(self.engine, ctx, self.settings, invoked, experiment=self.experiment)
        ms = (time.perf_counter() - started) * 1000
        texts = shown_texts(result.candidates, ctx)
        first = texts[0] if texts else ""
        return Shown(first, result.stats.decoder_forwards, result.stats.tokens_per_forward, ms, result)

    def fill_holes(
        self, text: str, marker: str, language: str | None, max_hole_tokens: int | None = None
    ) -> ShownHoles:
        """Every ``marker`` in ``text`` filled in one canvas, each middle fitted where it sits.
        Raises BackendError in a language the model declines (``model_declines``)."""
        declined = model_declines(self.engine, language, language or "")
        if declined is not None:
            raise BackendError(declined)
        started = time.perf_counter()
        options = edit_options(self.settings, language, max_hole_tokens or HOLE_TOKENS)
        result = self.engine.fill_holes(to_lf(text), marker, options)
        middles = shown_middles(text, marker, result.middles, language, self.settings.context_tokens,
                                options.max_hole_tokens)  # fmt: skip
        ms = (time.perf_counter() - started) * 1000
        return ShownHoles(with_middles(text, marker, middles), middles, ms, result)


def context_for(
    text: str, offset: int, language_id: str, uri: str, settings: Settings, tree: Tree | None
) -> FillContext:
    """The FillContext of a cursor in a document, with the editor's budgets."""
    language = language_of(language_id, uri)
    return build_context(text, offset, language, settings.context_tokens, settings.max_tokens, tree)


def model_declines(engine: object, language: str | None, language_id: str) -> str | None:
    """Why ``engine``'s model must show nothing in a document of ``language`` (as
    engine/languages.py names it; ``language_id`` as the editor does); None when it serves it.

    A checkpoint names the languages it was trained on (config ``difill.languages``; the shipped
    model: Python).  In any other language it writes noise, so suggestions and edits show none of
    its text there; one that names no language serves all.  Every model call for an editor
    (``fill_for_editor``'s callers, the edits) asks this first.
    """
    languages = backend_languages(engine)
    if not languages or language in languages:
        return None
    return (
        f"the model was trained on {', '.join(languages)} only, so it writes nothing in "
        f"{language or language_id or 'this language'}; set difill.modelPath or difill.remote to a "
        "model trained on it"
    )


def edit_options(settings: Settings, language: str | None, max_hole_tokens: int = HOLE_TOKENS) -> FillOptions:
    """The engine options of an edit (fill holes, rewrite, complete block) with the editor's settings."""
    return FillOptions(
        max_hole_tokens=max_hole_tokens,
        language=language,
        max_steps=settings.steps,
        prefix_tokens=settings.context_tokens,
    )


def fill_for_editor(
    engine: InfillBackend,
    ctx: FillContext,
    settings: Settings,
    invoked: bool,
    should_stop: ShouldStop = lambda: False,
    experiment: dict | None = None,
) -> FillResult:
    """The engine call behind a suggestion, with the request's shape and the editor's settings.

    ``difill eval`` calls this and ``shown_texts`` too, so it scores exactly what the editor shows;
    ``experiment`` overrides FillOptions fields there, to measure an option before it ships.
    """
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
        # Ghost text shows only what the model is sure of; an explicit request gets whole middles.
        min_token_prob=0.0 if invoked else settings.min_token_prob,
    )
    if experiment:
        options = replace(options, **experiment)
    return engine.fill(ctx.prefix, ctx.suffix, options, should_stop=should_stop)
