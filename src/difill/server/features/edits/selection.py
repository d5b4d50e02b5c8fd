"""Edits of a selection: what the model is asked, and how its answer becomes the new selection.

* rewrite: ``engine.rewrite`` re-denoises the selection (a share ``strength`` of it), optionally
  after an instruction written into the prefix as a comment;
* fill holes: every hole marker in the selection is filled in one canvas (``engine.fill_holes``);
  markers outside the selection are context, not holes, so they are left out of what the model sees;
* complete block: an empty or stub body, selected alone or with its header (``pass``, ``...``, ``todo!()``, ``throw new Error(...)``; each
  language's, text/languages.py) is replaced by a fill in the block's shape.

The engine runs on the model thread; parsing and the text pipeline (text) run on the
event loop.  Text goes to the engine in LF and comes back through the pipeline, which gives it the
document's line endings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from difill.engine.api import (
    HOLE_TOKENS,
    BackendError,
    FillOptions,
    FillResult,
    HolesResult,
    InfillBackend,
    PreviewCallback,
    RewriteRequest,
    ShouldStop,
)
from difill.engine.secrets import scrub
from difill.server.config import Settings
from difill.server.context.policy import redact
from difill.server.documents import Document
from difill.server.model_request import context_for, edit_options, model_work
from difill.server.trees import SyntaxTrees
from difill.text.characters import line_start, without_unsafe
from difill.text.context import FillContext, prefix_window, suffix_window, to_lf
from difill.text.edit_gate import Edit, excerpt, held_back
from difill.text.languages import is_stub, spec_of
from difill.text.pipeline import shown_middles, shown_rewrite, shown_texts
from difill.text.rules import with_middles
from difill.text.shape import block_header_before
from difill.text.spans import keep_edges

REWRITE, FILL_HOLES, COMPLETE_BLOCK = "rewrite", "fillHoles", "completeBlock"
TITLES = {
    REWRITE: "Rewrite selection",
    FILL_HOLES: "Fill holes in selection",
    COMPLETE_BLOCK: "Complete block",
}


# Bounds on one edit's model work (issue 15): a 32 KB rewrite used to hold the only model worker
# for 72 s and 1.9 GB while ghost text everywhere waited. A selection this long is far past any
# canvas a model here denoises well (the shipped model's is 80 slots, the 26B's 256).
MAX_SELECTION_CHARS = 4_000
MAX_HOLES = 16


class EditError(Exception):
    """The edit cannot be made; the message says why (shown to the user)."""


class HeldBack(EditError):
    """The model wrote an edit that the edit gate (text/edit_gate.py) keeps off screen."""

    def __init__(self, message: str, reasons: list[str]) -> None:
        super().__init__(message)
        self.reasons = reasons


def check_size(request: EditRequest, document: Document, marker: str) -> None:
    """Refuse an edit too large for the model to do well and quickly, saying how to make it fit."""
    selection = document.text[request.start : request.end]
    if len(selection) > MAX_SELECTION_CHARS:
        raise EditError(f"the selection is {len(selection):,} characters; difill edits at most "
                        f"{MAX_SELECTION_CHARS:,} at a time: select less (a function or a block)")  # fmt: skip
    if request.kind == FILL_HOLES and (holes := selection.count(marker)) > MAX_HOLES:
        raise EditError(f"the selection has {holes} holes; difill fills at most {MAX_HOLES} at a time")


@dataclass(frozen=True)
class EditRequest:
    kind: str  # REWRITE, FILL_HOLES or COMPLETE_BLOCK
    uri: str
    version: int  # the document version the selection belongs to
    start: int  # offsets of the selection
    end: int
    instruction: str | None = None
    strength: float = 0.5


def available_edits(document: Document, start: int, end: int, marker: str, trees: SyntaxTrees) -> list[str]:
    """The edits that make sense for a non-empty selection."""
    if start >= end:
        return []
    kinds = [REWRITE]
    if marker in document.text[start:end]:
        kinds.append(FILL_HOLES)
    if stub_body(document, start, end, trees) is not None:
        kinds.append(COMPLETE_BLOCK)
    return kinds


def stub_body(document: Document, start: int, end: int, trees: SyntaxTrees) -> tuple[int, int] | None:
    """The stub body a "Complete block" replaces, as offsets; None when the selection has none.

    Either the selection itself is blank (``{`` then ``}``) or the language's stub body
    (``pass``, ``todo!()``, ``throw new Error(...)``...) and the line before it opens a block; or
    the selection ends with such a body: a whole function or block whose body is a stub (the
    header is kept, the body is completed; issue 52)."""
    text = document.text
    language = document.language
    tree, spec = trees.tree_for(document), spec_of(language)
    selection = text[start:end].strip()
    if not selection or is_stub(selection, language):
        return (
            (start, end)
            if block_header_before(text, line_start(text, start), tree, spec) is not None
            else None
        )
    last_end = start + len(text[start:end].rstrip())  # the selection's last non-blank line
    last_start = line_start(text, last_end)
    if last_start <= start or not is_stub(text[last_start:last_end], language):
        return None
    if block_header_before(text, last_start, tree, spec) is None:
        return None
    return last_start, last_end


# ---------------------------------------------------------------------------- the model's part


EngineWork = Callable[[InfillBackend], FillResult | HolesResult]


def engine_work(
    request: EditRequest,
    document: Document,
    settings: Settings,
    trees: SyntaxTrees,
    should_stop: ShouldStop,
    on_preview: PreviewCallback | None,
) -> EngineWork:
    """What the model thread runs for ``request``: ``work(engine) -> engine result``; in a
    language the model was not trained on it raises BackendError with why (``model_work``)."""
    options = edit_options(settings, document.language)
    work = _engine_work(request, document, settings, trees, should_stop, on_preview, options)
    return model_work(settings, document.language, document.language_id, work, _refused)


def _refused(declined: str) -> FillResult | HolesResult:
    raise BackendError(f"{declined}; the selection is unchanged")


def _engine_work(
    request: EditRequest,
    document: Document,
    settings: Settings,
    trees: SyntaxTrees,
    should_stop: ShouldStop,
    on_preview: PreviewCallback | None,
    options: FillOptions,
) -> EngineWork:
    text, start, end = document.text, request.start, request.end
    prefix = to_lf(prefix_window(text, start, settings.context_tokens))
    suffix = to_lf(suffix_window(text, end))

    if request.kind == REWRITE:
        rewrite = RewriteRequest(
            prefix, to_lf(text[start:end]), suffix, request.strength, request.instruction
        )
        return lambda engine: engine.rewrite(rewrite, options, should_stop, on_preview)
    if request.kind == FILL_HOLES:
        canvas = to_lf(holes_canvas(document, request, settings))
        return lambda engine: engine.fill_holes(canvas, settings.hole_marker, options, should_stop)
    if request.kind == COMPLETE_BLOCK:
        ctx = _without_selection(document, request, settings, trees)
        options.max_hole_tokens = ctx.shape.max_tokens
        return lambda engine: engine.fill(ctx.prefix, ctx.suffix, options, should_stop, on_preview)
    raise EditError(f"unknown edit {request.kind!r}")


def holes_canvas(document: Document, request: EditRequest, settings: Settings) -> str:
    """The text the model fills: the selection's markers are holes; markers outside it are
    context, not holes, so they are left out."""
    marker, text = settings.hole_marker, document.text
    before = prefix_window(text, request.start, settings.context_tokens).replace(marker, "")
    after = suffix_window(text, request.end).replace(marker, "")
    return before + text[request.start : request.end] + after  # the engine gets it in LF


# ---------------------------------------------------------------------------- the answer's part


def new_selection(
    request: EditRequest,
    document: Document,
    result: FillResult | HolesResult,
    settings: Settings,
    trees: SyntaxTrees,
) -> str:
    """The selection's new text from the engine's result; raises EditError when nothing usable."""
    selection = document.text[request.start : request.end]
    if isinstance(result, HolesResult):
        return fill_markers(document, request, result.middles, settings)
    if request.kind == REWRITE:
        # Unsafe characters (controls, bidi, zero-width, U+FFFD) are removed, not cut at: cut
        # there, the rewrite would delete the rest of the selection.
        answer = without_unsafe(result.text)
        # The rewrite's rules read only the text after the selection and the line endings: no parse.
        text = shown_rewrite(answer, _without_selection(document, request, settings, None))
        if not text.strip():
            raise EditError("the model returned an empty rewrite; the selection is unchanged")
        return keep_edges(selection, text)
    shown = shown_texts(result.candidates, _without_selection(document, request, settings, trees))
    if not shown:
        raise EditError("the model wrote no usable block body; the selection is unchanged")
    return keep_edges(selection, shown[0])


def check_shown(
    request: EditRequest, document: Document, new: str, settings: Settings, trees: SyntaxTrees
) -> None:
    """Raise HeldBack when the edit gate finds ``new`` not worth showing (``editGate`` on).

    The message is one line: what the model wrote (an excerpt, with key-shaped text redacted and
    the server's own secrets scrubbed), why it is held back, and how to get useful edits."""
    if not settings.edit_gate:
        return
    language = document.language
    marker = settings.hole_marker if request.kind == FILL_HOLES else None
    edit = Edit(document.text, request.start, request.end, new, language, bool(request.instruction), marker,
                trees.tree_for(document))  # fmt: skip
    reasons = held_back(edit)
    if not reasons:
        return
    # Redacted before it is cut: a key or a URL's password cut in half is no longer recognised.
    wrote = excerpt(_safe(document.text[request.start : request.end]), _safe(new))
    if settings.model_path or settings.remote or settings.gguf_path:
        how = "select less, or try another instruction"
    else:
        how = "set `modelPath` to a real checkpoint or `remote` to a server: the built-in model is too small for edits"
    message = (
        f'held back the edit: the model wrote "{wrote}", but {"; ".join(reasons)}. For useful edits, {how}'
    )
    raise HeldBack(_safe(message), [_safe(reason) for reason in reasons])


def _safe(text: str) -> str:
    """``text`` fit for a message: key-shaped text redacted, the server's own secrets scrubbed."""
    return scrub(redact(text))


def fill_markers(document: Document, request: EditRequest, middles: list[str], settings: Settings) -> str:
    """The selection with each marker replaced by its middle, filtered for where it sits."""
    marker = settings.hole_marker
    language = document.language
    try:
        shown = shown_middles(holes_canvas(document, request, settings), marker, middles, language,
                              settings.context_tokens, HOLE_TOKENS)  # fmt: skip
    except ValueError as err:
        raise EditError(f"{err}; the selection is unchanged") from None
    return with_middles(document.text[request.start : request.end], marker, shown)


def _without_selection(
    document: Document, request: EditRequest, settings: Settings, trees: SyntaxTrees | None
) -> FillContext:
    """The context of a cursor at the selection's start once the selection is gone; parsed with
    ``trees`` (None: text rules only)."""
    text = document.text[: request.start] + document.text[request.end :]
    without = Document(document.uri, document.language_id, document.version, text)
    tree = trees.parse_once(without) if trees is not None else None
    return context_for(text, request.start, document.language, settings, tree)
