"""The suggestion path retrieves drafts (server/context/drafts.py) and uses them as ``contextDrafts``
says: shown as they stand, seeded into canvas rows, or not at all; only drafts where the model
declines the language."""

from __future__ import annotations

import difill.server.draft_policy as draft_policy
from difill.engine.api import Candidate, FillResult, FillStats
from difill.server.config import Settings
from difill.server.context.found import Retrieval
from difill.server.suggestion_path import ServedModel

DOC = "total = compute_total(items, tax)\nprint(total)\n\nother = compute_"
# "x = 1\ntotal = compute_total(" again: a match of 7 tokens, long enough to show its draft as it stands.
SEEN = "x = 1\ntotal = compute_total(items, tax)\nprint(total)\nx = 1\ntotal = compute_total("


class RecordingEngine:
    """Answers nothing and records the options: what the suggestion path asked the engine for."""

    def __init__(self) -> None:
        self.options = []

    def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None):
        self.options.append(options)
        return FillResult("", [], FillStats())


def test_drafts_come_from_the_document_then_the_sources_cut_to_the_shape():
    engine = RecordingEngine()
    served = ServedModel(engine, Settings(max_tokens=16, context_drafts="seed"))
    sources = [("pkg/util.py", "x = compute_mean(values)\n"), ("pkg/other.py", "compute_sum(a, b)\n")]
    shown = served.suggest(DOC, len(DOC), retrieval=Retrieval(sources, []))
    # The current document first; a rest-of-line request gets each draft's first line only.
    assert [(d.text, d.source) for d in shown.drafts] == [
        ("total(items, tax)", "current"),
        ("mean(values)", "pkg/util.py"),
        ("sum(a, b)", "pkg/other.py"),
    ]
    assert engine.options[-1].drafts == ("total(items, tax)", "mean(values)", "sum(a, b)")
    # The best draft alone, through the filters: the eval's retrieval row.
    assert (
        served.retrieved(DOC, len(DOC), "file:///untitled.py", Retrieval(sources, [])) == "total(items, tax)"
    )
    assert shown.text == ""  # the engine answered nothing: retrieval alone is not shown
    # The eval's retrieval row is read from its "model" row, whose drafts are off.
    model_alone = ServedModel(engine, Settings(max_tokens=16, context_drafts="off"))
    assert model_alone.retrieved(DOC, len(DOC), "file:///untitled.py", Retrieval(sources, [])) == (
        "total(items, tax)"
    )


def test_text_after_the_cursor_is_searched_after_the_text_before_it():
    engine = RecordingEngine()
    text = "a = 1\nresult = run_job(\n\nresult = run_job(config)\n"
    offset = text.index("(\n") + 1
    shown = ServedModel(engine, Settings(context_drafts="seed")).suggest(text, offset)
    assert [(d.text, d.source) for d in shown.drafts] == [("config)", "current")]


def test_off_asks_the_model_alone():
    engine = RecordingEngine()
    shown = ServedModel(engine, Settings(context_drafts="off")).suggest(
        DOC, len(DOC), retrieval=Retrieval([("a.py", "compute_x()\n")], [])
    )
    assert engine.options[-1].drafts == () and shown.text == ""


def test_show_makes_the_best_draft_the_ghost_text_without_a_model_run():
    engine = RecordingEngine()
    # The show gate open (minShowProbability 0): this is the draft policy's test; the gate cuts
    # this draft to its likely first word ("items": tests/server/test_show_gate.py).
    settings = Settings(context_drafts="show", min_show_probability=0.0)
    shown = ServedModel(engine, settings).suggest(SEEN, len(SEEN))
    assert shown.drafts[0].matched >= draft_policy.SHOW_MIN_MATCH
    assert engine.options == []  # typing: the draft stands, no fill
    assert shown.text == "items, tax)" and shown.forwards == 0
    assert shown.result.candidates[0].source == "draft:current"


def test_show_puts_the_draft_first_when_the_user_asks_then_the_model():
    class Answering(RecordingEngine):
        def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None):
            self.options.append(options)
            return FillResult(
                "x", [Candidate("mean_of(items)", 8, -0.5, True)], FillStats(decoder_forwards=3)
            )

    engine = Answering()
    shown = ServedModel(engine, Settings(context_drafts="show")).suggest(SEEN, len(SEEN), invoked=True)
    assert engine.options[-1].drafts == ()  # the model is asked without seeds
    assert [c.source for c in shown.result.candidates] == ["draft:current", "model"]


