"""The one suggestion path: a request's context -> drafts and snippets -> engine -> shown texts.

``suggest`` goes from a ``SuggestionRequest`` (a cursor in a document, its ``FillContext``) to the
texts an editor shows.  The LSP service (server/features/suggestions/service.py) runs it on the
model's worker thread; ``ServedModel`` runs it for ``difill fill``, ``difill eval`` and
``difill bench``, so they print and score exactly what the editor shows.

    suggest(engine, settings, request, workspace)
      workspace.retrieve(...)      draft sources, index drafts, snippets (server/context)
      snippet_block(...)           the snippets as the prompt reads them (server/context/prompt.py)
      plan_for(...)                the request's decisions, once: the model declines? draft mode?
                                   (server/model_request.py, shared with the edits and next edits)
      ranked_by_model(...)         the model orders names the workspace cannot tell apart
      drafts_for(...)              the drafts that fit the cursor, none looked for when they are off
      model_text(...)              drafts shown / seeded / off, then engine.fill (engine/api.py)
      shown_texts(...)             the text pipeline (text/pipeline.py)

No torch and no LSP types are imported here: a remote ``difill fill`` starts fast.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field, replace
from typing import Protocol

from difill.engine.api import (
    HOLE_TOKENS,
    BackendError,
    Candidate,
    FillResult,
    HolesResult,
    InfillBackend,
    PreviewCallback,
    ShouldStop,
)
from difill.server import show_gate
from difill.server.config import Settings
from difill.server.context.drafts import Draft
from difill.server.context.found import Retrieval
from difill.server.context.prompt import snippet_block
from difill.server.draft_policy import drafts_result, fitting_drafts, is_sure
from difill.server.model_request import Plan, context_for, edit_options, plan_for, suggestion_options
from difill.server.trees import SyntaxTrees
from difill.text.context import FillContext, to_lf
from difill.text.languages import language_of
from difill.text.pipeline import shown_candidates, shown_middles, shown_texts
from difill.text.rules import with_middles

log = logging.getLogger("difill.server")
WORD_AT_END = re.compile(r"(?<!\w)\w++$")  # starts where the word does: linear on a long line
WORD_AT_START = re.compile(r"\w*")
_SAID: set[str] = set()  # why a language got no model text, each logged once


@dataclass(frozen=True)
class SuggestionRequest:
    """A suggestion asked at a cursor: the document as the request saw it, and what was asked."""

    uri: str
    text: str  # the whole document, in its own line endings
    offset: int  # the cursor, a character offset into ``text``
    language_id: str  # as the editor names it ("python", "typescriptreact", ...)
    ctx: FillContext  # the windows and shape at the cursor (``context_for``)
    invoked: bool = False  # the user asked (a completion list) rather than typed (ghost text)


class Workspace(Protocol):
    """Where a suggestion's context comes from beyond the document (server/context/feature.py)."""

    def retrieve(self, uri: str, text: str, offset: int, language_id: str) -> Retrieval | None: ...

    def generation(self, uri: str) -> int:
        """A number that changes whenever what ``retrieve`` reads besides ``uri`` may have."""
        ...


@dataclass(frozen=True)
class Retrieved:
    """A workspace whose context for the one cursor asked about is already known (the evals)."""

    retrieval: Retrieval | None

    def retrieve(self, uri: str, text: str, offset: int, language_id: str) -> Retrieval | None:
        return self.retrieval

    def generation(self, uri: str) -> int:
        return 0


@dataclass
class Shown:
    """One answer as the editor shows it, and what it cost."""

    texts: list[str]  # after the pipeline: distinct, non-empty, best first
    result: FillResult  # the engine's (or the drafts'), before the pipeline
    ms: float  # retrieval, model and pipeline
    drafts: list[Draft] = field(default_factory=list)  # the drafts that fit the cursor
    retrieval_ms: float = 0.0  # finding the drafts and the snippets (part of ``ms``)
    declined: str | None = None  # why the model was not asked (``model_declines``), if it was not
    context_block: str = ""  # the snippet block offered to the model (FillOptions.context_block)
    cacheable: bool = True  # False: made without a list still coming (Retrieval.waiting)
    sources: list[str] = field(
        default_factory=list
    )  # each text's Candidate.source ("model", "draft:<where>")

    @property
    def text(self) -> str:
        """The ghost text: the first suggestion, "" when none survives the filters."""
        return self.texts[0] if self.texts else ""

    @property
    def forwards(self) -> int:
        return self.result.stats.decoder_forwards

    @property
    def tokens_per_forward(self) -> float:
        return self.result.stats.tokens_per_forward


