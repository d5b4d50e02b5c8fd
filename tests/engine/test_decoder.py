"""CanvasDecoder computes exactly what DiffusionGemmaForBlockDiffusion.forward computes."""

from __future__ import annotations

import numpy as np
import torch

from difill.engine.decoder import CanvasDecoder
from difill.engine.hf_compat import cache_kwargs
from difill.engine.prefix_cache import PrefixCache, expand_cache
from difill.engine.tokens import encode


def test_logits_equal_the_stock_forward_with_and_without_self_conditioning(loaded):
    tok, model, ids = loaded.tokenizer, loaded.model, loaded.ids
    cache = PrefixCache(model).encode([ids.bos, *encode(tok, "def f(x):\n    return x + 1\n")]).cache
    batch_cache = expand_cache(cache, 2)
    canvas = torch.randint(0, ids.vocab_size, (2, 10), generator=torch.Generator().manual_seed(0))
    decoder = CanvasDecoder(model, batch_cache)
    with torch.inference_mode():
        stock = model(**cache_kwargs(batch_cache), decoder_input_ids=canvas).logits
        ours = decoder.logits(decoder.hidden(canvas, None))
        assert torch.allclose(stock, ours, atol=1e-5)

        sc_logits = torch.randn(2, 10, ids.vocab_size, generator=torch.Generator().manual_seed(1))
        stock_sc = model(
            **cache_kwargs(batch_cache), decoder_input_ids=canvas, self_conditioning_logits=sc_logits
        ).logits
        all_open = torch.ones(2, 10, dtype=torch.bool)
        slots = np.nonzero(all_open.numpy())  # (N,), (N,): the sampler's side is NumPy
        soft = decoder.soft_embeddings(canvas.numpy(), slots, sc_logits[all_open].numpy())
        assert torch.allclose(stock_sc, decoder.logits(decoder.hidden(canvas, soft)), atol=1e-4)
        # The sampler's NumPy boundary: the open slots' rows of the same logits, row-major.
        open_logits = decoder.open_logits(canvas.numpy(), soft, slots)  # (N, V)
        assert open_logits.dtype == np.float32
        assert torch.allclose(stock_sc[all_open], torch.from_numpy(open_logits), atol=1e-4)


def test_closed_slots_self_condition_on_their_own_embedding(loaded):
    model, ids = loaded.model, loaded.ids
    cache = PrefixCache(model).encode([ids.bos, 50, 60]).cache
    canvas = torch.tensor([[70, 80, 90]])
    decoder = CanvasDecoder(model, cache)
    one_hot = torch.full((1, 3, ids.vocab_size), -1e4)
    one_hot.scatter_(-1, canvas.unsqueeze(-1), 0.0)
    with torch.inference_mode():
        stock = model(
            **cache_kwargs(cache), decoder_input_ids=canvas, self_conditioning_logits=one_hot
        ).logits
        open_mask = torch.tensor([[False, True, False]])
        slots = np.nonzero(open_mask.numpy())  # (N,), (N,)
        soft = decoder.soft_embeddings(canvas.numpy(), slots, one_hot[open_mask].numpy())
        assert torch.allclose(stock, decoder.logits(decoder.hidden(canvas, soft)), atol=1e-4)


def test_decoder_leaves_the_prefix_cache_unchanged(loaded):
    model, ids = loaded.model, loaded.ids
    cache = PrefixCache(model).encode([ids.bos, 50, 60, 70]).cache
    with torch.inference_mode():
        CanvasDecoder(model, cache).hidden(torch.tensor([[1, 2, 3]]), None)
    assert cache.get_seq_length() == 4


def test_positions_kept_across_passes_give_the_stock_hidden_states_bit_for_bit(loaded):
    from difill.engine.decoder import conditioned_inputs, decoder_layers

    model, ids = loaded.model, loaded.ids
    cache = PrefixCache(model).encode([ids.bos, 50, 60, 70]).cache
    decoder = CanvasDecoder(model, cache)
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for length in (6, 6, 9, 6):  # kept for the second pass; a new length makes them anew
            canvas = torch.randint(0, ids.vocab_size, (1, length), generator=generator)
            ours = decoder.hidden(canvas, None)
            positions = torch.arange(4, 4 + length)[None]  # (1, L) after the 4 cached tokens
            stock = decoder_layers(decoder.decoder, conditioned_inputs(decoder.decoder, canvas, None),
                                   positions, None, cache)  # fmt: skip
            assert torch.equal(ours, stock)


def test_a_fill_is_the_same_with_positions_made_anew_each_pass(loaded, monkeypatch):
    from difill.engine.api import FillOptions
    from difill.engine.infill import InfillEngine

    prefix, suffix = "def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"
    options = FillOptions(hole_candidates=(6, 10), seed=3)
    kept = InfillEngine(loaded).fill(prefix, suffix, options)
    original = CanvasDecoder.positions

    def anew(self, hidden):
        self._positions = None
        return original(self, hidden)

    monkeypatch.setattr(CanvasDecoder, "positions", anew)
    made_anew = InfillEngine(loaded).fill(prefix, suffix, options)
    assert [(c.text, c.score) for c in kept.candidates] == [(c.text, c.score) for c in made_anew.candidates]
    assert kept.stats.decoder_forwards == made_anew.stats.decoder_forwards


def test_top_k_rows_cross_as_their_top_k_and_self_condition_as_the_dense_signal(loaded):
    """On an accelerator a large vocabulary's rows cross to the loop as their top-k (forced here
    on the CPU): the ids sent hold the full pass's logits, the rest -inf, and the self-conditioning
    built from the top-k's signal is the one the dense signal gives."""
    tok, model, ids = loaded.tokenizer, loaded.model, loaded.ids
    cache = expand_cache(PrefixCache(model).encode([ids.bos, *encode(tok, "x = ")]).cache, 2)
    canvas = torch.randint(0, ids.vocab_size, (2, 6), generator=torch.Generator().manual_seed(2)).numpy()
    slots = np.nonzero(np.arange(12).reshape(2, 6) % 3 != 0)  # 8 open slots
    whole, top = CanvasDecoder(model, cache), CanvasDecoder(model, cache, top_k=5)
    full, rows = whole.open_logits(canvas, None, slots), top.open_logits(canvas, None, slots)  # (N, V)
    kept = np.isfinite(rows)
    assert (kept.sum(-1) == 5).all()
    assert np.array_equal(rows[kept], full[kept])
    assert (full[kept].reshape(-1, 5).min(-1) >= np.where(kept, -np.inf, full).max(-1)).all()  # the top 5
    signal = np.where(kept, rows / 0.7, np.float32(-1e4))  # as the sampler masks a pass's -inf
    signal[:, int(np.argmax(kept[0]))] = -1e4  # a banned id among those sent
    with torch.inference_mode():
        dense = whole.soft_embeddings(canvas, slots, signal)
        sparse = top.soft_embeddings(canvas, slots, signal)
    assert torch.allclose(dense, sparse, atol=1e-6)