def test_auto_shows_drafts_for_difill_trained_checkpoints_and_seeds_for_others():
    from difill.engine.api import About
    from difill.engine.model import checkpoint_drafts

    class Config:  # a checkpoint difill trained that names no drafts mode
        difill = {"min_token_prob": 0.25}

    assert checkpoint_drafts(Config()) == "show" and checkpoint_drafts(object()) == "seed"
    trained = RecordingEngine()
    trained.about = lambda: About("torch", "trained", drafts=checkpoint_drafts(Config()))  # as InfillEngine says
    assert ServedModel(trained).suggest(SEEN, len(SEEN)).text == "items, tax)"
    assert trained.options == []
    other = RecordingEngine()  # a real checkpoint or a remote: no difill record
    ServedModel(other).suggest(DOC, len(DOC))
    assert other.options[-1].drafts == ("total(items, tax)",)


def test_no_draft_found_falls_back_to_the_model():
    engine = RecordingEngine()
    ServedModel(engine, Settings(context_drafts="show")).suggest("zzz = ", 6)
    assert len(engine.options) == 1 and engine.options[0].drafts == ()


def test_a_verified_draft_is_shown_like_any_candidate():
    class DraftEngine(RecordingEngine):
        def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None):
            self.options.append(options)
            text = options.drafts[0]
            return FillResult(
                text, [Candidate(text, 16, -0.1, True, "draft:0")], FillStats(decoder_forwards=1)
            )

    shown = ServedModel(DraftEngine(), Settings(context_drafts="seed")).suggest(DOC, len(DOC))
    assert shown.text == "total(items, tax)" and shown.forwards == 1


class Answering(RecordingEngine):
    """Answers ``text`` as a whole middle (or nothing) and records the options."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None):
        self.options.append(options)
        candidates = [Candidate(self.text, 8, -0.5, True)] if self.text else []
        return FillResult(self.text, candidates, FillStats(decoder_forwards=3))


SHORT = (
    "total = compute_total(items, tax)\nprint(total)\n\nother = compute_"  # matches "= compute_": 2 tokens
)
LONG = "total = compute_total(items, tax)\nprint(total)\n\ntotal = compute_"  # "total = compute_": 3


def test_show_keeps_a_draft_on_a_short_match_behind_the_models_text(monkeypatch):
    monkeypatch.setattr(draft_policy, "SHOW_MIN_MATCH", 3)
    settings = Settings(context_drafts="show")
    long = ServedModel(Answering("mean(items)"), settings).suggest(LONG, len(LONG))
    assert [d.matched for d in long.drafts] == [3]
    assert long.text == "total(items, tax)" and long.forwards == 0  # a long match: the draft, no model run
    engine = Answering("mean(items)")
    short = ServedModel(engine, settings).suggest(SHORT, len(SHORT))
    assert [d.matched for d in short.drafts] == [2]
    assert len(engine.options) == 1 and short.text == "mean(items)"  # the model's text is the ghost text
    asked = ServedModel(Answering("mean(items)"), settings).suggest(SHORT, len(SHORT), invoked=True)
    assert [c.source for c in asked.result.candidates] == ["model", "draft:current"]


def test_show_falls_back_to_a_short_match_draft_where_the_model_shows_nothing(monkeypatch):
    monkeypatch.setattr(draft_policy, "SHOW_MIN_MATCH", 3)
    engine = Answering("")
    shown = ServedModel(engine, Settings(context_drafts="show")).suggest(SHORT, len(SHORT))
    assert len(engine.options) == 1 and shown.text == "total(items, tax)"


def test_auto_with_a_checkpoint_that_says_off_looks_for_no_drafts(monkeypatch):
    """Drafts on or off is decided once, by the plan (issue 65): with "auto" and a checkpoint whose
    drafts mode is "off", no draft is found, parsed and thrown away."""
    from difill.engine.api import About

    looked: list[int] = []
    fitting = draft_policy.fitting_drafts

    def counted(*args, **kwargs):
        looked.append(1)
        return fitting(*args, **kwargs)

    monkeypatch.setattr("difill.server.suggestion_path.fitting_drafts", counted)
    engine = RecordingEngine()
    engine.about = lambda: About("torch", "off", drafts="off")
    shown = ServedModel(engine, Settings(context_drafts="auto")).suggest(SEEN, len(SEEN))
    assert looked == [] and shown.drafts == []
    assert engine.options[-1].drafts == ()  # the model alone, as before
    ServedModel(RecordingEngine(), Settings(context_drafts="auto")).suggest(SEEN, len(SEEN))
    assert looked == [1]  # a checkpoint that seeds: found once