def suggest(
    engine: InfillBackend,
    settings: Settings,
    request: SuggestionRequest,
    workspace: Workspace | None = None,
    should_stop: ShouldStop = lambda: False,
    on_preview: PreviewCallback | None = None,
) -> Shown:
    """What the editor shows for ``request``: the one path from a cursor to suggestions.

    Runs on the model's worker thread in the server (the workspace's sources may be megabytes:
    the draft finder bounds its work).  ``should_stop`` ends the denoising early (the request was
    cancelled or superseded); ``on_preview`` gets the hole's best text after each step (the service
    compares it with what the user types meanwhile)."""
    started = time.perf_counter()
    retrieval = (
        workspace.retrieve(request.uri, request.text, request.offset, request.language_id)
        if workspace
        else None
    )
    block = (
        snippet_block(retrieval.snippets, request.language_id, settings.snippet_tokens) if retrieval else ""
    )
    plan = plan_for(engine, settings, request.ctx.language, request.language_id, block)
    retrieval = ranked_by_model(engine, settings, request, retrieval, plan)
    drafts = drafts_for(request, plan.draft_mode, retrieval)
    retrieval_ms = (time.perf_counter() - started) * 1000
    result, fallback = model_text(engine, settings, request, drafts, plan, should_stop, on_preview)
    shown = shown_candidates(result.candidates, request.ctx, request.invoked)
    if not shown and fallback:  # the model's text did not survive the filters: the weak drafts do
        result.candidates = result.candidates + drafts_result(fallback).candidates
        result.text = result.candidates[0].text
        shown = shown_candidates(result.candidates, request.ctx, request.invoked)
    if retrieval is not None and retrieval.import_names is not None:
        listed = listed_names([text for text, _ in shown], request.ctx.line_before, retrieval.import_names)
        shown = [(text, c) for text, c in shown if text in listed]
    texts = (
        [text for text, _ in shown]
        if request.invoked or not plan.gated
        else gated(settings, request, shown, drafts)
    )
    ms = (time.perf_counter() - started) * 1000
    waiting = retrieval is not None and retrieval.waiting
    sources = [next(c.source for t, c in shown if t.startswith(text)) for text in texts]
    return Shown(texts, result, ms, drafts, retrieval_ms, plan.declined, block, not waiting, sources)


def gated(
    settings: Settings, request: SuggestionRequest, shown: list[tuple[str, Candidate]], drafts: list[Draft]
) -> list[str]:  # fmt: skip
    """Ghost text as the show gate lets it through (server/show_gate.py): likely right, or nothing."""
    if not shown:
        return []
    model = show_gate.calibration()
    threshold = model.threshold if settings.min_show_probability is None else settings.min_show_probability
    bar = show_gate.Bar(threshold, settings.comment_suggestions)
    said = [(text, show_gate.evidence(text, c, drafts, request.ctx)) for text, c in shown]
    return show_gate.gate(said, bar, model, show_gate.trace_key(request.text, request.offset))


def listed_names(texts: list[str], line_before: str, names: frozenset[str]) -> list[str]:
    """The texts that, on an import line, complete the word at the cursor to one of ``names``
    (Retrieval.import_names): never a module that neither the workspace nor the environment has.
    A text that starts no word (`` import x`` after a whole module name) is kept."""
    typed = WORD_AT_END.search(line_before)
    partial = typed.group() if typed else ""
    # After ``from `` or ``import x, ``: a word must come, and be listed (`` import y`` is no module).
    expected = not partial and line_before[-1:] in (" ", "\t", ",")
    out = []
    for text in texts:
        word = partial + WORD_AT_START.match(text).group()
        if (word == partial and not expected) or word in names:
            out.append(text)
    return out


