"""Canvases seeded from drafts (issue 22) on the tiny random DiffusionGemma.

A random model agrees with nothing, so the tests that need agreement wrap its decoder: the real
forward runs, and the logits of a slot get a large bonus for the token ``target`` holds there when
the canvas already shows that token - a model that is sure exactly where a draft is right.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from difill.engine.api import Cancelled, FillOptions
from difill.engine.canvas import build_canvas, seeded_canvas
from difill.engine.decoder import CanvasDecoder
from difill.engine.noise import Noise
from difill.engine.prefix_cache import PrefixCache, expand_cache
from difill.engine.sampler import DenoiseRequest, denoise
from difill.engine.sampler_config import SamplerConfig
from difill.engine.tokens import encode

PREFIX = "def area(width, height):\n    return "
SUFFIX = "\n\n\nprint(area(2, 3))\n"
HOLE = 8


class AgreeingDecoder:
    """The real decoder, plus certainty for ``target`` (B, L) wherever the canvas already holds it.

    ``bonus`` (B, L), optional: the logit added there (default 1000: certain).
    """

    open_logits = CanvasDecoder.open_logits  # NumPy in and out, around this class's pass_logits
    top_k, sent_ids = 0, None  # what open_logits reads: whole rows, as on a CPU
    pass_logits = CanvasDecoder.pass_logits  # one pass: this class's hidden, then logits

    def __init__(self, real: CanvasDecoder, target: np.ndarray, bonus: np.ndarray | None = None) -> None:
        self.real, self.target = real, torch.from_numpy(target)
        self.bonus = torch.full(target.shape, 1000.0) if bonus is None else torch.from_numpy(bonus)

    def on_device(self, array):
        return self.real.on_device(array)

    def hidden(self, canvas, soft):
        hidden = self.real.hidden(canvas, soft)  # (B, L, D)
        target = self.target.expand_as(canvas)
        bonus = torch.where(canvas == target, self.bonus.expand_as(canvas), 0.0).to(hidden.dtype)
        return torch.cat(
            [hidden, bonus[..., None], target[..., None].to(hidden.dtype)], dim=-1
        )  # (B, L, D + 2)

    def logits(self, hidden):
        logits = self.real.logits(hidden[..., :-2])  # (N, V)
        rows = torch.arange(hidden.shape[0])
        logits[rows, hidden[:, -1].long()] += hidden[:, -2].float()
        return logits

    def soft_embeddings(self, canvas, open_mask, open_logits):
        return self.real.soft_embeddings(canvas, open_mask, open_logits)


@pytest.fixture()
def rows(loaded):
    """Two rows over one prefix: noise-seeded, and seeded from a draft of HOLE tokens."""
    tok, ids, model = loaded.tokenizer, loaded.ids, loaded.model
    cache = PrefixCache(model).encode([ids.bos, *encode(tok, PREFIX)]).cache
    suffix = encode(tok, SUFFIX)[:6]
    canvas = build_canvas([HOLE, suffix], HOLE + len(suffix), ids, document_ends=False)
    draft = encode(tok, "width * height * 2 + 1 - 3")[:HOLE]
    assert len(draft) == HOLE
    seeded, mask = seeded_canvas(canvas, draft)
    ids_2 = np.stack([canvas.ids, seeded.ids])  # (2, L)
    clamp = np.stack([canvas.clamp_mask, seeded.clamp_mask])  # (2, L)
    seeded_mask = np.stack([np.zeros_like(mask), mask])  # (2, L)
    return CanvasDecoder(model, expand_cache(cache, 2)), ids_2, clamp, seeded_mask, ids


def run(decoder, canvas, clamp, seeded, ids, config=None, cut_below=None, **kwargs):
    request = DenoiseRequest(
        canvas, clamp, np.array(ids.banned_in_hole, dtype=np.int64), ids.vocab_size, seeded=seeded,
        filler_id=ids.filler[0], cut_below=cut_below,
    )  # fmt: skip
    return denoise(decoder, request, config or SamplerConfig(max_steps=6), Noise(0), **kwargs)


def test_seeded_canvas_writes_the_draft_then_filler(loaded):
    ids = loaded.ids
    canvas = build_canvas([5, [11, 12]], 7, ids, document_ends=False)
    seeded, mask = seeded_canvas(canvas, [40, 41])
    assert seeded.ids[:5].tolist() == [40, 41, ids.filler[0], ids.filler[0], ids.filler[0]]
    assert seeded.ids[5:].tolist() == [11, 12] and mask.tolist() == [True] * 5 + [False] * 2
    assert canvas.ids[0] != 40  # the original is untouched
    long, _ = seeded_canvas(canvas, list(range(40, 50)))
    assert long.ids[:5].tolist() == [40, 41, 42, 43, 44]  # cut to the hole


def test_the_first_forward_reads_the_draft_in_its_row(rows):
    decoder, canvas, clamp, seeded, ids = rows
    seen = []

    class Spy(CanvasDecoder):
        def hidden(self, current, soft):
            seen.append(current.numpy().copy())
            return super().hidden(current, soft)

    spy = Spy(decoder.model, decoder.cache)
    run(spy, canvas, clamp, seeded, ids)
    hole = seeded[1]
    assert np.array_equal(seen[0][1][hole], canvas[1][hole])  # the draft, not noise
    assert not np.array_equal(seen[0][0][hole], canvas[1][hole])  # the noise row is noise


def test_clamped_slots_are_untouched_in_every_row(rows):
    decoder, canvas, clamp, seeded, ids = rows
    result = run(decoder, canvas, clamp, seeded, ids)
    assert np.array_equal(result.canvas[clamp], canvas[clamp])


def test_a_draft_the_model_agrees_with_is_committed_in_one_forward(rows):
    decoder, canvas, clamp, seeded, ids = rows
    agreeing = AgreeingDecoder(decoder, canvas[1:2])  # sure of the draft wherever it is shown
    result = run(agreeing, canvas, clamp, seeded, ids)
    assert result.steps == 1
    hole = seeded[1]
    assert np.array_equal(result.canvas[1][hole], canvas[1][hole])  # every draft token kept
    # The noise row was still open; it is dropped, not returned half denoised.
    assert result.done.tolist() == [False, True]


def test_without_a_draft_row_the_same_model_takes_the_whole_schedule(rows):
    decoder, canvas, clamp, seeded, ids = rows
    agreeing = AgreeingDecoder(decoder, canvas[1:2])
    result = run(agreeing, canvas, clamp, None, ids)  # both rows start from noise
    assert result.steps > 1  # noise is rarely the target: the random model is unsure


def test_a_draft_partly_right_is_mended_not_kept_whole(rows):
    decoder, canvas, clamp, seeded, ids = rows
    target = canvas[1:2].copy()
    hole_slots = np.flatnonzero(seeded[1])
    wrong = hole_slots[HOLE // 2 :]
    target[0, wrong] = (canvas[1, wrong] + 1) % ids.vocab_size  # the draft's second half is wrong
    result = run(
        AgreeingDecoder(decoder, target), canvas, clamp, seeded, ids, config=SamplerConfig(max_steps=6)
    )
    assert result.steps > 1  # not verified in one forward
    right = hole_slots[: HOLE // 2]
    assert np.array_equal(result.canvas[1][right], canvas[1][right])  # the right half was kept
    assert result.done is None or bool(result.done.all())


def test_cancel_stops_a_seeded_fill_between_steps(rows):
    decoder, canvas, clamp, seeded, ids = rows
    calls = []

    def should_stop():
        calls.append(1)
        return len(calls) > 1

    with pytest.raises(Cancelled):
        run(decoder, canvas, clamp, seeded, ids, config=SamplerConfig(max_steps=6, entropy_bound=1e-9),
            should_stop=should_stop)  # fmt: skip
    assert len(calls) == 2


def test_fill_runs_draft_rows_beside_the_noise_rows(engine):
    options = FillOptions(max_hole_tokens=8, max_steps=4, drafts=("width * height", "height"))
    result = engine.fill(PREFIX, SUFFIX, options)
    assert result.stats.candidates == 3 + 2 and result.stats.draft_rows == 2
    assert not result.stats.draft_verified  # a random model is sure of nothing
    assert result.stats.decoder_forwards <= 4  # one batch: the draft rows add no forward
    assert {c.source for c in result.candidates} <= {"model", "draft:0", "draft:1"}


def test_fill_returns_a_verified_draft_as_the_candidate_of_its_row(engine, monkeypatch):
    draft = "width * height"
    tokens = encode(engine.tokenizer, draft)
    real_decoder = engine._decoder

    def agreeing(cache, request, config):
        decoder = real_decoder(cache, request, config)
        # Row layout: the hole starts at slot 0; sure of the draft, then of the filler.
        target = np.full((1, 64), engine.ids.filler[0], dtype=np.int64)
        target[0, : len(tokens)] = tokens
        return AgreeingDecoderSlots(decoder, target)

    monkeypatch.setattr(engine, "_decoder", agreeing)
    options = FillOptions(hole_candidates=(len(tokens) + 3,), max_steps=6, drafts=(draft,), heal=False)
    result = engine.fill(PREFIX, SUFFIX, options)
    assert result.stats.decoder_forwards == 1 and result.stats.draft_verified
    assert [(c.text, c.source) for c in result.candidates] == [(draft, "draft:0")]
    assert result.stats.tokens_per_forward == len(tokens)


class AgreeingDecoderSlots(AgreeingDecoder):
    """AgreeingDecoder for canvases of any length: ``target`` is cut to the canvas's slots."""

    def hidden(self, canvas, soft):
        self.target, self.bonus = self.target[:, : canvas.shape[1]], self.bonus[:, : canvas.shape[1]]
        return super().hidden(canvas, soft)


