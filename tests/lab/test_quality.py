"""`difill eval` scores what the editor shows: the server's context, settings and filters."""

from __future__ import annotations

import json
from pathlib import Path

from difill.engine.api import Candidate, FillOptions, FillResult, FillStats
from difill.server.config import Settings
from difill.server.suggestion_path import ServedModel
from lab.quality import EVAL_URI, EvalPlan, evaluate_served, load_served, typing_replay
from lab.training.evaluate import eval_cases

FILE = "".join(f"def f{i}(x):\n    y = x * {i}\n    return y + {i}\n\n\n" for i in range(20))


class ScriptedEngine:
    """Answers each fill with what ``answer(prefix, suffix)`` says, and records the options.

    Not a model: it makes the scoring rules checkable (a right answer must score, a wrong or
    filtered one must not); quality itself is measured on real models by `difill eval`."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.options = []

    def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None):
        self.options.append(options)
        text = self.answer(prefix, suffix)
        stats = FillStats(steps=1, decoder_forwards=1, hole_tokens=1, tokens_per_forward=1.0)
        return FillResult(text, [Candidate(text, options.max_hole_tokens, 0.0, True)], stats)


def rest_of_line(document: str):
    """The true continuation of the cursor's line (the prefix locates the cursor in ``document``)."""

    def answer(prefix: str, suffix: str) -> str:
        assert document.startswith(prefix)
        end = document.find("\n", len(prefix))
        return document[len(prefix) : end]

    return answer


def test_the_server_settings_and_filters_decide_what_is_scored():
    text = FILE
    offset = text.index("x * 3") + 4  # after "x * ", before "3"
    engine = ScriptedEngine(rest_of_line(text))
    served = ServedModel(engine, Settings(max_tokens=7, steps=5))
    assert served.suggest(text[:offset] + text[offset + 1 :], offset).text == "3"
    options = engine.options[-1]
    assert options.max_hole_tokens == 7 and options.max_steps == 5 and options.single_line
    assert options.hole_candidates == (7,)  # one hole length, as while typing

    # What the filters drop is not shown, so it scores as empty.
    assert ServedModel(ScriptedEngine(lambda p, s: "\x00\x01")).suggest(text, offset).text == ""
    # The suffix the document already has is trimmed from a suggestion.
    repeat = ServedModel(ScriptedEngine(lambda p, s: "3" + s.split("\n")[0]))
    assert repeat.suggest(text[:offset] + text[offset + 1 :], offset).text == "3"


def test_typing_replay_counts_only_accepted_matching_characters(tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "heldout.jsonl").write_text(json.dumps({"path": "p.py", "text": FILE}) + "\n")
    typed_lines = 4
    target = "".join(FILE.rstrip("\n").splitlines(keepends=True)[-typed_lines:]) + "\n"

    perfect = typing_replay(ServedModel(ScriptedEngine(rest_of_line(FILE))), corpus, 1, typed_lines, seed=0)
    assert perfect["characters"] == len(target)
    assert perfect["accepted"] >= 2 and 0.5 < perfect["saved_share"] < 1.0  # newlines and indents are typed

    wrong = typing_replay(ServedModel(ScriptedEngine(lambda p, s: "zzz")), corpus, 1, typed_lines, seed=0)
    assert wrong["saved_share"] == 0.0 and wrong["accepted"] == 0
    assert wrong["requests"] == len(target)


def test_eval_runs_a_real_model_through_the_served_path(tmp_path: Path, tiny_model_dir):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "heldout.jsonl").write_text(json.dumps({"path": "p.py", "text": FILE}) + "\n")
    report = evaluate_served(
        EvalPlan(str(tiny_model_dir), corpus, per_shape=3, seed=1, typing_files=1, typing_lines=1)
    )
    assert set(report["diffusion"]) == {"rest_of_line", "whole_line", "multi_line_2_5"}
    # The scores are those of what the served path shows for each case: ask it again, case by case.
    served = load_served(str(tiny_model_dir))
    for shape, examples in eval_cases(corpus, 3, 1).items():
        shown = [served.suggest(ex.prefix + ex.suffix, len(ex.prefix), EVAL_URI) for ex in examples]
        score = report["diffusion"][shape]
        assert score["cases"] == len(examples) == 3
        assert score["empty_share"] == round(sum(not s.text.strip() for s in shown) / 3, 4), shape
        exact = sum(s.text.rstrip() == ex.middles[0].rstrip() for s, ex in zip(shown, examples, strict=True))
        assert score["exact_match"] == round(exact / 3, 4), shape
        assert score["mean_forwards"] == round(sum(s.forwards for s in shown) / 3, 2) >= 1
    # One typed line: the file's last, and each request either accepted a suggestion or typed one character.
    typing = report["diffusion_typing"]
    assert typing["characters"] == len(FILE.rstrip("\n").splitlines()[-1]) + 1
    saved = round(typing["saved_share"] * typing["characters"])
    assert typing["requests"] == typing["accepted"] + typing["characters"] - saved
    assert "ar" not in report


def test_the_workspace_eval_alone_needs_no_corpus(tmp_path: Path, tiny_model_dir):
    """`difill eval --cases 0 --typing-files 0 --workspace-cases N`: no held-out split is read."""
    report = evaluate_served(EvalPlan(str(tiny_model_dir), tmp_path / "no-corpus", per_shape=0, seed=1))
    assert report["diffusion"] == {} and "diffusion_typing" not in report


def test_the_filler_experiment_ends_middles_without_the_fill_token(tmp_path: Path, tiny_model_dir):
    from lab.quality import load_served

    fill_id = None
    for policy in ("eos", "pad", "none"):
        engine = load_served(str(tiny_model_dir), filler_policy=policy).engine
        ids = engine.ids
        fill_id = engine.tokenizer.convert_tokens_to_ids("<|fill|>")
        assert ids.filler == {"eos": (ids.eos,), "pad": (ids.pad,), "none": ()}[policy]
        assert fill_id in ids.banned_in_hole  # the model may no longer write its own filler
        text = engine.fill("def f(x):\n    return ", "\n", FillOptions(max_hole_tokens=8, max_steps=2)).text
        assert "<|fill|>" not in text
    default = load_served(str(tiny_model_dir)).engine.ids
    assert default.filler == (fill_id,) and fill_id not in default.banned_in_hole


def test_shown_precision_scores_only_the_cases_shown_something():
    from lab.training.evaluate import ShapeScore
    from lab.training.examples import InfillExample

    score = ShapeScore()
    for middle in ("total = w", "", "wrong", "total + 1"):  # right whole, nothing, wrong, first word right
        example = InfillExample("def f(w, h):\n    ", ["total = w * h"], [], "\n", "line")
        score.add(example, middle, 1, 1.0, 1.0, False)
    summary = score.summary()
    assert (summary["shown_precision"], summary["first_word_right"]) == (round(1 / 3, 4), round(2 / 3, 4))