def ranked_by_model(
    engine: InfillBackend,
    settings: Settings,
    request: SuggestionRequest,
    retrieval: Retrieval | None,
    plan: Plan,
) -> Retrieval | None:
    """``retrieval`` with its undecided symbol candidates (``Draft.undecided``: the workspace's
    evidence cannot tell them apart) in the order of the model's score of each at the cursor
    (engine/name_scores.py: one pass; on vLLM, one constrained read: engine/backends/vllm_names.py).
    Unchanged when the backend cannot score names (a remote other than vLLM 0.32 or later), when
    the model declines the language, or when drafts are off; when scoring fails (a ValueError:
    the remote's answer could not be read, or came too late) the reason is logged.  Measured on the shipped
    model (docs/drafts.md "The model's score"): used-at-all counts order these names worse."""
    if retrieval is None or not plan.scores_names:
        return retrieval
    undecided = [d for d in retrieval.drafts if d.kind == "symbol" and d.undecided]
    if len(undecided) < 2:
        return retrieval
    ctx = request.ctx
    options = suggestion_options(ctx, settings, request.invoked, [], plan.context_block)
    try:
        scores = engine.score_names(ctx.prefix, ctx.suffix, [d.text for d in undecided], options)
    except (RuntimeError, ValueError) as err:  # a ranking aid: the workspace's order stands
        log.warning("scoring symbol candidates failed: %s", err)
        return retrieval
    by_score = [d for _, d in sorted(zip(scores, undecided, strict=True), key=lambda pair: -pair[0])]
    rest = [d for d in retrieval.drafts if not (d.kind == "symbol" and d.undecided)]
    return replace(retrieval, drafts=by_score + rest)


def drafts_for(request: SuggestionRequest, mode: str, retrieval: Retrieval | None) -> list[Draft]:
    """The drafts that fit the request's cursor (``fitting_drafts``); none, and none looked for,
    when ``mode`` (the plan's draft mode, decided once) is "off"."""
    if mode == "off":
        return []
    sources, index_drafts = (retrieval.sources, retrieval.drafts) if retrieval else ((), ())
    return fitting_drafts(request.text, request.offset, request.ctx, sources, index_drafts)


def drafts_without_model(
    settings: Settings, request: SuggestionRequest, workspace: Workspace | None
) -> list[str]:
    """What "show" would make the ghost text with no model run, as shown: for a client while the
    model loads, or after it failed to.  None unless ``contextDrafts`` is "show" or "auto" (which
    checkpoint loads, and so what "auto" means for it, is not known yet)."""
    if settings.context_drafts not in ("show", "auto"):
        return []
    retrieval = (
        workspace.retrieve(request.uri, request.text, request.offset, request.language_id)
        if workspace
        else None
    )
    sure = [d for d in drafts_for(request, settings.context_drafts, retrieval) if is_sure(d)]
    return shown_texts(drafts_result(sure).candidates, request.ctx, request.invoked) if sure else []


def model_text(
    engine: InfillBackend,
    settings: Settings,
    request: SuggestionRequest,
    drafts: list[Draft],
    plan: Plan,
    should_stop: ShouldStop = lambda: False,
    on_preview: PreviewCallback | None = None,
) -> tuple[FillResult, list[Draft]]:
    """The candidates of a suggestion, before the pipeline, and the drafts to fall back on if the
    model's own text does not survive it: the drafts as ``plan.draft_mode`` says, then the model,
    which reads ``plan.context_block`` (snippets from other files) before the prefix.

    * "show": ghost text is the best draft as it stands when there is one, with no model run; an
      explicit request gets it first, then the model's middles; a draft on a shorter match only
      where the filters leave the model's text empty (the fallback; docs/drafts.md, SHOW_MIN_MATCH);
    * "seed": the drafts seed canvas rows beside the noise-seeded ones (engine/sampler.py);
    * "off": the model alone.

    Where the model declines the language (``plan.declined``), only drafts are shown, or nothing.
    """
    ctx, invoked = request.ctx, request.invoked
    usable = drafts  # none when the plan's draft mode is "off" (drafts_for)
    if plan.declined is not None:
        if plan.declined not in _SAID:
            _SAID.add(plan.declined)
            log.info("no model text in %s: %s (workspace drafts only)", request.language_id, plan.declined)
        return drafts_result(usable), []
    sure = [d for d in usable if is_sure(d)] if plan.draft_mode == "show" else []
    weak = [d for d in usable if not is_sure(d)] if plan.draft_mode == "show" else []
    if sure and not invoked:
        return drafts_result(sure + weak), []
    seeds = [d.text for d in usable] if plan.draft_mode == "seed" else []
    options = suggestion_options(ctx, settings, invoked, seeds, plan.context_block)
    result = engine.fill(ctx.prefix, ctx.suffix, options, should_stop=should_stop, on_preview=on_preview)
    shown_last = weak if invoked else []  # asked for: every candidate, the weak drafts last
    if sure or shown_last:
        result.candidates = (
            drafts_result(sure).candidates + result.candidates + drafts_result(shown_last).candidates
        )
        result.text = result.candidates[0].text
    return result, ([] if invoked else weak)


