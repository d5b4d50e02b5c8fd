"""One model request for every feature: what ghost text, selection edits and next edits share.

Each feature asks the model through this module (issue 65):

* ``plan_for``: a request's decisions, made once with the engine at hand: does the model decline
  the document's language (``model_declines``: the only place that asks), how drafts reach the
  answer, whether the model orders names, which snippets it reads first;
* ``model_work``: what the model thread runs for an edit or a next edit, ``work(engine)``, with
  that one decline check in front;
* ``context_for``, ``suggestion_options`` and ``edit_options``: the engine's inputs, the
  language decided once by the caller (``Document.language``).

Feature-neutral: no feature package is imported here, and no torch or LSP type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tree_sitter import Tree

from difill.engine.api import HOLE_TOKENS, About, FillOptions, InfillBackend, NameScorer, about
from difill.server.config import Settings
from difill.server.context.policy import to_model
from difill.server.draft_policy import draft_mode
from difill.text.context import FillContext, build_context

T = TypeVar("T")


@dataclass(frozen=True)
class Plan:
    """A model request's decisions, made once (``plan_for``) and read by every later step (issue 48:
    the model's refusal and the draft mode were each decided two or three times a request)."""

    declined: str | None  # why the model is not asked for this language (``model_declines``), or None
    draft_mode: str  # how drafts reach the answer: "show", "seed" or "off" (draft_policy.draft_mode)
    scores_names: bool  # the model orders the names the workspace cannot tell apart (ranked_by_model)
    context_block: str = ""  # the snippets the model reads before the prefix (context/prompt.py)
    # The show gate judges what is shown (About.show_gate: its calibration was fitted on this
    # model's answers); another model's answers are shown as its minTokenProb cuts them.
    gated: bool = False


def plan_for(
    engine: InfillBackend, settings: Settings, language: str | None, language_id: str, context_block: str = ""
) -> Plan:  # fmt: skip
    """The decisions of a request in a document of ``language`` (as text/languages.py names it;
    ``language_id`` as the editor does)."""
    said = about(engine)  # the backend is asked what it is once a request; each decision reads that
    declined = model_declines(said, language, language_id)
    mode = draft_mode(said, settings)
    scores = isinstance(engine, NameScorer) and said.scores_names and mode != "off" and declined is None
    return Plan(declined, mode, scores, context_block, said.show_gate)


def model_work(
    settings: Settings,
    language: str | None,
    language_id: str,
    run: Callable[[InfillBackend], T],
    declined: Callable[[str], T],
) -> Callable[[InfillBackend], T]:
    """What the model thread runs for an edit or a next edit: ``run(engine)``, or ``declined(why)``
    where the model does not write ``language`` (the request's plan, ``plan_for``)."""

    def work(engine: InfillBackend) -> T:
        plan = plan_for(engine, settings, language, language_id)
        return run(engine) if plan.declined is None else declined(plan.declined)

    return work


def model_declines(said: About, language: str | None, language_id: str) -> str | None:
    """Why the model of the backend that ``said`` so (``about(engine)``) must show nothing in a
    document of ``language``; None when it serves it.

    A checkpoint names the languages it was trained on (config ``difill.languages``; the shipped
    model: Python).  In any other language it writes noise, so suggestions and edits show none of
    its text there; one that names no language serves all.  Every model call for an editor asks
    this first, through ``plan_for``.
    """
    languages = said.languages
    if not languages or language in languages:
        return None
    return (
        f"the model was trained on {', '.join(languages)} only, so it writes nothing in "
        f"{language or language_id or 'this language'}; set difill.modelPath or difill.remote to a "
        "model trained on it"
    )


def context_for(
    text: str, offset: int, language: str | None, settings: Settings, tree: Tree | None
) -> FillContext:
    """The FillContext of a cursor in a document of ``language``, with the editor's budgets."""
    return build_context(text, offset, language, settings.context_tokens, settings.max_tokens, tree)


def suggestion_options(
    ctx: FillContext, settings: Settings, invoked: bool, seeds: list[str], context_block: str
) -> FillOptions:
    """The engine options of a suggestion: the request's shape and the editor's settings.
    ``seeds`` (LF texts continuing the cursor, shaped: ``fitting_drafts``) seed extra canvas rows."""
    return to_model(
        FillOptions(
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
            drafts=tuple(seeds),  # from other files and tabs too: to_model redacts them with the block
            context_block=context_block,
        )
    )


def edit_options(settings: Settings, language: str | None, max_hole_tokens: int = HOLE_TOKENS) -> FillOptions:
    """The engine options of an edit (fill holes, rewrite, complete block) with the editor's settings."""
    return FillOptions(
        max_hole_tokens=max_hole_tokens,
        language=language,
        max_steps=settings.steps,
        prefix_tokens=settings.context_tokens,
    )
