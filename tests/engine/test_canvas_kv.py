"""The approximate dual cache (engine/canvas_kv.py): its passes are the stock layers' where the
cache holds what a full pass would compute, a stale entry is recomputed, never read, and a canvas
wider than the largest bucket runs whole."""

from __future__ import annotations

import numpy as np
import torch

from difill.engine.api import FillOptions
from difill.engine.canvas_kv import CachedCanvasDecoder, bucket_width
from difill.engine.decoder import CanvasDecoder
from difill.engine.infill import InfillEngine
from difill.engine.prefix_cache import PrefixCache, expand_cache
from difill.engine.tokens import encode


def _setup(loaded, batch: int, length: int, seed: int = 0):
    tok, model, ids = loaded.tokenizer, loaded.model, loaded.ids
    cache = PrefixCache(model).encode([ids.bos, *encode(tok, "def f(x):\n    return x + 1\n")]).cache
    generator = torch.Generator().manual_seed(seed)
    canvas = torch.randint(0, ids.vocab_size, (batch, length), generator=generator).numpy()  # (B, L)
    return expand_cache(cache, batch), canvas


def _soft(decoder: CanvasDecoder, canvas: np.ndarray, open_mask: np.ndarray, seed: int) -> torch.Tensor:
    """Settled slots self-condition on their own embedding, open ones on random logits."""
    n = int(open_mask.sum())
    logits = torch.randn(
        n, decoder.model.config.text_config.vocab_size, generator=torch.Generator().manual_seed(seed)
    )
    return decoder.soft_embeddings(canvas, open_mask.nonzero(), logits.numpy())


def _open(batch: int, length: int, columns: list[int]) -> np.ndarray:
    mask = np.zeros((batch, length), dtype=bool)
    mask[:, columns] = True
    return mask


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    return torch.allclose(torch.from_numpy(got), torch.from_numpy(want), atol=1e-4)


def test_a_full_pass_and_a_cached_pass_of_unchanged_inputs_give_the_stock_logits(loaded):
    cache, canvas = _setup(loaded, batch=2, length=12)
    stock, cached = (
        CanvasDecoder(loaded.model, cache),
        CachedCanvasDecoder(loaded.model, cache, refresh_every=8),
    )
    open_mask = _open(2, 12, [1, 2, 7])
    slots = open_mask.nonzero()
    with torch.inference_mode():
        soft = _soft(stock, canvas, open_mask, seed=1)
        want = stock.open_logits(canvas, soft, slots)
        assert _close(cached.open_logits(canvas, soft, slots), want)  # full pass
        # Nothing settled changed: the open slots alone are computed, the rest read from the cache.
        again = cached.open_logits(canvas, soft, slots)
    assert cached.computed == [12, 4]  # 3 open slots, a bucket of 4
    assert _close(again, want)


def test_a_slot_changed_under_the_cache_is_recomputed_not_read(loaded):
    cache, canvas = _setup(loaded, batch=1, length=10)
    stock, cached = (
        CanvasDecoder(loaded.model, cache),
        CachedCanvasDecoder(loaded.model, cache, refresh_every=8),
    )
    open_mask = _open(1, 10, [0, 1])
    slots = open_mask.nonzero()
    with torch.inference_mode():
        cached.open_logits(canvas, _soft(stock, canvas, open_mask, seed=1), slots)
        changed = canvas.copy()
        changed[0, 6] = (changed[0, 6] + 1) % loaded.ids.vocab_size  # a settled slot, behind the cache's back
        soft = _soft(stock, changed, open_mask, seed=1)
        cached.open_logits(changed, soft, slots)
    # Layer 0's keys are the slot's own token's alone: a stale read would keep the old token's.
    fresh = CachedCanvasDecoder(loaded.model, cache, refresh_every=8)
    with torch.inference_mode():
        fresh.open_logits(changed, soft, slots)
    at = cached.offsets[0] + 6
    assert torch.allclose(cached.kv[0][0][:, :, at], fresh.kv[0][0][:, :, at], atol=1e-5)
    assert cached.computed == [10, 4]  # the 2 open slots and the changed one, in a bucket of 4


def test_a_slot_committed_in_a_pass_is_computed_once_more_before_it_is_read(loaded):
    cache, canvas = _setup(loaded, batch=1, length=10)
    cached = CachedCanvasDecoder(loaded.model, cache, refresh_every=8)
    with torch.inference_mode():
        wide = _open(1, 10, [0, 1, 2, 3, 4])
        cached.open_logits(canvas, _soft(cached, canvas, wide, 1), wide.nonzero())
        narrow = _open(1, 10, [0])  # slots 1-4 were committed (entries made while they were open)
        stale = cached.stale(torch.from_numpy(canvas), torch.from_numpy(narrow))  # on the device
    assert stale[0, :5].all() and not stale[0, 5:].any()


