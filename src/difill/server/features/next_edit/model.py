"""Model edits (issue 35, part 3): the region around the cursor re-denoised on the canvas.

The editable region (``REGION_ABOVE`` lines above the cursor's line to ``REGION_BELOW`` below
it, about 10 lines) is the canvas; the code before and after it is the clamped context, as for
a rewrite.  The user's last edit goes into the prompt as a diff in comments, read before the
prefix (``FillOptions.context_block``), as Zeta and NES put recent edits in theirs.  The canvas
starts from the region as it is and a share ``STRENGTH`` of its tokens is renoised (the engine's
``rewrite``); each edit draft that falls inside the region is one more row, starting from the
region with the draft applied (``FillOptions.drafts``), so the model keeps or mends it.

The gate: a row becomes an edit only when its text changes the region (beyond whitespace),
leaves the user's own last edit alone, and the model gave every token it changed at least
``MIN_CHANGE_PROB`` (``Candidate.change_logprob``); a draft row the model kept as it stands
changed no token of its seed and passes.  ``STRENGTH`` and ``MIN_CHANGE_PROB`` were set before
`difill eval --next-edit` first ran and are not tuned on its cases (docs/next_edit.md).

Pure text and engine calls: no LSP.  ``region_rewrite`` runs on the event loop (string work on
~10 lines), ``work`` on the model thread, ``edits`` on the loop again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from difill.engine.api import FillOptions, FillResult, InfillBackend, RewriteRequest, ShouldStop
from difill.server.config import Settings
from difill.server.context.policy import to_model
from difill.server.features.next_edit.history import Edit
from difill.server.model_request import edit_options, model_work
from difill.text.characters import without_unsafe
from difill.text.context import prefix_window, suffix_window
from difill.text.languages import line_comment
from difill.text.spans import changed_span, keep_edges

REGION_ABOVE = 4  # lines of the region above the cursor's line
REGION_BELOW = 5  # and below it: 10 lines with the cursor's own
STRENGTH = 0.4  # share of the region's tokens renoised (a selection rewrite's default is 0.5)
MIN_CHANGE_PROB = 0.5  # every token a shown model edit changed had at least this probability
MAX_DRAFT_ROWS = 3
DIFF_LINES = 6  # lines of each side of the last edit in the prompt's diff
DIFF_LINE_CHARS = 160

Span = tuple[int, int, str]  # (start, end, new text) in the document


@dataclass(frozen=True)
class Region:
    start: int  # offsets in the document; the region is whole lines
    end: int
    text: str


@dataclass(frozen=True)
class RegionRewrite:
    """One model run for a next edit: the region's rewrite the worker runs and how its rows
    become edits."""

    region: Region
    request: RewriteRequest
    options: FillOptions
    protected: tuple[int, int]  # the user's last edit: a model edit never touches it
    language: str | None
    language_id: str
    settings: Settings

    def work(self, should_stop: ShouldStop) -> Callable[[InfillBackend], FillResult | None]:
        """On the model thread; None where the checkpoint does not write the document's language."""

        def run(engine: InfillBackend) -> FillResult | None:
            return engine.rewrite(self.request, self.options, should_stop)

        return model_work(self.settings, self.language, self.language_id, run, lambda declined: None)

    def edits(self, result: FillResult) -> tuple[list[Span], int]:
        """The rows that pass the gate as document edits, best first, and how many changed the
        region but were gated out (the noise kept off screen)."""
        out: list[Span] = []
        gated = 0
        floor = math.log(MIN_CHANGE_PROB)
        region = self.region
        for candidate in result.candidates:
            new = keep_edges(region.text, without_unsafe(candidate.text))
            start, old_end, new_end = changed_span(region.text, new)
            if region.text[start:old_end].split() == new[start:new_end].split():
                continue  # no change, or whitespace only
            seed_kept = candidate.change_logprob is None and candidate.source != "model"
            sure = seed_kept or (candidate.change_logprob is not None and candidate.change_logprob >= floor)
            span = (region.start + start, region.start + old_end, new[start:new_end])
            if not sure or _touches(span, self.protected):
                gated += 1
                continue
            if span not in out:
                out.append(span)
        return out, gated


