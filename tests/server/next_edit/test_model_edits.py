"""Issue 35, part 3: model edits.  The engine's rewrite with draft rows (the tiny random model),
the region, the prompt's diff and the gate (model.py).  Through the server: test_lsp_model_edits.py."""

from __future__ import annotations

import math

import pytest

from difill.engine.api import Candidate, FillOptions, FillResult, FillStats, RewriteRequest
from difill.engine.infill import InfillEngine
from difill.engine.model import load_model
from difill.server.config import Settings
from difill.server.features.next_edit import model
from difill.server.features.next_edit.history import Edit

SOURCE = "".join(f"def f{i}(width, height):\n    return width * height + {i}\n\n" for i in range(8))


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return InfillEngine(load_model(tiny_model_dir, device="cpu"))


# ---------------------------------------------------------------------------- the engine's rows


def test_a_rewrite_with_drafts_runs_one_row_each_and_reads_the_context_block(engine):
    selection = "    total = width * height\n    return total\n"
    draft = "    total = w * height\n    return total\n"
    request = RewriteRequest("def area(width, height):\n", selection, "\nprint(area(1, 2))\n", strength=0.0)
    options = FillOptions(drafts=(draft,), context_block="# the last edit:\n# - a\n# + b\n")
    result = engine.rewrite(request, options)
    assert sorted(c.source for c in result.candidates) == ["draft:0", "model"]
    assert result.stats.draft_rows == 1 and result.stats.context_tokens > 0
    # Nothing renoised (strength 0): each row is its seed, and no token was changed.
    by_source = {c.source: c for c in result.candidates}
    assert by_source["model"].text == selection and by_source["draft:0"].text == draft
    assert all(c.change_logprob is None for c in result.candidates)


def test_a_row_that_changes_tokens_says_how_sure_it_was_of_them(engine):
    selection = "    total = width * height\n    return total\n"
    request = RewriteRequest("def area(width, height):\n", selection, "\n", strength=1.0)
    result = engine.rewrite(request, FillOptions(max_steps=4))
    (only,) = result.candidates  # no drafts: one row, as a selection rewrite always had
    assert only.text != selection  # a random model renoising every token changes some
    assert only.change_logprob is not None and only.change_logprob <= 0.0


# ---------------------------------------------------------------------------- region, prompt, gate


def test_the_region_is_whole_lines_around_the_cursor():
    text = "".join(f"line {i}\n" for i in range(30))
    offset = text.index("line 10") + 3
    region = model.region_around(text, offset)
    assert region.text == "".join(f"line {i}\n" for i in range(6, 16))
    assert text[region.start : region.end] == region.text
    top = model.region_around(text, 2)  # at the top: fewer lines above
    assert top.start == 0 and top.text.count("\n") == 6


def test_the_last_edit_is_a_diff_in_comments_and_none_where_there_are_no_comments():
    before = "a = 1\ndef f(width):\n    return width\n"
    after = before.replace("f(width", "f(w")
    edit = Edit(before, after, 8, 9, 0.0, 2)
    assert model.diff_block(edit, "python") == "# the last edit:\n# - def f(width):\n# + def f(w):\n"
    assert model.diff_block(edit, "markdown") == ""


def _rewrite_after_rename() -> tuple[str, model.RegionRewrite]:
    before = SOURCE
    after = before.replace("f0(width", "f0(w", 1)
    at = after.index("f0(w") + 3
    drafts = [(after.index("width"), after.index("width") + 5, "w"), (len(after) - 10, len(after) - 9, "x")]
    rewrite = model.region_rewrite(
        after, at + 1, Edit(before, after, at, at + 1, 0.0, 2), drafts, Settings(), "python", "python"
    )
    assert rewrite is not None
    return after, rewrite


def test_a_rewrite_seeds_the_drafts_inside_the_region_and_clamps_the_rest():
    after, rewrite = _rewrite_after_rename()
    assert rewrite.region.start == 0 and rewrite.request.selection == rewrite.region.text
    assert rewrite.request.strength == model.STRENGTH
    assert rewrite.request.suffix.startswith(after[rewrite.region.end :][:20])
    # The draft inside the region is a row; the one at the end of the file is not.
    assert rewrite.options.drafts == (rewrite.region.text.replace("return width", "return w", 1),)
    assert rewrite.options.context_block.startswith("# the last edit:")
    assert (
        model.region_rewrite(
            after.replace("\n", "\r\n"), 3, Edit("", "", 0, 0, 0.0, 2), [], Settings(), "python", "python"
        )
        is None
    )


def _result(*candidates: Candidate) -> FillResult:
    return FillResult(candidates[0].text, list(candidates), FillStats())


def test_the_gate_shows_only_sure_changes_away_from_the_users_edit():
    after, rewrite = _rewrite_after_rename()
    region = rewrite.region.text
    changed = region.replace("+ 0", "+ 1")
    sure, unsure = math.log(0.9), math.log(0.2)
    assert rewrite.edits(_result(Candidate(region, 1, 0.0, True))) == ([], 0)  # no change
    assert rewrite.edits(
        _result(Candidate(region.replace("    return", "  return", 1), 1, 0.0, True, "model", sure))
    ) == ([], 0)
    (edit,), gated = rewrite.edits(_result(Candidate(changed, 1, 0.0, True, "model", sure)))
    assert gated == 0 and after[edit[0] : edit[1]] == "0" and edit[2] == "1"
    assert rewrite.edits(_result(Candidate(changed, 1, 0.0, True, "model", unsure))) == ([], 1)
    # A draft row the model kept as it stands changed no token of its seed: it passes.
    kept = rewrite.options.drafts[0]
    (edit,), _ = rewrite.edits(_result(Candidate(kept, 1, 0.0, True, "draft:0", None)))
    region_end = rewrite.region.end
    assert after[: edit[0]] + edit[2] + after[edit[1] : region_end] == kept  # the draft, as it stands
    # A sure change of the user's own edit would undo it: never shown.
    undone = region.replace("f0(w,", "f0(width,", 1)
    assert rewrite.edits(_result(Candidate(undone, 1, 0.0, True, "model", sure))) == ([], 1)
