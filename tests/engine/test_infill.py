"""InfillEngine end to end on the tiny random model: behaviour, not content."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from difill.engine.api import Cancelled, FillOptions, RewriteRequest
from difill.engine.infill import InfillEngine
from difill.engine.tokens import encode

PREFIX = "def area(width, height):\n    return "
SUFFIX = "\n\n\nprint(area(2, 3))\n"


def test_fill_returns_text_and_stats(engine):
    options = FillOptions(max_hole_tokens=8, max_steps=4)
    result = engine.fill(PREFIX, SUFFIX, options)
    assert 1 <= result.stats.steps == result.stats.decoder_forwards <= 4
    assert result.stats.total_ms > 0 and result.stats.encoder_ms >= 0
    assert result.stats.prefix_tokens == len(engine.prefix_cache.token_ids) > 1
    assert result.stats.candidates == len(options.candidate_lengths())
    # Seeded, so the same every run: the random model leaves text in some holes, and empty or
    # repeated middles are dropped.
    assert result.candidates, "no candidate at all: every hole came back empty"
    assert all(c.text for c in result.candidates)
    assert len({c.text for c in result.candidates}) == len(result.candidates)
    assert {c.hole_length for c in result.candidates} <= set(options.candidate_lengths())
    assert result.text == result.candidates[0].text


def test_candidate_lengths_run_in_one_batch(engine):
    options = FillOptions(hole_candidates=(2, 5, 9), max_steps=5)
    result = engine.fill(PREFIX, SUFFIX, options)
    assert result.stats.candidates == 3
    assert result.candidates, "no candidate at all: every hole came back empty"
    assert {c.hole_length for c in result.candidates} <= {2, 5, 9}
    # One forward per step for the whole batch, not one per candidate.
    assert result.stats.decoder_forwards <= options.max_steps
    assert len({c.text for c in result.candidates}) == len(result.candidates)


def test_same_seed_gives_the_same_fill(loaded):
    a = InfillEngine(loaded).fill(PREFIX, SUFFIX, FillOptions(seed=7, max_steps=4))
    b = InfillEngine(loaded).fill(PREFIX, SUFFIX, FillOptions(seed=7, max_steps=4))
    assert a.text == b.text


@pytest.mark.parametrize(
    ("prefix", "suffix"),
    [
        ("", "x = 1\n"),
        ("x = ", ""),
        ("", ""),
        ("# 한국어 😀 주석\nname = '", "'\n"),
        ("a" * 50_000 + "\nb = ", "\n"),
    ],
    ids=["empty-prefix", "empty-suffix", "both-empty", "non-ascii", "prefix-longer-than-positions"],
)
def test_odd_inputs_fill_without_error(engine, prefix, suffix):
    result = engine.fill(prefix, suffix, FillOptions(max_hole_tokens=6, max_steps=3))
    assert 1 <= result.stats.decoder_forwards <= 3
    assert 0 < result.stats.prefix_tokens <= engine.loaded.max_prefix_tokens
    # What the model saw of the prefix is bos and then the prefix's own tail, never anything else.
    seen = engine.prefix_cache.token_ids
    assert seen[0] == engine.ids.bos
    assert prefix.endswith(engine.tokenizer.decode(seen[1:]))
    if len(prefix) < 100:  # short enough to be seen whole
        assert engine.tokenizer.decode(seen[1:]) == prefix
    assert result.candidates and result.text == result.candidates[0].text


def test_prefix_cache_is_reused_while_typing(engine):
    engine.fill("import os\n\ndef main():\n    path = os.", "\n", FillOptions(max_steps=2, heal=False))
    result = engine.fill(
        "import os\n\ndef main():\n    path = os.getcwd()\n    ", "\n", FillOptions(max_steps=2, heal=False)
    )
    assert result.stats.reused_prefix_tokens > 0
    assert result.stats.reused_prefix_tokens < result.stats.prefix_tokens


def test_token_healing_hands_the_partial_word_to_the_hole(engine):
    tok = engine.tokenizer
    prefix = "def f(values):\n    ret"
    result = engine.fill(prefix, "\n", FillOptions(max_steps=3))
    full = [engine.ids.bos, *encode(tok, prefix)]
    # The last prefix token (the partial word) was not encoded: the hole re-predicts it.
    assert engine.prefix_cache.token_ids == full[:-1]
    # Every hole's first token was held to words that start with the partial one, so no candidate
    # is dropped for failing to start with it (the random model alone would rarely pick one).
    assert result.stats.candidates == len(FillOptions().candidate_lengths())
    assert len(result.candidates) == result.stats.candidates


def test_healing_is_skipped_after_punctuation(engine):
    heal, ids = engine._split_heal("x = f(", [1, 2, 3], heal=True)
    assert heal == "" and ids == [1, 2, 3]


def test_previews_arrive_once_per_step_in_order(engine):
    previews: list[tuple[str, int]] = []
    result = engine.fill(
        PREFIX, SUFFIX, FillOptions(max_steps=4), on_preview=lambda text, step: previews.append((text, step))
    )
    assert [step for _, step in previews] == list(range(result.stats.steps))


def test_cancel_from_another_thread_returns_within_a_step(engine):
    stop = threading.Event()
    started = threading.Event()
    after_stop: list[int] = []  # the steps that previewed once stop was set: counted, not timed

    def on_preview(text, step):
        started.set()
        if stop.is_set():
            after_stop.append(step)
        time.sleep(0.05)

    errors = []

    def work():
        try:
            engine.fill(PREFIX, SUFFIX, FillOptions(max_steps=40, entropy_bound=1e-9, max_hole_tokens=32),
                        should_stop=stop.is_set, on_preview=on_preview)  # fmt: skip
        except Cancelled as err:
            errors.append(err)

    thread = threading.Thread(target=work)
    thread.start()
    assert started.wait(10)
    stop.set()
    thread.join(10)
    assert errors, "the fill was not cancelled"
    assert len(after_stop) <= 1, after_stop  # at most the step under way when stop was set


@pytest.mark.parametrize("kind", ["fill", "rewrite"])
def test_the_caller_hears_one_call_per_step(engine, kind):
    """Issue 65 item 4: a caller that watches previews is called once per denoising step, the
    preview whose answer says whether to stop; ``should_stop`` is asked once, before the encoder
    (it was asked before each step as well: two calls a step)."""
    calls: list[str] = []

    def should_stop() -> bool:
        calls.append("stop")
        return False

    def on_preview(text: str, step: int) -> bool:
        calls.append(f"preview {step}")
        return False

    result = run(engine, kind, FillOptions(max_steps=6, entropy_bound=1e-9), should_stop, on_preview)
    steps = result.stats.steps
    assert steps > 1
    assert calls == ["stop"] + [f"preview {step}" for step in range(steps)]

    calls.clear()  # a preview's yes stops the fill before its next step
    with pytest.raises(Cancelled):
        run(engine, kind, FillOptions(max_steps=6, entropy_bound=1e-9), should_stop, lambda text, step: True)


def run(engine, kind, options, should_stop, on_preview):
    if kind == "fill":
        return engine.fill(PREFIX, SUFFIX, options, should_stop, on_preview)
    request = RewriteRequest(PREFIX, "x + y", SUFFIX, strength=1.0)
    return engine.rewrite(request, options, should_stop, on_preview)


def test_fill_holes_fills_every_marker_in_one_run(engine):
    text = "def add(a, b):\n    return <|hole|>\n\n\nresult = add(1, <|hole|>)\n"
    result = engine.fill_holes(text, options=FillOptions(max_hole_tokens=5, max_steps=4))
    assert len(result.middles) == 2
    assert "<|hole|>" not in result.text
    assert (
        result.text
        == "def add(a, b):\n    return "
        + result.middles[0]
        + "\n\n\nresult = add(1, "
        + result.middles[1]
        + ")\n"
    )
    assert result.stats.decoder_forwards <= 4


def test_fill_holes_with_a_custom_marker(engine):
    result = engine.fill_holes(
        "x = ??\ny = ??\n", marker="??", options=FillOptions(max_hole_tokens=3, max_steps=2)
    )
    assert len(result.middles) == 2 and "??" not in result.text


def test_fill_holes_without_markers_returns_the_text(engine):
    result = engine.fill_holes("x = 1\n")
    assert result.middles == [] and result.text == "x = 1\n"


def test_rewrite_at_strength_zero_keeps_the_selection(engine):
    selection = "total = width * height"
    result = engine.rewrite(
        RewriteRequest("def area(width, height):\n    ", selection, "\n    return total\n", 0.0)
    )
    assert result.text == selection


def test_rewrite_at_full_strength_denoises_every_slot(engine):
    result = engine.rewrite(RewriteRequest("x = ", "compute(1, 2)", "\n", 1.0), FillOptions(max_steps=4))
    assert result.stats.steps >= 1
    assert result.stats.tokens_per_forward > 0


def test_out_of_memory_degrades_to_one_shorter_candidate(engine, monkeypatch):
    calls = []
    original = engine._denoise

    def flaky(cache, request, *args, **kwargs):
        calls.append(request.canvas.shape[0])  # canvas rows: one per candidate hole length
        if len(calls) == 1:
            raise torch.OutOfMemoryError("simulated")
        return original(cache, request, *args, **kwargs)

    monkeypatch.setattr(engine, "_denoise", flaky)
    result = engine.fill(PREFIX, SUFFIX, FillOptions(max_hole_tokens=16, max_steps=3))
    assert calls == [3, 1]
    assert result.stats.candidates == 1


def test_an_error_inside_denoising_fails_that_fill_only(engine, monkeypatch):
    original = engine._denoise
    monkeypatch.setattr(engine, "_denoise", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        engine.fill(PREFIX, SUFFIX)
    monkeypatch.setattr(engine, "_denoise", original)
    assert isinstance(engine.fill(PREFIX, SUFFIX, FillOptions(max_steps=2)).text, str)


def test_a_fill_superseded_before_it_starts_runs_no_encoder(engine):
    with pytest.raises(Cancelled):
        engine.fill(PREFIX, SUFFIX, should_stop=lambda: True)
    assert engine.prefix_cache.token_ids == []


def test_a_canvas_past_the_cap_is_refused_before_any_model_work(engine, monkeypatch):
    import difill.engine.api as api
    from difill.engine.api import TooLarge

    monkeypatch.setattr(api, "MAX_CANVAS_TOKENS", 40)  # check_canvas reads it there
    calls = []
    original = engine._encode_and_denoise
    monkeypatch.setattr(engine, "_encode_and_denoise", lambda *a, **k: calls.append(1) or original(*a, **k))
    for request in (
        lambda: engine.rewrite(RewriteRequest("x = ", "compute(1, 2) + " * 10, "\n")),
        lambda: engine.fill_holes("a = <|hole|>\n" * 5, options=FillOptions(max_hole_tokens=16)),
        lambda: engine.fill("x = ", "\n", FillOptions(max_hole_tokens=64)),
    ):
        with pytest.raises(TooLarge, match="at most 40"):
            request()
    assert calls == []
    assert (
        engine.fill("x = ", "\n", FillOptions(max_hole_tokens=8, max_steps=2)).stats.steps >= 1
    )  # within it
    assert calls == [1]


def test_confident_length_stops_at_the_first_unsure_token():
    import math

    from difill.engine.infill import confident_length
    from difill.engine.sampler import DenoiseResult

    confidence = torch.log(torch.tensor([[0.9, 0.99, 0.2, 0.95, 0.9, 0.9]]))  # (1, 6)
    result = DenoiseResult(torch.zeros(1, 6, dtype=torch.long), torch.zeros(1, 6), 3, confidence)
    assert confident_length(result, 0, 0, 6, 0.0) == 6  # off
    assert confident_length(result, 0, 0, 6, 0.5) == 2  # the 0.2 ends it, later sure ones do not count
    assert confident_length(result, 0, 3, 3, 0.5) == 3  # a middle that starts after the unsure slot
    assert confident_length(result, 0, 0, 6, 0.1) == 6
    assert confident_length(result, 0, 0, 6, math.exp(0.0)) == 0  # nothing is surer than certain


def test_min_token_prob_shows_only_the_sure_part_of_the_same_middle(engine):
    def fill(min_prob: float):
        options = FillOptions(hole_candidates=(10,), max_steps=4, seed=3, min_token_prob=min_prob)
        return engine.fill(PREFIX, SUFFIX, options)

    full = fill(0.0)
    assert full.text
    assert fill(1e-12).text == full.text  # every token beats a vanishing bar
    assert fill(1.0).candidates == []  # no token is certain: nothing is shown
    for min_prob in (1e-4, 1e-3, 0.01, 0.05):
        cut = fill(min_prob)
        shown = cut.text.rstrip("\ufffd")  # a cut may split a multi-byte character
        assert full.text.startswith(shown)
        if cut.candidates and cut.text != full.text:
            assert not cut.candidates[0].complete  # a cut middle was not ended by the model


def test_a_checkpoints_own_cut_applies_when_the_options_leave_it_open(loaded):
    from dataclasses import replace

    sure_of_nothing = InfillEngine(replace(loaded, min_token_prob=1.0))
    options = FillOptions(hole_candidates=(10,), max_steps=4, seed=3, min_token_prob=None)
    assert sure_of_nothing.fill(PREFIX, SUFFIX, options).candidates == []
    assert sure_of_nothing.fill(PREFIX, SUFFIX, replace(options, min_token_prob=0.0)).text
    assert InfillEngine(loaded).fill(PREFIX, SUFFIX, options).text  # no cut named: whole middles


def test_a_context_block_is_read_before_the_prefix_and_kept_while_typing(engine):
    block = "# Path: lib/geo.py\n# def area(r):\n#     return 3.14 * r * r\n"
    options = FillOptions(max_hole_tokens=8, context_block=block)
    first = engine.fill("x = area(", ")\n", options)
    assert first.stats.context_tokens == len(encode(engine.tokenizer, block))
    assert engine.fill("x = area(", ")\n", FillOptions(max_hole_tokens=8)).stats.context_tokens == 0
    engine.fill("x = area(", ")\n", options)
    typed = engine.fill("x = area(2", ")\n", options)
    # The block stands at the head of the prefix, so typing after it keeps the prefix cache warm.
    assert typed.stats.reused_prefix_tokens >= 1 + typed.stats.context_tokens


def test_every_fill_reads_at_most_its_prefix_budget_and_the_models(engine):
    """fill, fill_holes and rewrite share one prefix budget: the options', capped by the model's.
    (The window starts at a line, so it may read a little less than the budget.)"""
    long_prefix = "x = 1\n" * 400
    ceiling = engine.loaded.max_prefix_tokens
    read: dict[int | None, list[int]] = {}
    for budget in (24, None, ceiling * 4):
        options = FillOptions(max_hole_tokens=4, max_steps=2, prefix_tokens=budget)
        read[budget] = [
            engine.fill(long_prefix, SUFFIX, options).stats.prefix_tokens,
            engine.fill_holes(long_prefix + "<|hole|>\n", options=options).stats.prefix_tokens,
            engine.rewrite(RewriteRequest(long_prefix, "y = 2\n", SUFFIX), options).stats.prefix_tokens,
        ]
    assert all(12 <= n <= 24 for n in read[24]), read
    assert all(ceiling // 2 <= n <= ceiling for n in read[None]), (read, ceiling)
    assert read[ceiling * 4] == read[None]  # a larger budget than the model's reads the model's
