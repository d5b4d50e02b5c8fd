"""The denoising loop on a real (tiny, random) DiffusionGemma."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from difill.engine.api import Cancelled
from difill.engine.canvas import build_canvas
from difill.engine.decoder import CanvasDecoder
from difill.engine.noise import Noise
from difill.engine.prefix_cache import PrefixCache
from difill.engine.sampler import DenoiseRequest, choose_accepted, denoise, less_than
from difill.engine.sampler_config import SamplerConfig
from difill.engine.tokens import encode


@pytest.fixture()
def setup(loaded):
    tok, ids, model = loaded.tokenizer, loaded.ids, loaded.model
    cache = PrefixCache(model).encode([ids.bos, *encode(tok, "def add(a, b):\n    return ")]).cache
    suffix = encode(tok, "\n\nprint(add(1, 2))\n")
    canvas = build_canvas([12, suffix], 12 + len(suffix) + 1, ids, document_ends=True)

    decoder = CanvasDecoder(model, cache)
    banned = np.array(ids.banned_in_hole, dtype=np.int64)
    return decoder, canvas, banned, ids


def run(setup, **kwargs):
    decoder, canvas, banned, ids = setup
    steps = []
    config = kwargs.pop("config", SamplerConfig(max_steps=6))
    request = DenoiseRequest(canvas.ids[None], canvas.clamp_mask[None], banned, ids.vocab_size)
    result = denoise(
        decoder, request, config, Noise(0),
        on_step=lambda step, best: steps.append(best.copy()), **kwargs,
    )  # fmt: skip
    return result, steps


def test_clamped_suffix_is_identical_after_every_step(setup):
    _, canvas, _, _ = setup
    result, steps = run(setup)
    assert steps, "the loop ran no step"
    clamp = canvas.clamp_mask
    for best in steps:
        assert np.array_equal(best[0][clamp], canvas.ids[clamp])
    assert np.array_equal(result.canvas[0][clamp], canvas.ids[clamp])


def test_no_banned_token_in_the_hole(setup):
    _, canvas, banned, _ = setup
    for seed in range(3):
        decoder, _, _, ids = setup
        request = DenoiseRequest(canvas.ids[None], canvas.clamp_mask[None], banned, ids.vocab_size)
        result = denoise(decoder, request, SamplerConfig(max_steps=4, greedy=False),
                         Noise(seed))  # fmt: skip
        hole = result.canvas[0][~canvas.clamp_mask]
        assert not np.isin(hole, banned).any()


def test_every_hole_slot_is_committed_within_the_step_cap(setup):
    _, canvas, banned, _ = setup
    # A near-zero entropy bound accepts one slot per step on its own: only the forced minimum
    # (ceil(open / steps_left)) can commit all 12 hole slots in 3 steps, so the cap is what binds.
    result, steps = run(setup, config=SamplerConfig(max_steps=3, entropy_bound=1e-9))
    assert result.steps == len(steps) == 3
    hole = ~canvas.clamp_mask
    # A slot still open after the last step is renoised with a random id; a committed one keeps
    # the token the last step's preview showed.  So the returned hole is exactly that preview.
    assert np.array_equal(result.canvas[0][hole], steps[-1][0][hole])
    assert not np.isin(result.canvas[0][hole], banned).any()


def test_cancel_stops_between_steps(setup):
    calls = []

    def should_stop():
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(Cancelled):
        run(setup, should_stop=should_stop, config=SamplerConfig(max_steps=12, entropy_bound=1e-9))
    assert len(calls) == 3  # two steps ran, the third check stopped it


def test_entropy_bound_accepts_low_entropy_slots_first():
    entropy = np.array([[0.5, 0.01, 2.0, 0.02]])
    open_mask = np.array([[True, True, True, True]])
    accepted = choose_accepted(entropy, open_mask, bound=0.1, min_accept=1)
    # sorted: 0.01, 0.02, 0.5, 2.0 -> cumulative minus max: 0, 0.01, 0.03, 0.53
    assert accepted.tolist() == [[True, True, False, True]]


def test_min_accept_forces_progress_when_everything_is_uncertain():
    entropy = np.array([[5.0, 4.0, 6.0]])
    accepted = choose_accepted(entropy, np.ones((1, 3), dtype=bool), bound=0.0, min_accept=2)
    assert accepted.tolist() == [[True, True, False]]


def test_closed_slots_are_never_accepted():
    entropy = np.array([[0.0, 0.0, 0.0]])
    open_mask = np.array([[False, True, False]])
    assert choose_accepted(entropy, open_mask, bound=10.0, min_accept=3).tolist() == [[False, True, False]]


def test_min_accept_may_be_a_tensor_per_row():
    entropy = np.array([[5.0, 4.0, 6.0], [5.0, 4.0, 6.0]])
    open_mask = np.ones((2, 3), dtype=bool)
    accepted = choose_accepted(entropy, open_mask, bound=0.0, min_accept=np.array([[2], [3]]))
    assert accepted.tolist() == [[True, True, False], [True, True, True]]


def test_less_than_answers_as_a_python_float_comparison():
    threshold = 0.005  # not a float32: the float32 nearest it is below it
    nearest = np.float32(threshold)
    neighbours = [np.nextafter(nearest, np.float32(d)) for d in (-1.0, 1.0)]
    for value in (nearest, *neighbours, np.float32(0.25), np.float32(0.0)):
        assert less_than(value, threshold) == (float(value) < threshold), float(value)
    assert less_than(nearest, threshold) and not bool(nearest < threshold)  # the case it is for
    assert not less_than(np.float32(0.5), 0.5) and less_than(np.float32(0.25), 0.5)


def test_filler_constraints_keep_each_hole_one_middle_then_filler():
    from difill.engine.sampler import filler_constraints

    F = 9  # filler id
    #          hole hole hole hole | clamp | hole hole hole
    current = np.array([[5, F, 0, 0, 7, 0, 0, 6]])
    committed = np.array([[True, True, False, False, True, False, False, True]])
    clamp = np.array([[False, False, False, False, True, False, False, False]])
    after_filler, before_text = filler_constraints(current, committed, clamp, F)
    # Slots 2-3 follow the filler at 1 in the first hole; the second hole has no filler yet.
    assert after_filler.tolist() == [[False, False, True, True, False, False, False, False]]
    # Slots 5-6 precede committed text at 7 in the second hole: no filler there.
    assert before_text.tolist() == [[False, False, False, False, False, True, True, False]]


class OnePassDecoder:
    """Scripted logits: each open slot confidently wants its token from ``wants``, on every pass."""

    def __init__(self, wants, vocab):
        self.wants, self.vocab = wants, vocab

    def open_logits(self, canvas, soft, open_slots, no_filler=None):
        n = len(open_slots[0])
        out = np.full((n, self.vocab), -30.0, dtype=np.float32)  # (N, V)
        out[np.arange(n), self.wants[:n]] = 30.0
        return out

    def soft_embeddings(self, canvas, open_slots, open_logits):
        return None


def test_text_accepted_with_a_filler_before_it_becomes_filler():
    F = 9  # filler id
    # Four hole slots want 5, filler, 6, 7, all near-certain: one step accepts them together.
    canvas = np.zeros((1, 5), dtype=np.int64)
    clamp = np.array([[False, False, False, False, True]])
    request = DenoiseRequest(canvas, clamp, np.array([], dtype=np.int64), 16, filler_id=F)
    result = denoise(OnePassDecoder([5, F, 6, 7], vocab=16), request, SamplerConfig(max_steps=3),
                     Noise(0))  # fmt: skip
    assert result.steps == 1
    assert result.canvas[0, :4].tolist() == [5, F, F, F]


def test_no_text_follows_a_filler_in_a_denoised_hole(setup):
    decoder, canvas, banned, ids = setup
    filler = ids.filler[0]
    hole_slots = np.flatnonzero(~canvas.clamp_mask)
    for seed in range(3):
        # The random model may never write a filler itself, so one is committed up front, at a
        # different slot per seed, with open slots on both sides of it: the rule is always tested.
        planted = int(hole_slots[3 + 2 * seed])
        start = canvas.ids.copy()
        start[planted] = filler
        kept = np.zeros_like(canvas.clamp_mask)
        kept[planted] = True
        request = DenoiseRequest(start[None], canvas.clamp_mask[None], banned, ids.vocab_size,
                                 initially_committed=kept[None], filler_id=filler)  # fmt: skip
        result = denoise(
            decoder, request, SamplerConfig(max_steps=5), Noise(seed)
        )
        hole = result.canvas[0][hole_slots].tolist()
        first = hole.index(filler)
        assert first <= planted - int(hole_slots[0])
        assert all(t == filler for t in hole[first:]), (seed, hole)


def test_a_cut_fill_stops_early_and_shows_the_same_text(engine, monkeypatch):
    """Once every slot before the first unsure token is committed, later passes change nothing shown."""
    import difill.engine.infill as infill_module
    from difill.engine.api import FillOptions

    prefix, suffix = "def area(width, height):\n    return ", "\n\n\nprint(area(2, 3))\n"
    real = infill_module.denoise

    def fills(min_prob: float, seed: int):
        options = FillOptions(hole_candidates=(16,), max_steps=12, seed=seed, min_token_prob=min_prob)
        with monkeypatch.context() as patch:
            patch.setattr(
                infill_module,
                "denoise",
                lambda decoder, request, *a, **k: real(decoder, replace(request, cut_below=None), *a, **k),
            )
            full = engine.fill(prefix, suffix, options)
        return engine.fill(prefix, suffix, options), full

    fewer = 0
    for min_prob in (1e-4, 3e-4, 1e-3, 3e-3):
        for seed in range(3):
            early, full = fills(min_prob, seed)
            assert early.text == full.text
            assert early.stats.steps <= full.stats.steps
            fewer += early.stats.steps < full.stats.steps
    assert fewer > 0, "no fill stopped early: the test's probabilities miss the random model's"


def test_entropy_from_the_steps_log_probs_is_the_entropy_of_its_logits_bit_for_bit():
    from difill.engine.slot_rules import entropy_of, entropy_of_logp, log_softmax

    logits = np.random.default_rng(0).standard_normal((5, 300), dtype=np.float32) * 4  # (N, V)
    logits[:, :7] = -np.inf  # banned tokens, as the sampler masks them
    logits[2, 10:] = -np.inf  # a slot with few tokens allowed (token healing)
    assert np.array_equal(entropy_of_logp(log_softmax(logits)), entropy_of(logits))


class ScriptedDecoder:
    """Logits per pass and slot: ``script(pass_number, column)`` -> (token, margin): that token
    over every other by ``margin`` (30: certain, 1: a guess the entropy bound leaves open)."""

    def __init__(self, script, vocab):
        self.script, self.vocab, self.passes = script, vocab, 0

    def open_logits(self, canvas, soft, open_slots, no_filler=None):
        self.passes += 1
        out = np.zeros((len(open_slots[0]), self.vocab), dtype=np.float32)  # (N, V)
        for row, column in enumerate(open_slots[1].tolist()):
            token, margin = self.script(self.passes, column)
            out[row, token] = margin
        return out

    def soft_embeddings(self, canvas, open_slots, open_logits):
        return None


def settled_run(script, passes, cut_below=None, slots=8, max_steps=12):
    canvas = np.zeros((1, slots + 1), dtype=np.int64)
    clamp = np.zeros((1, slots + 1), dtype=bool)
    clamp[0, -1] = True  # the suffix
    request = DenoiseRequest(canvas, clamp, np.array([], dtype=np.int64), 16, cut_below=cut_below)
    decoder = ScriptedDecoder(script, vocab=16)
    config = SamplerConfig(max_steps=max_steps, settled_passes=passes)
    return denoise(decoder, request, config, Noise(0))


def test_a_settled_text_ends_the_loop_with_the_text_every_pass_would_give():
    """Every slot is a guess (left open by the entropy bound, one a pass committed to make
    progress) with the same argmax each pass: from the third pass the text is settled."""
    script = lambda p, column: (1 + column % 5, 3.0)  # noqa: E731
    settled, every = settled_run(script, passes=2), settled_run(script, passes=0)
    assert settled.steps == 3 and every.steps > settled.steps
    assert settled.canvas[0, :8].tolist() == every.canvas[0, :8].tolist() == [1 + c % 5 for c in range(8)]
    # Slots still open return the pass's own log-probs, not the zeros of an uncommitted slot.
    assert bool((settled.token_confidence[0, :8] < 0).all())


def test_slots_past_the_ghost_text_cut_may_change_without_unsettling_it():
    """Slot 0 is sure; slot 1, a guess under the cut, is where the ghost text ends; the slots
    after it are surer guesses (committed first, one a pass) whose open ones flip every pass:
    what is shown is settled all the same.  A flip inside the shown text is not."""
    cut = math.log(0.25)

    def past_the_cut(p, column):
        return [(3, 30.0), (4, 0.5)][column] if column < 2 else (5 + p % 2, 1.0)

    early = settled_run(past_the_cut, passes=2, cut_below=cut)
    assert early.steps == 3 and early.canvas[0, :2].tolist() == [3, 4]

    def inside(p, column):
        return [(3, 30.0), (5 + p % 2, 0.5)][column] if column < 2 else (7, 1.0)  # slot 1 flips

    assert settled_run(inside, passes=2, cut_below=cut).steps > 3
    assert settled_run(past_the_cut, passes=0, cut_below=cut).steps > 3  # off: the usual stop


def test_slots_at_least_as_sure_as_commit_probability_are_all_committed_in_one_pass(setup):
    every_pass, _ = run(setup, config=SamplerConfig(max_steps=6, entropy_bound=1e-9, settled_passes=0))
    # Any probability clears a threshold this low: every hole slot commits in the first pass.
    one_pass, _ = run(setup, config=SamplerConfig(max_steps=6, entropy_bound=1e-9, settled_passes=0,
                                                  commit_probability=1e-30))  # fmt: skip
    assert every_pass.steps > 1 and one_pass.steps == 1
    never, _ = run(setup, config=SamplerConfig(max_steps=6, entropy_bound=1e-9, settled_passes=0,
                                               commit_probability=1.0 - 1e-12))  # fmt: skip
    assert np.array_equal(never.canvas, every_pass.canvas) and never.steps == every_pass.steps