@dataclass
class ShownHoles:
    """Marked holes filled as the editor's fill-holes edit shows them."""

    text: str  # the input with every marker replaced by its shown middle
    middles: list[str]  # each hole's middle after the pipeline
    ms: float
    result: HolesResult  # the engine's, before the pipeline


class ServedModel:
    """The suggestion path for one document at a time, without the LSP transport.

    ``difill fill``, ``difill eval`` and ``difill bench`` use it, so they print and score what the
    editor shows: the same ``suggest`` the server runs, with this object's syntax trees.
    """

    def __init__(self, engine: InfillBackend, settings: Settings | None = None) -> None:
        self.engine = engine
        self.settings = settings or Settings()
        self.trees = SyntaxTrees()
        self._version = 0

    def suggest(
        self,
        text: str,
        offset: int,
        uri: str = "file:///untitled.py",
        language_id: str = "python",
        invoked: bool = False,
        retrieval: Retrieval | None = None,
    ) -> Shown:
        """What a request at ``offset`` shows: ghost text while typing (the default) or, with
        ``invoked``, what the user asked for.  ``retrieval`` is the workspace's context for this
        cursor (server/context: draft sources, index drafts, snippets); without it, the document's
        own drafts only."""
        request = self.request(text, offset, uri, language_id, invoked)
        return suggest(self.engine, self.settings, request, Retrieved(retrieval))

    def request(
        self, text: str, offset: int, uri: str = "file:///untitled.py", language_id: str = "python",
        invoked: bool = False,
    ) -> SuggestionRequest:  # fmt: skip
        """The request at ``offset``, with this document's syntax tree."""
        self._version += 1
        language = language_of(language_id, uri)  # decided once: the tree and the context read it
        tree = self.trees.tree(uri, language, self._version, text)
        ctx = context_for(text, offset, language, self.settings, tree)
        return SuggestionRequest(uri, text, offset, language_id, ctx, invoked)

    def retrieved(self, text: str, offset: int, uri: str, retrieval: Retrieval | None = None) -> str:
        """The best draft alone as the filters show it: retrieval without a model (the eval's row),
        whatever ``contextDrafts`` says (the eval's "model" row turns drafts off)."""
        request = self.request(text, offset, uri)
        drafts = drafts_for(request, "show", retrieval)
        shown = shown_texts(drafts_result(drafts).candidates, request.ctx, request.invoked)
        return shown[0] if shown else ""

    def fill_holes(
        self, text: str, marker: str, language: str | None, max_hole_tokens: int | None = None
    ) -> ShownHoles:
        """Every ``marker`` in ``text`` filled in one canvas, each middle fitted where it sits.
        Raises BackendError in a language the model declines (``model_declines``)."""
        declined = plan_for(self.engine, self.settings, language, language or "").declined
        if declined is not None:
            raise BackendError(declined)
        started = time.perf_counter()
        options = edit_options(self.settings, language, max_hole_tokens or HOLE_TOKENS)
        result = self.engine.fill_holes(to_lf(text), marker, options)
        middles = shown_middles(text, marker, result.middles, language, self.settings.context_tokens,
                                options.max_hole_tokens)  # fmt: skip
        ms = (time.perf_counter() - started) * 1000
        return ShownHoles(with_middles(text, marker, middles), middles, ms, result)
