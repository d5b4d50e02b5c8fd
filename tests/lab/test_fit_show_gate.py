"""The show gate's fit (lab/fit_show_gate.py): what a threshold would show, counted as the typing
bench counts it, and a fit that orders texts by how often they were right."""

from __future__ import annotations

import json

import numpy as np

from difill.server.show_gate import Evidence
from lab.fit_show_gate import Case, cases_of, distinct_precision, fit, shown_texts, threshold_for


def evidence(text: str, origin: str = "model") -> Evidence:
    return Evidence(origin, -0.5, 0, False, True, True, False, text)


def test_traces_become_each_text_whole_and_cut_labelled_by_what_was_typed(tmp_path):
    trace = tmp_path / "t.jsonl"
    row = {"sha1": "a", "offset": 3, "p": 0.5, "evidence": vars(evidence("name(x, y)")), "typed": "name(z)"}
    trace.write_text(json.dumps(row) + "\n")
    cases = cases_of([str(trace)])
    assert [(c.evidence.text, c.right, c.whole) for c in cases] == [("name(x, y)", False, True), ("name", True, False)]


def test_a_request_shows_its_first_passing_text_and_typing_into_it_is_one_suggestion():
    cases = [
        Case(("d1", 10), evidence("total"), True, True),
        Case(("d2", 11), evidence("otal"), True, True),  # "t" typed into it: the same suggestion
        Case(("d3", 20), evidence("wrong + 1"), False, True),
        Case(("d3", 20), evidence("wrong"), False, False),
    ]
    p = np.array([0.9, 0.9, 0.2, 0.3])
    assert distinct_precision(shown_texts(cases, p, 0.5)) == (1, 1)
    assert distinct_precision(shown_texts(cases, p, 0.25)) == (2, 1)  # the cut "wrong" shows
    assert threshold_for(cases, p, 0.6) > 0.3  # at least 60% right: the wrong one must go


def test_the_fit_gives_the_texts_that_were_right_the_higher_probability():
    rng = np.random.default_rng(0)
    x = np.column_stack([np.ones(400), rng.normal(size=400)])  # (n, 2): a bias and one feature
    y = (x[:, 1] + 0.3 * rng.normal(size=400) > 0).astype(float)
    w = fit(x, y)
    assert w[1] > 1.0
