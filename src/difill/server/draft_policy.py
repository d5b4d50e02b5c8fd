"""How drafts reach a suggestion: which are found, how they are cut, which are shown with no model.

Drafts are text retrieved from the document and the workspace (server/context/drafts.py,
server/context/retrieval.py) that continues the cursor.  This module is the one place that
decides what a suggestion does with them: the order they are taken in (``drafts_at``), their
cut to the request's shape and the syntax check (``fitting_drafts``), which of them "show" makes
the ghost text with no model run (``is_sure``), and the mode a backend gets (``draft_mode``).
The suggestion path (server/suggestion_path.py) applies it.  No torch and no LSP types.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from difill.engine.api import About, Candidate, FillResult, FillStats
from difill.server.config import Settings
from difill.server.context.drafts import Draft, find_drafts
from difill.server.context.symbols import MAX_SYMBOL_DRAFTS
from difill.text.context import FillContext, to_lf
from difill.text.filters import PIPELINE, apply_filters
from difill.text.pipeline import errors_around
from difill.text.shape import ShapeKind

DRAFTS_PER_REQUEST = 3  # drafts that seed canvas rows when drafts are on (find_drafts' default)
# "show": a draft is the ghost text when it matched this many tokens before the cursor
# (Draft.matched); a draft on a shorter match only where the model's text is empty.  Chosen on
# tuning packages the model never saw, not on the eval (docs/drafts.md "When a draft is shown"):
# 1 (every draft) loses a quarter of the keystrokes typing at the end of a file saves.
SHOW_MIN_MATCH = 4
# A lookup carries a symbol's arguments when it matched the token before the name too (``x.``,
# ``raise Re``), not only the typed word.
MIN_LOOKUP_MATCH = 2
AFTER_SYMBOLS = "after-symbols"  # the kind of a lookup that names no symbol candidate (drafts_at)


def shaped_drafts(drafts: Sequence[Draft], ctx: FillContext) -> list[Draft]:
    """The drafts cut to the request's shape: at most its lines, without the last line's ending.

    A draft runs on past what the hole should hold; cut where the shape ends, it is a whole
    middle, and the filler written after it in its row says so.  Distinct, non-blank ones only.
    """
    out: list[Draft] = []
    seen: set[str] = set()
    for draft in drafts:
        text = "\n".join(draft.text.split("\n")[: ctx.shape.max_lines]).rstrip()
        if text.strip() and text not in seen:
            seen.add(text)
            out.append(Draft(text, draft.source, draft.matched, draft.kind))
    return out


def fitting_drafts(
    text: str,
    offset: int,
    ctx: FillContext,
    sources: Sequence[tuple[str, str]] = (),
    index_drafts: Sequence[Draft] = (),
) -> list[Draft]:
    """The drafts a suggestion may use at a cursor: found (``drafts_at``), cut to the request's
    shape (``shaped_drafts``), and only those that add no syntax error to the code around the
    cursor, as it parses with nothing inserted (languages with a grammar): a draft is checked
    as a model's candidate is ranked (pipeline.errors_around), on the text the filters show."""
    in_prose = ctx.shape.kind is ShapeKind.SHORT  # in a comment or string, by the syntax tree
    drafts = shaped_drafts(drafts_at(text, offset, sources, index_drafts, ctx.language, in_prose), ctx)
    if ctx.language is None or not drafts or in_prose:
        # In a comment or a string a draft is prose, kept inside it (filters.stay_inside_string):
        # it adds no syntax error, yet in a document that parses badly a count around it can move.
        return drafts
    before = errors_around(ctx, "")
    if before is None:
        return drafts
    fitted = []
    for draft in drafts:
        if draft.kind == "symbol" and draft.text.isidentifier():
            # A bare name from the module or the imports (symbols.py) cannot be wrong syntax; the
            # line it starts is (``level=defaults.█`` before ``format=...``: the comma is to come).
            fitted.append(draft)
            continue
        text = _without_new_errors(draft.text, ctx, before)
        if text:
            fitted.append(replace(draft, text=text))
    return fitted


def _without_new_errors(text: str, ctx: FillContext, before: int) -> str:
    """``text``, or its longest run of whole first lines, that adds no syntax error to the code
    around the cursor: a draft cut to the shape's line bound inside a block ends at its last
    complete statement instead of being dropped.  "" when not even its first line fits."""
    lines = text.split("\n")
    for keep in range(len(lines), 0, -1):
        candidate = "\n".join(lines[:keep]).rstrip()
        shown = apply_filters(candidate, ctx, PIPELINE)
        if candidate.strip() and (errors_around(ctx, shown) or 0) <= before:
            return candidate
    return ""


