"""CanvasDecoder computes exactly what DiffusionGemmaForBlockDiffusion.forward computes."""

from __future__ import annotations

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
        soft = decoder.soft_embeddings(canvas, all_open, sc_logits[all_open])
        assert torch.allclose(stock_sc, decoder.logits(decoder.hidden(canvas, soft)), atol=1e-4)


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
        soft = decoder.soft_embeddings(canvas, open_mask, one_hot[open_mask])
        assert torch.allclose(stock, decoder.logits(decoder.hidden(canvas, soft)), atol=1e-4)


def test_decoder_leaves_the_prefix_cache_unchanged(loaded):
    model, ids = loaded.model, loaded.ids
    cache = PrefixCache(model).encode([ids.bos, 50, 60, 70]).cache
    with torch.inference_mode():
        CanvasDecoder(model, cache).hidden(torch.tensor([[1, 2, 3]]), None)
    assert cache.get_seq_length() == 4
