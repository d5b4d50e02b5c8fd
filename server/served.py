"""The server's suggestion path without the LSP transport: context -> engine -> pipeline.

The language server's features call ``context_for`` and ``fill_for_editor``; ``difill fill``,
``difill eval`` and ``difill bench`` call ``ServedModel``, so they print and score exactly what the
editor shows.  No torch and no LSP types are imported here: a remote ``difill fill`` starts fast.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from tree_sitter import Tree

from difill.engine.api import (
    HOLE_TOKENS,
    BackendError,
    DraftCallback,
    FillOptions,
    FillResult,
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
from difill.server.context.drafts import Draft
from difill.server.context.prompt import snippet_block
from difill.server.draft_policy import draft_mode, drafts_result, fitting_drafts, is_sure
from difill.server.trees import SyntaxTrees

if TYPE_CHECKING:  # the index imports pygls: `difill fill --remote` loads no LSP library
    from difill.server.context.retrieval import Snippet

log = logging.getLogger("difill.server")
_SAID: set[str] = set()  # why a language got no model text, each logged once


@dataclass
class Shown:
    """One answer as the editor shows it, and what it cost."""

    text: str  # first suggestion after the filters; "" when none survives
    forwards: int
    tokens_per_forward: float
    ms: float
    result: FillResult  # the engine's, before the pipeline
    drafts: list[Draft] = field(default_factory=list)  # retrieved drafts, shaped, that seeded rows
    retrieved: str = ""  # the best draft alone as the filters show it (retrieval without a model)
    retrieval_ms: float = 0.0  # finding the drafts (part of ``ms``)
    declined: str | None = None  # why the model was not asked (``model_declines``), if it was not
    context_block: str = ""  # the snippet block offered to the model (FillOptions.context_block)


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
        self,
        engine: InfillBackend,
        settings: Settings | None = None,
        experiment: dict | None = None,
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
        sources: Sequence[tuple[str, str]] = (),
        snippets: Sequence[Snippet] = (),
        index_drafts: Sequence[Draft] = (),
    ) -> Shown:
        """The first suggestion a request at ``offset`` would show ("" for none): an automatic one
        (ghost text while typing, the default) or, with ``invoked``, one the user asked for.

        Drafts are retrieved from the document (before the cursor, then after it) and then
        ``sources`` ((path, text) pairs: open documents, workspace files), and used as the
        ``contextDrafts`` setting says (``suggestion_fill``); their retrieval time counts in ``ms``.
        ``index_drafts`` are the workspace index's own (``Retrieval.drafts``), taken first.
        ``snippets`` (the workspace index's, by priority) make the block read before the prefix."""
        ctx = self.context(text, offset, uri, language_id)
        started = time.perf_counter()
        drafts, retrieved = self.retrieve(text, offset, ctx, sources, index_drafts)
        block = snippet_block(snippets, language_id, self.settings.snippet_tokens)
        retrieval_ms = (time.perf_counter() - started) * 1000
        result = suggestion_fill(self.engine, ctx, self.settings, invoked, drafts, language_id,
                                 experiment=self.experiment, context_block=block)  # fmt: skip
        ms = (time.perf_counter() - started) * 1000
        texts = shown_texts(result.candidates, ctx)
        first = texts[0] if texts else ""
        declined = model_declines(self.engine, ctx.language, language_id)
        return Shown(first, result.stats.decoder_forwards, result.stats.tokens_per_forward, ms, result, drafts,
                     retrieved, retrieval_ms, declined, block)  # fmt: skip

    def context(
        self, text: str, offset: int, uri: str = "file:///untitled.py", language_id: str = "python"
    ) -> FillContext:
        """The FillContext of a request at ``offset``, with this document's syntax tree."""
        self._version += 1
        tree = self.trees.tree(uri, language_id, self._version, text)
        return context_for(text, offset, language_id, uri, self.settings, tree)

    def retrieve(
        self,
        text: str,
        offset: int,
        ctx: FillContext,
        sources: Sequence[tuple[str, str]] = (),
        index_drafts: Sequence[Draft] = (),
    ) -> tuple[list[Draft], str]:
        """The shaped drafts for a cursor (``drafts_at``), and the best one as the filters show it
        (the first the filters leave text of, as with "show"): retrieval without a model."""
        drafts = fitting_drafts(text, offset, ctx, sources, index_drafts)
        shown = shown_texts(drafts_result(drafts).candidates, ctx)
        return drafts, shown[0] if shown else ""

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


def suggestion_fill(
    engine: InfillBackend,
    ctx: FillContext,
    settings: Settings,
    invoked: bool,
    drafts: Sequence[Draft],
    language_id: str = "",
    should_stop: ShouldStop = lambda: False,
    on_draft: DraftCallback | None = None,
    experiment: dict | None = None,
    context_block: str = "",
) -> FillResult:
    """The one call behind a suggestion, for the LSP service and ``ServedModel`` alike: the
    context's drafts (shaped: ``shaped_drafts``) as ``draft_mode`` says, then the model, which
    reads ``context_block`` (snippets from other files: server/context/prompt.py) before the prefix.

    * "show": ghost text is the best draft as it stands when there is one, with no model run; an
      explicit request gets it first, then the model's middles;
    * "seed": the drafts seed canvas rows beside the noise-seeded ones (engine/sampler.py);
    * "off": the model alone.

    Where the model declines the language (``model_declines``), only drafts are shown, or nothing.
    """
    mode = draft_mode(engine, settings)
    usable = list(drafts) if mode != "off" else []
    declined = model_declines(engine, ctx.language, language_id)
    if declined is not None and declined not in _SAID:
        _SAID.add(declined)
        log.info("no model text in %s: %s (workspace drafts only)", language_id or ctx.language, declined)
    if declined is not None:
        return drafts_result(usable)
    # "show": a draft on a long match is the ghost text; one on a shorter match only where the
    # filters leave the model's text empty (measured: docs/drafts.md, SHOW_MIN_MATCH).
    sure = [d for d in usable if is_sure(d)] if mode == "show" else []
    weak = [d for d in usable if not is_sure(d)] if mode == "show" else []
    if sure and not invoked:
        return drafts_result(sure + weak)
    seeds = [d.text for d in usable] if mode == "seed" else []
    result = fill_for_editor(engine, ctx, settings, invoked, should_stop, experiment, seeds, on_draft,
                             context_block)  # fmt: skip
    if weak and not invoked and shown_texts(result.candidates, ctx):
        weak = []  # the model's own text is shown
    if sure or weak:
        result.candidates = (
            drafts_result(sure).candidates + result.candidates + drafts_result(weak).candidates
        )
        result.text = result.candidates[0].text
    return result


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
    drafts: Sequence[str] = (),
    on_draft: DraftCallback | None = None,
    context_block: str = "",
) -> FillResult:
    """The engine call behind a suggestion, with the request's shape and the editor's settings.

    ``difill eval`` calls this and ``shown_texts`` too, so it scores exactly what the editor shows;
    ``experiment`` overrides FillOptions fields there, to measure an option before it ships.
    ``drafts`` (LF texts continuing the cursor, shaped: ``shaped_drafts``) seed extra canvas rows.
    ``on_draft`` gets the hole's best text after each step (the server compares it with what the
    user types meanwhile).
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
        drafts=tuple(drafts),
        context_block=context_block,
    )
    if experiment:
        options = replace(options, **experiment)
    return engine.fill(ctx.prefix, ctx.suffix, options, should_stop=should_stop, on_draft=on_draft)
