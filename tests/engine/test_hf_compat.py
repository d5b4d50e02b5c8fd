"""difill hands the KV cache over by the name the installed transformers declares (engine/hf_compat.py)."""

from __future__ import annotations

import inspect

from transformers import LlamaForCausalLM

from difill.engine.hf_compat import CACHE_ARG
from difill.engine.prefix_cache import PrefixCache


def test_every_forward_difill_hands_a_cache_to_declares_that_name(loaded):
    # An undeclared name would land in **kwargs and the cache would be ignored without an error.
    model = loaded.model
    forwards = (
        type(model).forward,  # tests, training
        type(model.model.encoder).forward,  # engine/prefix_cache.py
        type(model.model.decoder.layers[0]).forward,  # engine/decoder.py, engine/batcher.py
        LlamaForCausalLM.forward,  # engine/ar_baseline.py
    )
    for forward in forwards:
        assert CACHE_ARG in inspect.signature(forward).parameters, forward.__qualname__


def _resolve(root: object, dotted: str) -> object:
    for name in dotted.split("."):
        assert hasattr(root, name), f"transformers no longer has {dotted!r} (missing {name!r})"
        root = getattr(root, name)
    return root


def test_the_transformers_internals_difill_uses_still_exist(loaded):
    # Every model internal difill reaches past the public forward, in one place: an upgrade that
    # renames or moves one fails here, not as wrong text somewhere in a fill.
    model = loaded.model
    for dotted in (
        "model.encoder",  # engine/prefix_cache.py encodes the prefix with the encoder alone
        "model.decoder.embed_tokens.embed_scale",  # engine/decoder.py (soft embeddings)
        "model.decoder.embed_tokens.weight",
        "model.decoder.self_conditioning",  # engine/decoder.py conditioned_inputs
        "model.decoder.rotary_emb",  # engine/decoder.py decoder_layers
        "model.decoder.unique_layer_types",
        "model.decoder.layers",
        "model.decoder.norm",
        "model.decoder.text_config.num_hidden_layers",
        "model.decoder.text_config.layer_types",
        "model.decoder.text_config._attn_implementation",  # engine/decoder.py attention_mask
        "lm_head",  # engine/decoder.py logits, lab/training
        "final_logit_softcapping",
        "config.text_config.sliding_window",  # engine/prefix_cache.py
        "config._experts_implementation",  # lab/training/train.py and scripts set it to "eager"
        "config.text_config._experts_implementation",
    ):
        _resolve(model, dotted)
    decoder = model.model.decoder
    assert decoder.text_config._attn_implementation in ("sdpa", "eager")  # the two masks difill builds
    assert set(decoder.unique_layer_types) == set(decoder.text_config.layer_types)
    rotary = inspect.signature(decoder.rotary_emb.forward).parameters
    assert len(rotary) == 3, f"rotary_emb(hidden, positions, layer_type) changed: {list(rotary)}"
    layer = inspect.signature(type(decoder.layers[0]).forward).parameters
    for keyword in ("position_embeddings", "attention_mask", "position_ids"):
        assert keyword in layer, f"decoder layer forward no longer takes {keyword!r}"


def test_the_kv_cache_internals_difill_uses_still_exist(loaded):
    # engine/prefix_cache.py crops and extends sliding tails by hand; engine/batcher.py pads them.
    cache = PrefixCache(loaded.model).encode([loaded.ids.bos, 50, 60, 70]).cache
    assert cache.layers, "DynamicCache.layers is gone"
    for layer in cache.layers:
        for name in ("keys", "values", "is_initialized", "crop"):
            _resolve(layer, name)
        assert layer.keys.dim() == 4, "cache keys are no longer (batch, heads, keys, head_dim)"
        if getattr(layer, "is_sliding", False):
            _resolve(layer, "sliding_window")
            _resolve(layer, "cumulative_length")
