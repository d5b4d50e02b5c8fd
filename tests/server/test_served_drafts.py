"""The suggestion path retrieves drafts (server/context/drafts.py) and seeds canvas rows with them."""

from __future__ import annotations

from difill.engine.api import Candidate, FillResult, FillStats
from difill.server.config import Settings
from difill.server.served import ServedModel

DOC = "total = compute_total(items, tax)\nprint(total)\n\nother = compute_"


class RecordingEngine:
    """Answers nothing and records the options: what the suggestion path asked the engine for."""

    def __init__(self) -> None:
        self.options = []

    def fill(self, prefix, suffix, options=None, should_stop=None, on_draft=None):
        self.options.append(options)
        return FillResult("", [], FillStats())


def test_drafts_come_from_the_document_then_the_sources_cut_to_the_shape():
    engine = RecordingEngine()
    served = ServedModel(engine, Settings(max_tokens=16), max_drafts=3)
    sources = [("pkg/util.py", "x = compute_mean(values)\n"), ("pkg/other.py", "compute_sum(a, b)\n")]
    shown = served.suggest(DOC, len(DOC), sources=sources)
    # The current document first; a rest-of-line request gets each draft's first line only.
    assert [(d.text, d.source) for d in shown.drafts] == [
        ("total(items, tax)", "current"),
        ("mean(values)", "pkg/util.py"),
        ("sum(a, b)", "pkg/other.py"),
    ]
    assert engine.options[-1].drafts == ("total(items, tax)", "mean(values)", "sum(a, b)")
    assert shown.retrieved == "total(items, tax)"  # the best draft alone, through the filters
    assert shown.text == ""  # the engine answered nothing: retrieval alone is not shown


def test_text_after_the_cursor_is_searched_after_the_text_before_it():
    engine = RecordingEngine()
    text = "a = 1\nresult = run_job(\n\nresult = run_job(config)\n"
    offset = text.index("(\n") + 1
    shown = ServedModel(engine, max_drafts=3).suggest(text, offset)
    assert [(d.text, d.source) for d in shown.drafts] == [("config)", "current")]


def test_no_drafts_unless_asked():
    engine = RecordingEngine()
    shown = ServedModel(engine).suggest(DOC, len(DOC), sources=[("a.py", "compute_x()\n")])
    assert engine.options[-1].drafts == () and shown.drafts == [] and shown.retrieved == ""


def test_a_verified_draft_is_shown_like_any_candidate():
    class DraftEngine(RecordingEngine):
        def fill(self, prefix, suffix, options=None, should_stop=None, on_draft=None):
            self.options.append(options)
            text = options.drafts[0]
            return FillResult(
                text, [Candidate(text, 16, -0.1, True, "draft:0")], FillStats(decoder_forwards=1)
            )

    shown = ServedModel(DraftEngine(), max_drafts=2).suggest(DOC, len(DOC))
    assert shown.text == "total(items, tax)" and shown.forwards == 1
