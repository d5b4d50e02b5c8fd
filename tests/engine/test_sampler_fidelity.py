"""Fault 3 (the sampler is the checkpoint's) and fault 4 (special tokens) on the real-shape fixture."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from real_shape import GEMMA_SPECIALS, GEMMA_UNUSED, GEMMA_WHITESPACE
from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
    LinearTemperatureScheduleLogitsProcessor,
)

from difill.engine import infill as infill_module
from difill.engine.api import FillOptions, RewriteRequest
from difill.engine.canvas import build_canvas
from difill.engine.decoder import CanvasDecoder
from difill.engine.infill import InfillEngine
from difill.engine.noise import Noise
from difill.engine.prefix_cache import PrefixCache
from difill.engine.sampler import DenoiseRequest, denoise
from difill.engine.sampler_config import SamplerConfig, sampler_config, temperature_at
from difill.engine.tokens import encode


class SpyDecoder(CanvasDecoder):
    """The real decoder, recording the self-conditioning input and the logits of each pass."""

    def __init__(self, model, cache):
        super().__init__(model, cache)
        self.soft_inputs, self.recorded_logits = [], []

    def hidden(self, canvas, soft_embeddings):
        self.soft_inputs.append(None if soft_embeddings is None else soft_embeddings.clone())
        return super().hidden(canvas, soft_embeddings)

    def logits(self, hidden):
        out = super().logits(hidden)
        self.recorded_logits.append(out.clone())
        return out


def gemma_setup(loaded):
    tok, ids = loaded.tokenizer, loaded.ids
    cache = PrefixCache(loaded.model).encode([ids.bos, *encode(tok, "def add(a, b):\n    return ")]).cache
    suffix = encode(tok, "\n\nprint(add(1, 2))\n")
    canvas = build_canvas([6, suffix], 6 + len(suffix) + 1, ids, document_ends=True)
    return cache, canvas


# ---------------------------------------------------------------- fault 3: sampler fidelity


def test_self_conditioning_is_fed_the_tempered_distribution(gemma_loaded):
    """The stock sampler feeds the next pass softmax(logits / T); difill used to feed raw logits."""
    cache, canvas = gemma_setup(gemma_loaded)
    spy = SpyDecoder(gemma_loaded.model, cache)
    config = SamplerConfig(max_steps=2, entropy_bound=1e-9, t_max=0.8, t_min=0.4, stock_schedule=True)
    banned = np.array(gemma_loaded.ids.banned_in_hole, dtype=np.int64)
    request = DenoiseRequest(canvas.ids[None], canvas.clamp_mask[None], banned, gemma_loaded.ids.vocab_size)
    denoise(spy, request, config, Noise(0))
    assert spy.soft_inputs[0] is None and spy.soft_inputs[1] is not None
    raw = spy.recorded_logits[0][:, : gemma_loaded.ids.vocab_size].clone()
    raw[:, torch.from_numpy(banned)] = -1e4
    weight = gemma_loaded.model.model.decoder.embed_tokens.weight
    scale = gemma_loaded.model.model.decoder.embed_tokens.embed_scale
    hole = torch.from_numpy(~canvas.clamp_mask)
    tempered = (raw / temperature_at(0, config)).softmax(-1) @ weight * scale
    untempered = raw.softmax(-1) @ weight * scale
    fed = spy.soft_inputs[1][0][hole]
    assert torch.allclose(fed, tempered, atol=1e-4)
    assert not torch.allclose(fed, untempered, atol=1e-3)  # the two differ: the check discriminates


def test_the_stock_temperature_schedule_matches_transformers():
    config = SamplerConfig(max_steps=48, t_max=0.8, t_min=0.4, stock_schedule=True)
    stock = LinearTemperatureScheduleLogitsProcessor(t_min=0.4, t_max=0.8, max_denoising_steps=48)
    ones = torch.ones(1, 1)
    for step in range(48):
        expected = 1 / stock(None, ones, cur_step=48 - step).item()  # stock counts steps remaining
        assert temperature_at(step, config) == pytest.approx(expected)


def test_the_checkpoint_generation_config_is_the_starting_point(gemma_loaded, loaded):
    real = gemma_loaded.sampler
    assert (real.max_steps, real.entropy_bound, real.t_max, real.t_min) == (48, 0.1, 0.8, 0.4)
    assert real.tempered_self_conditioning and real.stock_schedule
    typing = sampler_config(real, FillOptions(max_steps=12))  # difill's step cap on top
    assert typing.max_steps == 12 and typing.entropy_bound == 0.1 and not typing.revise
    assert sampler_config(real, FillOptions(max_steps=100)).max_steps == 48
    assert sampler_config(real, FillOptions(entropy_bound=0.3)).entropy_bound == 0.3
    own = loaded.sampler  # difill's tiny model: generation_config unset, trained with raw logits
    assert (own.max_steps, own.entropy_bound, own.t_min) == (12, 0.5, 0.1)
    assert not own.tempered_self_conditioning and not own.stock_schedule


class ScriptedDecoder:
    """A decoder whose logits are scripted per pass: a confident token per open slot, None = unsure."""

    def __init__(self, script, vocab):
        self.script, self.vocab, self.passes = script, vocab, 0

    def open_logits(self, canvas, soft, open_slots, no_filler=None):
        self.passes += 1
        tokens = self.script[min(self.passes, len(self.script)) - 1]  # the token each open slot wants
        n = len(open_slots[0])
        out = np.zeros((n, self.vocab), dtype=np.float32)  # (N, V)
        for row, token in enumerate(tokens[:n]):
            if token is not None:
                out[row] = -30.0
                out[row, token] = 30.0
        return out

    def soft_embeddings(self, canvas, open_slots, open_logits):
        return None


def test_revise_re_decides_committed_slots_like_the_stock_sampler():
    """First pass: slot 0 wants 5 (confident), slots 1-3 are unsure; later passes: slot 0 wants 7."""
    canvas = np.zeros((1, 5), dtype=np.int64)
    clamp = np.array([[False, False, False, False, True]])
    script = [[5, None, None, None], [7, None, None, None], [7, None, None, None]]

    def run(revise):
        config = SamplerConfig(max_steps=3, entropy_bound=0.5, revise=revise)
        decoder = ScriptedDecoder(script, vocab=16)
        request = DenoiseRequest(canvas, clamp, np.array([], dtype=np.int64), 16)
        return int(denoise(decoder, request, config, Noise(0)).canvas[0, 0])

    assert run(revise=False) == 5  # monotone: once committed, slot 0 keeps its first token
    assert run(revise=True) == 7  # stock: every step re-decides it


def test_edits_revise_by_default_and_fills_do_not(gemma_loaded, monkeypatch):
    seen = []
    real = infill_module.denoise

    def spy(*args, **kwargs):
        seen.append(args[2].revise)
        return real(*args, **kwargs)

    monkeypatch.setattr(infill_module, "denoise", spy)
    engine = InfillEngine(gemma_loaded)
    options = FillOptions(max_hole_tokens=4, max_steps=2)
    engine.fill("x = ", "\n", options)
    engine.rewrite(RewriteRequest("x = ", "compute(1)", "\n", 0.5), options)
    engine.rewrite(RewriteRequest("x = ", "compute(1)", "\n", 0.5), FillOptions(max_steps=2, revise=False))
    assert seen == [False, True, False]


# ---------------------------------------------------------------- fault 4: special tokens


def test_every_special_added_and_unused_token_is_banned_by_flag_and_table(gemma_loaded):
    tok, ids = gemma_loaded.tokenizer, gemma_loaded.ids
    banned = set(ids.banned_in_hole)
    for token in (*GEMMA_SPECIALS, *GEMMA_UNUSED):
        assert tok.convert_tokens_to_ids(token) in banned, token
    for token in GEMMA_WHITESPACE:  # added text tokens: indentation needs them
        assert tok.convert_tokens_to_ids(token) not in banned, repr(token)
    for text in ("def", "return", " x", "("):
        assert not set(encode(tok, text)) & banned, text
    assert len(tok) in banned and ids.vocab_size - 1 in banned  # rows with no token


def test_a_checkpoint_without_a_filler_gets_none(gemma_loaded):
    """Without <|fill|> no token is forced into runs before clamped code (eos was, before)."""
    assert gemma_loaded.ids.filler == ()
    assert gemma_loaded.ids.eos in gemma_loaded.ids.banned_in_hole


def test_no_special_token_enters_a_hole_or_a_suggestion(gemma_loaded):
    engine = InfillEngine(gemma_loaded)
    banned = np.array(gemma_loaded.ids.banned_in_hole, dtype=np.int64)
    cache, canvas = gemma_setup(gemma_loaded)
    for seed in range(2):
        request = DenoiseRequest(canvas.ids[None], canvas.clamp_mask[None], banned, gemma_loaded.ids.vocab_size)
        result = denoise(CanvasDecoder(gemma_loaded.model, cache), request,
                         SamplerConfig(max_steps=3, greedy=False), Noise(seed))  # fmt: skip
        assert not np.isin(result.canvas[0][~canvas.clamp_mask], banned).any()
    fill = engine.fill("def f(x):\n    return ", "\n", FillOptions(max_hole_tokens=6, max_steps=3))
    for candidate in fill.candidates:
        assert not any(s in candidate.text for s in GEMMA_SPECIALS + GEMMA_UNUSED), candidate.text


def test_decoding_skips_special_tokens(gemma_loaded):
    tok = gemma_loaded.tokenizer
    engine = InfillEngine(gemma_loaded)
    specials = [tok.convert_tokens_to_ids(t) for t in ("<eos>", "<|turn>", "<turn|>", "<|channel>")]
    assert engine._decode([*encode(tok, "x + 1"), *specials]) == "x + 1"
