"""What every engine besides torch must give exactly as torch does (llama.cpp, MLX): the same
fills, holes, rewrites and draft rows on the same seed.  Their test files call these."""

from __future__ import annotations

import pytest

from difill.engine.api import FillOptions, RewriteRequest

FILLS = [
    ("def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"),
    ("import os\n\npath = os.path.join(", ")\n"),
    ("for i in range(10):\n    ", "\n"),
    ("class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.", "\n"),
]


def assert_same_fill(torch_engine, other, prefix: str, suffix: str) -> None:
    options = FillOptions(seed=7)
    ours, theirs = torch_engine.fill(prefix, suffix, options), other.fill(prefix, suffix, options)
    assert [c.text for c in theirs.candidates] == [c.text for c in ours.candidates]
    assert theirs.stats.steps == ours.stats.steps


def assert_same_contract(torch_engine, other) -> None:
    """The backend contract on the tiny model: fills, holes, a rewrite with an instruction, draft rows."""
    for prefix, suffix in FILLS[:2]:
        ours, theirs = torch_engine.fill(prefix, suffix), other.fill(prefix, suffix)
        assert [c.text for c in theirs.candidates] == [c.text for c in ours.candidates]
    text = "a = <|hole|>\nb = <|hole|>\n"
    holes = other.fill_holes(text)
    assert len(holes.middles) == 2 and holes.middles == torch_engine.fill_holes(text).middles
    request = RewriteRequest("x = 1\n", "y = x + 2\n", "print(y)\n", strength=1.0, instruction="double it")
    assert other.rewrite(request).text == torch_engine.rewrite(request).text
    drafted = other.fill("x = ", "\n", FillOptions(drafts=("foo(1)",)))
    assert drafted.stats.draft_rows == 1


def assert_same_holes_rewrite_and_draft_rows(torch_engine, other) -> None:
    text = "def area(w, h):\n    return <|hole|>\n\n\ndef perimeter(w, h):\n    return <|hole|>\n"
    assert other.fill_holes(text).middles == torch_engine.fill_holes(text).middles
    request = RewriteRequest("def area(w, h):\n", "    return w * h\n", "\n", strength=0.6)
    ours_edit, theirs_edit = torch_engine.rewrite(request), other.rewrite(request)
    assert theirs_edit.text == ours_edit.text
    # The next-edit gate reads how sure the model is of what it changed: every engine reports it.
    changes = [(c.source, c.change_logprob) for c in ours_edit.candidates]
    assert any(logprob is not None for _, logprob in changes)  # the rewrite changed something
    assert [c.source for c in theirs_edit.candidates] == [source for source, _ in changes]
    for candidate, (_, logprob) in zip(theirs_edit.candidates, changes, strict=True):
        assert (candidate.change_logprob is None) == (logprob is None)
        if logprob is not None:
            assert candidate.change_logprob == pytest.approx(logprob, abs=0.05)
    options = FillOptions(drafts=("w * h", "width * height"), seed=1)
    ours = torch_engine.fill("def area(w, h):\n    return ", "\n", options)
    theirs = other.fill("def area(w, h):\n    return ", "\n", options)
    assert [(c.text, c.source) for c in theirs.candidates] == [(c.text, c.source) for c in ours.candidates]


def assert_same_name_scores(torch_engine, other) -> None:
    """The names' scores (engine/name_scores.py) within the logits' tolerance, in the same order."""
    prefix = "import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef run():\n    log."
    names = ["info", "debug", "warning", "getLogger", "zzqxv"]
    ours = torch_engine.score_names(prefix, "('starting')\n", names)
    theirs = other.score_names(prefix, "('starting')\n", names)
    assert theirs == pytest.approx(ours, abs=0.05)
    assert sorted(names, key=lambda n: -theirs[names.index(n)]) == sorted(
        names, key=lambda n: -ours[names.index(n)]
    )
