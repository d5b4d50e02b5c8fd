"""Edits of a selection: what the model is asked, and how its answer becomes the new selection.

* rewrite: ``engine.rewrite`` re-denoises the selection (a share ``strength`` of it), optionally
  after an instruction written into the prefix as a comment;
* fill holes: every hole marker in the selection is filled in one canvas (``engine.fill_holes``);
  markers outside the selection are context, not holes, so they are left out of what the model sees;
* complete block: an empty or stub body (``pass``, ``...``) is replaced by a fill in the block's shape.

The engine runs on the model thread; parsing and filtering run on the event loop (tree-sitter
parsers are shared and not thread-safe).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from difill.server.config import Settings
from difill.server.documents import Document
from difill.server.features import filters
from difill.server.features.context import CHARS_PER_TOKEN, SUFFIX_CHARS, build_context, language_of
from difill.server.features.filters import HOLE_PIPELINE, apply_filters
from difill.server.features.shape import STUB_BODIES, SyntaxTrees, block_header_before

REWRITE, FILL_HOLES, COMPLETE_BLOCK = "rewrite", "fillHoles", "completeBlock"
TITLES = {
    REWRITE: "Rewrite selection",
    FILL_HOLES: "Fill holes in selection",
    COMPLETE_BLOCK: "Complete block",
}
HOLE_TOKENS = 16  # the longest middle one hole gets
# A rewrite replaces exactly the selection: only the model's junk and the line endings are fixed.
REWRITE_FILTERS = [filters.to_lf, filters.drop_control_characters, filters.keep_line_endings]


# Bounds on one edit's model work (issue 15): a 32 KB rewrite used to hold the only model worker
# for 72 s and 1.9 GB while ghost text everywhere waited. A selection this long is far past any
# canvas a model here denoises well (the shipped model's is 80 slots, the 26B's 256).
MAX_SELECTION_CHARS = 4_000
MAX_HOLES = 16


class EditError(Exception):
    """The edit cannot be made; the message says why (shown to the user)."""


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
    if is_stub_body(document, start, end, trees):
        kinds.append(COMPLETE_BLOCK)
    return kinds


def is_stub_body(document: Document, start: int, end: int, trees: SyntaxTrees) -> bool:
    """The selection is blank or ``pass``/``...``, and the line before it opens a block."""
    if document.text[start:end].strip() not in ("", *STUB_BODIES):
        return False
    line_start = document.text.rfind("\n", 0, start) + 1
    return block_header_before(document.text, line_start, trees.tree_for(document)) is not None


# ---------------------------------------------------------------------------- the model's part


def engine_work(
    request: EditRequest,
    document: Document,
    settings: Settings,
    trees: SyntaxTrees,
    should_stop: Callable[[], bool],
    on_draft: Callable[[str, int], None] | None,
) -> Callable[[Any], Any]:
    """What the model thread runs for ``request``: ``work(engine) -> engine result``."""
    from difill.engine.infill import FillOptions

    text, start, end = document.text, request.start, request.end
    prefix = text[max(0, start - settings.context_tokens * CHARS_PER_TOKEN) : start]
    selection = text[start:end]
    suffix = text[end : end + SUFFIX_CHARS]
    options = FillOptions(
        language=language_of(document), max_steps=settings.steps, prefix_tokens=settings.context_tokens
    )

    if request.kind == REWRITE:
        return lambda engine: engine.rewrite(
            prefix, selection, suffix, request.strength, request.instruction, options, should_stop, on_draft
        )
    if request.kind == FILL_HOLES:
        marker = settings.hole_marker
        canvas = prefix.replace(marker, "") + selection + suffix.replace(marker, "")
        options.max_hole_tokens = HOLE_TOKENS
        return lambda engine: engine.fill_holes(canvas, marker, options, should_stop)
    if request.kind == COMPLETE_BLOCK:
        ctx = _block_context(document, start, end, settings)
        options.max_hole_tokens = ctx.shape.max_tokens
        return lambda engine: engine.fill(ctx.prefix, ctx.suffix, options, should_stop, on_draft)
    raise EditError(f"unknown edit {request.kind!r}")


# ---------------------------------------------------------------------------- the answer's part


def new_selection(
    request: EditRequest, document: Document, result: Any, settings: Settings, trees: SyntaxTrees
) -> str:
    """The selection's new text from the engine's result; raises EditError when nothing usable."""
    selection = document.text[request.start : request.end]
    if request.kind == REWRITE:
        ctx = build_context(document, request.start, settings.context_tokens, settings.max_tokens, None)
        text = apply_filters(result.text, ctx, REWRITE_FILTERS)
        if not text.strip():
            raise EditError("the model returned an empty rewrite; the selection is unchanged")
        return keep_edges(selection, text)
    if request.kind == FILL_HOLES:
        return fill_markers(document, request, result.middles, settings, trees)
    ctx = _block_context(document, request.start, request.end, settings)
    for candidate in result.candidates:
        text = apply_filters(candidate.text, ctx)
        if text.strip():
            return keep_edges(selection, text)
    raise EditError("the model wrote no usable block body; the selection is unchanged")


def fill_markers(
    document: Document, request: EditRequest, middles: list[str], settings: Settings, trees: SyntaxTrees
) -> str:
    """The selection with each marker replaced by its middle, filtered for where it sits."""
    marker = settings.hole_marker
    text, start, end = document.text, request.start, request.end
    parts = text[start:end].split(marker)
    if len(middles) != len(parts) - 1:
        raise EditError(
            f"the model filled {len(middles)} holes of {len(parts) - 1}; the selection is unchanged"
        )
    before = text[max(0, start - settings.context_tokens * CHARS_PER_TOKEN) : start].replace(marker, "")
    after = text[end : end + SUFFIX_CHARS].replace(marker, "")
    filled = parts[0]
    for i, middle in enumerate(middles):
        rest = "".join(parts[i + 1 :])
        around = Document(
            document.uri, document.language_id, document.version, before + filled + rest + after
        )
        ctx = build_context(around, len(before + filled), settings.context_tokens, HOLE_TOKENS, _tree(around))
        filled += apply_filters(middle, ctx, HOLE_PIPELINE) + parts[i + 1]
    return filled


def keep_edges(selection: str, new: str) -> str:
    """Keep the selection's leading indentation and its final line ending: an edit that changes
    what is selected should not pull the next line up or unindent the first one."""
    lead = selection[: len(selection) - len(selection.lstrip(" \t"))]
    if lead and not new[:1].isspace():
        new = lead + new
    for ending in ("\r\n", "\n"):
        if selection.endswith(ending) and not new.endswith(("\n", "\r")):
            return new + ending
    return new


def _block_context(document: Document, start: int, end: int, settings: Settings):
    """The context of the cursor at ``start`` once the stub body is gone."""
    without = Document(
        document.uri, document.language_id, document.version, document.text[:start] + document.text[end:]
    )
    return build_context(without, start, settings.context_tokens, settings.max_tokens, _tree(without))


def _tree(document: Document):
    """A one-off parse (a throwaway text, so nothing to reuse incrementally)."""
    return SyntaxTrees().tree_for(document)
