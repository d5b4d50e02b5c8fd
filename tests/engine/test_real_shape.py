"""The engine on a tiny random model with DiffusionGemma-26B-A4B's structure (tests/conftest.py).

Each test names the fault it guards: it fails on the code before the fix and passes after.
"""

from __future__ import annotations

import pytest
import torch

from difill.engine.api import FillOptions
from difill.engine.decoder import CanvasDecoder
from difill.engine.hf_compat import cache_kwargs
from difill.engine.infill import InfillEngine
from difill.engine.prefix_cache import PrefixCache
from difill.engine.tokens import encode, encode_prefix_window

CODE = "".join(
    f"def handler_{i}(request, value={i}):\n    return request.get(value) + {i}\n" for i in range(20)
)


def stock_logits(model, cache, canvas):
    with torch.inference_mode():
        return model(**cache_kwargs(cache), decoder_input_ids=canvas).logits


def prefix_of(loaded, text):
    return [loaded.ids.bos, *encode(loaded.tokenizer, text)]


@pytest.fixture()
def gemma_engine(gemma_loaded):
    return InfillEngine(gemma_loaded)


def test_fixture_has_the_real_structure(gemma_loaded):
    config = gemma_loaded.model.config
    text = config.text_config
    assert text.layer_types == (["sliding_attention"] * 5 + ["full_attention"]) * 2
    assert text.num_experts == 8 and text.top_k_experts == 2 and text.vocab_size == 262_144
    assert config.canvas_length == 256
    full = gemma_loaded.model.model.decoder.layers[5].self_attn
    assert full.v_proj is None  # K=V on the full-attention layers
    assert len(prefix_of(gemma_loaded, CODE)) > 4 * text.sliding_window
    assert gemma_loaded.tokenizer.eos_token == "<turn|>"


# ---------------------------------------------------------------- fault 1: prefix cache crop


@pytest.mark.parametrize("cut", [1, 3, 70])
def test_cutting_a_prefix_longer_than_the_window_matches_a_fresh_encode(gemma_loaded, cut):
    """Backspace after a window-long prefix used to raise RuntimeError in the sliding layers.

    Cuts within the sliding layers' tail are served from the cache; a deeper one re-encodes.
    """
    from difill.engine.prefix_cache import CROP_SLACK

    model = gemma_loaded.model
    long = prefix_of(gemma_loaded, CODE)
    short = long[:-cut]
    canvas = torch.tensor([encode(gemma_loaded.tokenizer, "    return value\n")[:8]])
    warm = PrefixCache(model)
    warm.encode(long)
    cropped = warm.encode(short)
    assert cropped.reused_tokens == (len(short) if cut <= CROP_SLACK else 0)
    fresh = PrefixCache(model).encode(short)
    assert torch.allclose(
        stock_logits(model, cropped.cache, canvas), stock_logits(model, fresh.cache, canvas), atol=1e-4
    )


def test_typing_after_a_cut_keeps_matching_a_fresh_encode(gemma_loaded):
    model = gemma_loaded.model
    base = prefix_of(gemma_loaded, CODE)
    cache = PrefixCache(model)
    steps = [base, base[:-2], base[:-2] + encode(gemma_loaded.tokenizer, "x = 1\n"), base[:-1]]
    for ids in steps:
        encoded = cache.encode(ids)
    assert encoded.reused_tokens > 0 and cache.reencodes == 0
    canvas = torch.tensor([encode(gemma_loaded.tokenizer, "y = 2\n")])
    fresh = PrefixCache(model).encode(steps[-1])
    assert torch.allclose(
        stock_logits(model, encoded.cache, canvas), stock_logits(model, fresh.cache, canvas), atol=1e-4
    )


def test_the_decoder_sees_the_trimmed_sliding_view_and_matches_the_stock_forward(gemma_loaded):
    model = gemma_loaded.model
    encoded = PrefixCache(model).encode(prefix_of(gemma_loaded, CODE))
    window = model.config.text_config.sliding_window
    sliding = [layer for layer in encoded.cache.layers if layer.is_sliding]
    assert all(layer.keys.shape[-2] == window - 1 for layer in sliding)
    canvas = torch.tensor([encode(gemma_loaded.tokenizer, "    return value\n")[:8]])
    decoder = CanvasDecoder(model, encoded.cache)
    with torch.inference_mode():
        ours = decoder.logits(decoder.hidden(canvas, None))
    assert torch.allclose(ours, stock_logits(model, encoded.cache, canvas), atol=1e-4)


def test_a_second_fill_after_one_typed_character_works(gemma_engine):
    """The LSP's typing path: fill, edit the end of a window-long prefix, fill again."""
    options = FillOptions(max_hole_tokens=8, max_steps=3, prefix_tokens=4096)
    gemma_engine.fill(CODE + "def main(request, value):\n", "    pass\n", options)
    second = gemma_engine.fill(CODE + "def main(request, val", "    pass\n", options)
    assert second.stats.reused_prefix_tokens > 0


# ---------------------------------------------------------------- fault 2: <bos> on long files


def test_a_window_cut_from_a_long_file_starts_with_bos(gemma_loaded):
    tokens = encode_prefix_window(gemma_loaded.tokenizer, gemma_loaded.ids, CODE * 20, budget=64)
    assert len(tokens) <= 64 and tokens[0] == gemma_loaded.ids.bos
    assert gemma_loaded.ids.bos not in tokens[1:]


def test_the_engine_encodes_bos_first_on_a_long_file(gemma_engine):
    gemma_engine.fill(CODE * 20, "\n", FillOptions(max_hole_tokens=4, max_steps=2, prefix_tokens=64))
    assert gemma_engine.prefix_cache.token_ids[0] == gemma_engine.ids.bos
