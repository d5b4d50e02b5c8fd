"""Shared fixtures: a tiny, randomly initialised DiffusionGemma saved to disk and loaded back
through the real loading path (safetensors + tokenizer.json)."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest
import torch

from difill.engine.model import build_config
from difill.engine.vocab import TokenIds
from difill.lab.training.tokenizer import save_tokenizer, train_tokenizer

TINY_CORPUS_MODULES = ("textwrap", "string", "json.encoder", "shlex")

# torch is the reference engine of the tests (engine/backends: DIFILL_ENGINE replaces "auto"), so a
# built llama.cpp worker does not change what they run; tests/engine/test_llamacpp.py picks llama.cpp
# itself, and the servers the tests start inherit this.
os.environ.setdefault("DIFILL_ENGINE", "torch")


def _tiny_corpus() -> list[str]:
    import importlib

    texts = [inspect.getsource(importlib.import_module(name)) for name in TINY_CORPUS_MODULES]
    texts.append("한국어 주석 😀 emoji\r\nwindows line\r\n\ttabbed\n")
    return texts


def build_tiny_model(out: Path, seed: int = 0) -> Path:
    """A 2-layer, 32-wide DiffusionGemma with a 600-token BPE, saved like a real checkpoint."""
    from transformers import DiffusionGemmaForBlockDiffusion

    tokenizer = train_tokenizer(_tiny_corpus(), vocab_size=600)
    ids = TokenIds.from_tokenizer(tokenizer, len(tokenizer))
    config = build_config(
        len(tokenizer), hidden_size=32, num_layers=2, num_heads=2, num_kv_heads=1,
        max_positions=512, pad_id=ids.pad, eos_id=ids.eos, bos_id=ids.bos,
    )  # fmt: skip
    config.difill = {"max_prefix_tokens": 128}
    torch.manual_seed(seed)
    model = DiffusionGemmaForBlockDiffusion(config)
    model.save_pretrained(out)
    save_tokenizer(tokenizer, out)
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny_model"))


@pytest.fixture(scope="session")
def gemma_model_dir(tmp_path_factory) -> Path:
    from real_shape import build_gemma_like_model

    return build_gemma_like_model(tmp_path_factory.mktemp("gemma_like_model"))