def test_a_draft_holding_special_token_text_is_plain_text(engine):
    draft_ids = engine._draft_ids("x <|hole|> y <|fill|>")
    assert draft_ids == encode(engine.tokenizer, "x <|hole|> y <|fill|>")
    assert not set(draft_ids) & (set(engine.ids.banned_in_hole) | set(engine.ids.filler))


def test_a_draft_shown_only_in_part_is_not_verified(rows):
    """With the ghost-text cut, the draft's sure first half may be all that would show; the model
    agrees with the second half but is unsure of it, so the draft is not verified as it stands and
    the other rows keep running."""
    decoder, canvas, clamp, seeded, ids = rows
    hole_slots = np.flatnonzero(seeded[1])
    bonus = np.full(canvas[1:2].shape, 1000.0, dtype=np.float32)
    # The draft's token is the argmax there, at probability ~0.3 (< the 0.5 cut).
    bonus[0, hole_slots[HOLE // 2 :]] = math.log(0.43 * ids.vocab_size)
    agreeing = AgreeingDecoder(decoder, canvas[1:2], bonus)
    result = run(agreeing, canvas, clamp, seeded, ids, cut_below=math.log(0.5))
    assert result.done is None or bool(result.done.all())
    assert np.array_equal(result.canvas[1][hole_slots[: HOLE // 2]], canvas[1][hole_slots[: HOLE // 2]])
