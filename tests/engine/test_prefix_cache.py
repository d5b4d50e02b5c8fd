from __future__ import annotations

import torch

from difill.engine.hf_compat import cache_kwargs
from difill.engine.prefix_cache import PrefixCache
from difill.engine.tokens import encode


def decoder_logits(model, cache, canvas):
    with torch.inference_mode():
        return model(**cache_kwargs(cache), decoder_input_ids=canvas).logits


def test_extended_prefix_reuses_the_cache_and_matches_a_fresh_encode(loaded):
    tok, model, ids = loaded.tokenizer, loaded.model, loaded.ids
    first = [ids.bos, *encode(tok, "import os\n\ndef main():\n")]
    extended = first + encode(tok, "    path = os.getcwd()\n")
    canvas = torch.tensor([encode(tok, "    return path\n")[:6]])

    warm = PrefixCache(model)
    warm.encode(first)
    reused = warm.encode(extended)
    assert reused.reused_tokens == len(first)
    assert reused.encoded_tokens == len(extended) - len(first)

    fresh = PrefixCache(model).encode(extended)
    assert torch.allclose(
        decoder_logits(model, reused.cache, canvas), decoder_logits(model, fresh.cache, canvas), atol=1e-4
    )


def test_backspace_crops_the_cache_and_matches_a_fresh_encode(loaded):
    tok, model, ids = loaded.tokenizer, loaded.model, loaded.ids
    long = [ids.bos, *encode(tok, "value = compute(alpha, beta)\n")]
    short = long[:-4]
    canvas = torch.tensor([encode(tok, "gamma")])
    cache = PrefixCache(model)
    cache.encode(long)
    cropped = cache.encode(short)
    assert cropped.reused_tokens == len(short)
    fresh = PrefixCache(model).encode(short)
    assert torch.allclose(
        decoder_logits(model, cropped.cache, canvas), decoder_logits(model, fresh.cache, canvas), atol=1e-4
    )


def test_decoder_does_not_grow_the_cache(loaded):
    tok, model, ids = loaded.tokenizer, loaded.model, loaded.ids
    prefix = [ids.bos, *encode(tok, "x = 1\n")]
    encoded = PrefixCache(model).encode(prefix)
    decoder_logits(model, encoded.cache, torch.tensor([encode(tok, "y = 2")]))
    assert encoded.cache.get_seq_length() == len(prefix)
