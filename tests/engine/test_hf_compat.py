"""difill hands the KV cache over by the name the installed transformers declares (engine/hf_compat.py)."""

from __future__ import annotations

import inspect

from transformers import LlamaForCausalLM

from difill.engine.hf_compat import CACHE_ARG


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