def drafts_at(
    text: str,
    offset: int,
    sources: Sequence[tuple[str, str]] = (),
    index_drafts: Sequence[Draft] = (),
    language: str | None = None,
    cursor_in_prose: bool | None = None,
) -> list[Draft]:
    """The drafts for a cursor, best first: the workspace index's own (``Retrieval.drafts``: an
    import line completed with the names the document lacks, server/context/imports.py), then
    what followed the same tokens in the document before the cursor, after it, then ``sources``
    (``find_drafts``: longest match first).  On the tuning packages an import draft first named
    the symbol more often than a long match first (docs/drafts.md "Import drafts")."""
    after = ("current", to_lf(text[offset:]))
    found = find_drafts(
        to_lf(text[:offset]),
        [after, *sources],
        max_drafts=DRAFTS_PER_REQUEST,
        language=language,
        cursor_in_prose=cursor_in_prose,
    )
    names = [d for d in index_drafts if d.kind == "symbol"][:MAX_SYMBOL_DRAFTS]  # in the model's order
    if not names:
        return [*index_drafts, *found]

    # The best symbol with what followed it elsewhere (``errors.`` -> ``RetryError(attempt)``)
    # beats the bare name: the lookup carries its arguments.  Lookups that start with a lower
    # candidate are left out: the text pipeline ranks drafts by syntax errors, where a lookup's
    # ``LOGURU_FILTER,`` (comma and all) went before the right bare name in a block of
    # ``level=defaults.LOGURU_LEVEL,`` lines.  Other lookups name no candidate: after them.
    def starts_with(draft: Draft, name: Draft) -> bool:
        # A name's draft ends where the name does (``Retry`` is not ``RetryError``'s), a keyword
        # argument's with its ``=`` (``timeout=`` then the value).
        tail = draft.text[len(name.text) : len(name.text) + 1]
        whole = (tail != "=") if name.text.endswith("=") else not tail.isidentifier()
        return draft.text.startswith(name.text) and whole

    # jedi's names (the environment's, server/context/jedi_names.py) come in an order that says
    # little: a lookup that starts with any of them carries the evidence, and goes first.
    leading = [d for d in index_drafts if d.kind == "symbol"] if names[0].source == "jedi" else names[:1]
    # A lookup that matched the typed word alone (``pri`` on a new line, continued as the line
    # below it goes on) is no evidence for what follows the name: it stays a plain draft.
    with_names = [
        Draft(d.text, d.source, d.matched, kind="symbol")
        for d in found
        if d.matched >= MIN_LOOKUP_MATCH and any(starts_with(d, name) for name in leading)
    ]
    others = [d for d in index_drafts if d.kind != "symbol"]
    rest = [replace(d, kind=AFTER_SYMBOLS) for d in found if not any(starts_with(d, n) for n in names)]
    return [*others, *with_names, *names, *rest]


def is_sure(draft: Draft) -> bool:
    """A draft that "show" makes the ghost text with no model run: an import line from the
    workspace index, a name the module or the imports define (server/context/symbols.py), or a
    continuation after a long match (docs/drafts.md, SHOW_MIN_MATCH)."""
    return draft.kind in ("import", "new-import", "symbol") or draft.matched >= SHOW_MIN_MATCH


def draft_mode(said: About, settings: Settings) -> str:
    """How drafts reach a suggestion with the backend that ``said`` so: "show", "seed" or "off".

    The ``contextDrafts`` setting decides; with "auto" the checkpoint does (config
    ``difill.drafts``).  A checkpoint difill trained that names no mode gets "show": measured on
    the shipped weights (docs/drafts.md), retrieval alone was right far more often than the model,
    and canvases seeded with the drafts less often than either (the model rewrites a right draft
    more often than it keeps it).  Any other backend (a real checkpoint, a remote) gets "seed".
    """
    if settings.context_drafts != "auto":
        return settings.context_drafts
    return said.drafts  # the checkpoint's own (engine/model.py checkpoint_drafts)


def drafts_result(drafts: Sequence[Draft]) -> FillResult:
    """Drafts as a fill's answer, when no model writes it: each a whole middle, as it was found."""
    # A lookup that names none of the symbol candidates stays after them: the pipeline ranks
    # complete middles first (pipeline.shown_texts), then by syntax errors, by which a lookup's
    # ``LOGURU_SERIALIZE,`` (its comma and all) went before the right bare name.
    candidates = [Candidate(d.text, 0, 0.0, d.kind != AFTER_SYMBOLS, f"draft:{d.source}") for d in drafts]
    stats = FillStats(candidates=len(candidates))
    return FillResult(candidates[0].text if candidates else "", candidates, stats)