def test_a_sliding_layer_that_kept_less_than_the_prefix_gets_its_canvas_where_it_reads_it(loaded):
    import copy

    model = copy.deepcopy(loaded.model)
    model.config.text_config.sliding_window = 6  # its sliding layers keep the prefix's last 5 keys
    tok, ids = loaded.tokenizer, loaded.ids
    cache = PrefixCache(model).encode([ids.bos, *encode(tok, "def f(x):\n    return x + 1\n" * 3)]).cache
    assert cache.layers[0].keys.shape[-2] == 5 < cache.get_seq_length()
    canvas = torch.randint(0, ids.vocab_size, (1, 12), generator=torch.Generator().manual_seed(0)).numpy()
    stock, cached = CanvasDecoder(model, cache), CachedCanvasDecoder(model, cache, refresh_every=8)
    open_mask = _open(1, 12, [2, 3])
    slots = open_mask.nonzero()
    with torch.inference_mode():
        soft = _soft(stock, canvas, open_mask, seed=1)
        want = stock.open_logits(canvas, soft, slots)
        assert _close(cached.open_logits(canvas, soft, slots), want)
        assert _close(cached.open_logits(canvas, soft, slots), want)


def test_a_canvas_wider_than_the_largest_bucket_runs_whole(loaded):
    cache, canvas = _setup(loaded, batch=1, length=150, seed=3)
    stock, cached = (
        CanvasDecoder(loaded.model, cache),
        CachedCanvasDecoder(loaded.model, cache, refresh_every=8),
    )
    open_mask = np.ones((1, 150), dtype=bool)
    open_mask[0, 140:] = False
    slots = open_mask.nonzero()
    with torch.inference_mode():
        soft = _soft(stock, canvas, open_mask, seed=1)
        cached.open_logits(canvas, soft, slots)
        got = cached.open_logits(canvas, soft, slots)
        want = stock.open_logits(canvas, soft, slots)
    assert cached.computed == [150, 150]  # 140 to compute: two widths of 64 would not hold them
    assert _close(got, want)
    assert [bucket_width(n, 48) for n in (1, 4, 5, 9, 33, 47)] == [4, 4, 8, 16, 48, 48]
    assert bucket_width(65, 400) == 128


def test_a_fill_with_the_cache_refreshed_every_pass_is_the_fill_without_it(loaded):
    prefix, suffix = "def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"
    options = FillOptions(hole_candidates=(6, 10), seed=3)
    plain = InfillEngine(loaded).fill(prefix, suffix, options)
    engine = InfillEngine(loaded)
    engine.loaded = type(loaded)(**{**loaded.__dict__, "sampler": type(loaded.sampler)(
        **{**loaded.sampler.__dict__, "canvas_cache_refresh": 1})})  # fmt: skip
    refreshed = engine.fill(prefix, suffix, options)
    assert [c.text for c in refreshed.candidates] == [c.text for c in plain.candidates]
    assert refreshed.stats.decoder_forwards == plain.stats.decoder_forwards


def test_the_environment_turns_the_canvas_cache_on_and_a_bad_value_is_refused(tiny_model_dir, monkeypatch):
    import pytest

    from difill.engine.api import ModelLoadError
    from difill.engine.model import load_model

    assert load_model(tiny_model_dir, "cpu").sampler.canvas_cache_refresh == 0
    monkeypatch.setenv("DIFILL_CANVAS_CACHE", "4")
    loaded = load_model(tiny_model_dir, "cpu")
    assert loaded.sampler.canvas_cache_refresh == 4
    engine = InfillEngine(loaded)
    request = engine._request([engine_canvas(loaded)])
    assert isinstance(engine._decoder(PrefixCache(loaded.model).encode([loaded.ids.bos]).cache, request,
                                      loaded.sampler), CachedCanvasDecoder)  # fmt: skip
    monkeypatch.setenv("DIFILL_CANVAS_CACHE", "four")
    with pytest.raises(ModelLoadError, match="DIFILL_CANVAS_CACHE"):
        load_model(tiny_model_dir, "cpu")


def engine_canvas(loaded):
    from difill.engine.canvas import build_canvas

    return build_canvas([4, [10, 11]], 8, loaded.ids, document_ends=True)
