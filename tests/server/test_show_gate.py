"""The show gate (server/show_gate.py): P(right) from what is known, a bar, cuts, and a fallback
that never shows everything.  Through the server: tests/server/test_show_gate_lsp.py."""

from __future__ import annotations

import json
import logging

from difill.server import show_gate
from difill.server.show_gate import FALLBACK, FEATURES, Bar, Calibration, Evidence, calibration, gate
from difill.text.context import build_context


def evidence(text: str, origin: str = "model", score: float = -0.5, prose: bool = False) -> Evidence:
    return Evidence(origin, score, 0, prose, True, False, False, text)


def linear(**weights: float) -> Calibration:
    return Calibration(tuple(weights.get(name, 0.0) for name in FEATURES), 0.5)


def test_the_shipped_calibration_reads_and_names_every_feature():
    model = calibration()
    assert model is not FALLBACK
    assert len(model.weights) == len(FEATURES) and 0.0 < model.threshold < 1.0


def test_a_corrupt_or_missing_calibration_falls_back_to_listed_names_only(tmp_path, caplog):
    bad = tmp_path / "show_gate.json"
    bad.write_text('{"weights": {"bias": ')
    with caplog.at_level(logging.WARNING, logger="difill.server"):
        model = calibration(bad)
    assert model is FALLBACK and "cannot be read" in caplog.text
    assert calibration(tmp_path / "missing.json") is FALLBACK
    bar = Bar(0.0, True)  # even at a threshold of 0 the fallback shows no model text or lookup
    assert gate([("x = 1", evidence("x = 1"))], Bar(model.threshold, True), model) == []
    assert gate([("name", evidence("name", origin="jedi"))], bar, model) == ["name"]
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps({"weights": dict.fromkeys(FEATURES, float("nan")), "threshold": 0.5}))
    assert calibration(nan) is FALLBACK


def test_a_text_below_the_bar_is_dropped_and_one_above_it_shown():
    sure = linear(bias=2.0, score=4.0)  # P rises with the model's mean log-prob
    text = "total = w * h"
    assert gate([(text, evidence(text, score=-0.1))], Bar(0.5, True), sure) == [text]
    assert gate([(text, evidence(text, score=-3.0))], Bar(0.5, True), sure) == []


def test_a_long_text_unlikely_as_a_whole_is_cut_to_its_likely_first_line():
    short_is_likely = linear(bias=3.0, lines=-10.0)
    text = "total = w * h\n    return total"
    assert gate([(text, evidence(text))], Bar(0.5, True), short_is_likely) == ["total = w * h"]


def test_a_long_line_is_cut_to_its_first_word_when_only_that_is_likely():
    short_is_likely = linear(bias=4.0, log_chars=-2.0)  # P(1 char... 5 chars) high, a long line low
    text = "name(first_argument, second_argument)"
    assert gate([(text, evidence(text))], Bar(0.5, True), short_is_likely) == ["name"]


def test_comments_get_a_higher_bar_and_a_setting_turns_them_off():
    middling = linear(bias=0.4)  # P = 0.6 everywhere
    text = "the number of rows"
    assert gate([(text, evidence(text))], Bar(0.5, True), middling) == [text]
    assert gate([(text, evidence(text, prose=True))], Bar(0.5, True), middling) == []  # bar 0.75
    assert gate([(text, evidence(text, prose=True))], Bar(0.0, False), middling) == []


def test_evidence_tells_a_found_draft_from_a_canvas_row_seeded_with_one():
    from difill.engine.api import Candidate
    from difill.server.context.drafts import Draft

    ctx = build_context("import os\nx = os.pa", 18, "python", 256, 32, None)
    drafts = [Draft("th.join", "jedi", kind="symbol"), Draft("th.sep", "current", matched=5)]
    found = show_gate.evidence("th.join", Candidate("th.join", 0, 0.0, True, "draft:jedi"), drafts, ctx)
    assert (found.origin, found.mid_word, found.line_start) == ("jedi", True, False)
    lookup = show_gate.evidence("th.sep", Candidate("th.sep", 0, 0.0, True, "draft:current"), drafts, ctx)
    assert (lookup.origin, lookup.matched) == ("lookup", 5)
    seeded = show_gate.evidence("th.x", Candidate("th.x", 4, -1.0, True, "draft:0"), drafts, ctx)
    assert seeded.origin == "model" and seeded.score == -1.0


def test_traces_are_written_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.delenv(show_gate.TRACE_ENV, raising=False)
    assert show_gate.trace_key("x = 1\n", 4) is None
    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv(show_gate.TRACE_ENV, str(trace))
    key = show_gate.trace_key("x = 1\n", 4)
    gate([("1", evidence("1"))], Bar(0.0, True), linear(bias=1.0), key)
    row = json.loads(trace.read_text())
    assert row["offset"] == 4 and Evidence(**row["evidence"]) == evidence("1")


class Writes:
    """A backend whose model writes ``text``; ``calibrated``: the gate's calibration is its own."""

    def __init__(self, text: str, calibrated: bool) -> None:
        self.text, self.calibrated = text, calibrated

    def about(self):
        from difill.engine.api import About

        return About("torch", "test", show_gate=self.calibrated)

    def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None):
        from difill.engine.api import Candidate, FillResult, FillStats

        return FillResult(self.text, [Candidate(self.text, 8, -0.5, True)], FillStats(decoder_forwards=1))


def test_the_gate_judges_only_the_model_its_calibration_was_fitted_on():
    from difill.server.config import Settings
    from difill.server.suggestion_path import ServedModel

    doc = "def area(w, h):\n    return w * "
    settings = Settings(min_show_probability=0.999999, context_drafts="off")
    assert ServedModel(Writes("h", calibrated=True), settings).suggest(doc, len(doc)).texts == []
    other = ServedModel(Writes("h", calibrated=False), settings).suggest(doc, len(doc))
    assert other.texts == ["h"] and other.sources == ["model"]
    asked = ServedModel(Writes("h", calibrated=True), settings).suggest(doc, len(doc), invoked=True)
    assert asked.texts == ["h"]  # the user asked: not gated