def region_around(text: str, offset: int) -> Region:
    """Whole lines from REGION_ABOVE above the cursor's line to REGION_BELOW below it."""
    start = text.rfind("\n", 0, offset) + 1
    for _ in range(REGION_ABOVE):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    end = offset
    for _ in range(REGION_BELOW + 1):
        found = text.find("\n", end)
        if found < 0:
            end = len(text)
            break
        end = found + 1
    return Region(start, end, text[start:end])


def diff_block(edit: Edit, language_id: str) -> str:
    """The last edit as a diff in line comments (``# - old`` / ``# + new``); empty where the
    language has no line comment (text that is no comment would read as code)."""
    comment = line_comment(language_id)
    if comment is None or not edit.before:
        return ""
    start, old_end, new_end = changed_span(edit.before, edit.after)
    old_lines = _whole_lines(edit.before, start, old_end)[:DIFF_LINES]
    new_lines = _whole_lines(edit.after, start, new_end)[:DIFF_LINES]
    lines = [f"{comment} the last edit:"]
    lines += [f"{comment} - {line[:DIFF_LINE_CHARS]}" for line in old_lines]
    lines += [f"{comment} + {line[:DIFF_LINE_CHARS]}" for line in new_lines]
    return "\n".join(lines) + "\n"


def diff_hunk(edit: Edit) -> str:
    """The last edit as one unified-diff hunk (``@@ -l,n +l,m @@``; no file header), for a model
    that reads one (``RewriteRequest.history``: Mercury's next-edit endpoint)."""
    if not edit.before:
        return ""
    start, old_end, new_end = changed_span(edit.before, edit.after)
    old_lines = _whole_lines(edit.before, start, old_end)[:DIFF_LINES]
    new_lines = _whole_lines(edit.after, start, new_end)[:DIFF_LINES]
    line = edit.before.count("\n", 0, start) + 1
    body = [f"-{old}" for old in old_lines] + [f"+{new}" for new in new_lines]
    return f"@@ -{line},{len(old_lines)} +{line},{len(new_lines)} @@\n" + "\n".join(body) + "\n"


def region_rewrite(
    text: str,
    offset: int,
    last: Edit,
    drafts: list[Span],
    settings: Settings,
    language: str | None,
    language_id: str,
) -> RegionRewrite | None:
    """The model run for a next edit at ``offset`` after ``last``; None when there is nothing to
    run on (a document in CRLF: the model reads LF and the region's offsets would move)."""
    if "\r" in text:
        return None
    region = region_around(text, offset)
    if not region.text.strip():
        return None
    rows: list[str] = []
    for start, end, new in drafts:
        if region.start <= start and end <= region.end:
            row = region.text[: start - region.start] + new + region.text[end - region.start :]
            if row not in rows:
                rows.append(row)
    prefix = prefix_window(text, region.start, settings.context_tokens)
    request = RewriteRequest(
        prefix, region.text, suffix_window(text, region.end), STRENGTH,
        cursor=offset - region.start, history=diff_hunk(last),
    )  # fmt: skip
    options = edit_options(settings, language)
    options.context_block = diff_block(last, language_id)
    options.drafts = tuple(rows[:MAX_DRAFT_ROWS])
    protected = (last.low, last.high)
    return RegionRewrite(region, request, to_model(options), protected, language, language_id, settings)


def _whole_lines(text: str, start: int, end: int) -> list[str]:
    low = text.rfind("\n", 0, start) + 1
    high = text.find("\n", end)
    return text[low : len(text) if high < 0 else high].split("\n")


def _touches(span: Span, protected: tuple[int, int]) -> bool:
    """Whether an edit changes text in or right beside the user's own last edit (it would undo or
    extend it: ``w`` -> ``width`` is the rename taken back)."""
    start, end, _ = span
    low, high = protected
    return start <= high and low <= end
