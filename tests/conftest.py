"""Shared fixtures: a tiny, randomly initialised DiffusionGemma saved to disk and loaded back
through the real loading path (safetensors + tokenizer.json)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch

from difill.engine.model import build_config
from difill.engine.training.tokenizer import save_tokenizer, train_tokenizer
from difill.engine.vocab import TokenIds

TINY_CORPUS_MODULES = ("textwrap", "string", "json.encoder", "shlex")


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


# ---------------------------------------------------------------- a checkpoint shaped like the real one

GEMMA_SPECIALS = (
    "<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|turn>", "<turn|>", "<|channel>", "<channel|>",
    "<|tool>", "<tool|>", "<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>",
    '<|"|>', "<|think|>", "<|image>", "<image|>", "<|image|>",
)  # fmt: skip
GEMMA_UNUSED = tuple(f"<unused{i}>" for i in range(8))  # added, not flagged special
GEMMA_WHITESPACE = ("\n\n", "    ", "        ")  # added text tokens, as Gemma's runs of whitespace
REAL_VOCAB = 262_144
REAL_SLIDING_WINDOW_FOR_TESTS = 24  # the 26B's is 1,024; the tests' prefixes are longer than this
REAL_GENERATION_CONFIG = {
    "max_denoising_steps": 48,
    "sampler_config": {"entropy_bound": 0.1, "_cls_name": "EntropyBoundSamplerConfig"},
    "t_min": 0.4,
    "t_max": 0.8,
    "stability_threshold": 1,
    "confidence_threshold": 0.005,
}


def build_gemma_like_tokenizer():
    """A byte-level BPE with Gemma 4's special tokens: eos is ``<turn|>``, no ``<|fill|>``."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=700, special_tokens=list(GEMMA_SPECIALS), min_frequency=2, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    tokenizer.train_from_iterator(_tiny_corpus(), trainer=trainer)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in GEMMA_UNUSED])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in GEMMA_WHITESPACE])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", eos_token="<turn|>", bos_token="<bos>",
        unk_token="<unk>", mask_token="<mask>", clean_up_tokenization_spaces=False,
        additional_special_tokens=[t for t in GEMMA_SPECIALS if t not in ("<pad>", "<turn|>", "<bos>", "<unk>", "<mask>")],
    )  # fmt: skip


def build_gemma_like_model(out: Path, seed: int = 0) -> Path:
    """A tiny random DiffusionGemma with the 26B-A4B's structure, saved like the real checkpoint.

    12 layers in the 5:1 sliding/full pattern, a sliding window shorter than the tests' prefixes,
    MoE top-2 of 8 experts beside the dense MLP, K=V full-attention layers with their own head size
    and kv heads, a 262,144-slot vocabulary (the tokenizer has ~700 entries, the rest are rows
    with no token), a 256-slot canvas, the real generation_config, no ``difill`` metadata.
    """
    import json

    from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion

    from difill.engine.model import TINY_VISION_CONFIG

    tokenizer = build_gemma_like_tokenizer()
    ids = {
        t: tokenizer.convert_tokens_to_ids(t)
        for t in ("<pad>", "<eos>", "<bos>", "<turn|>", "<|tool_response>")
    }
    text_config = dict(
        vocab_size=REAL_VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=12,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, global_head_dim=16,
        num_global_key_value_heads=1, attention_k_eq_v=True, max_position_embeddings=1024,
        sliding_window=REAL_SLIDING_WINDOW_FOR_TESTS, num_experts=8, top_k_experts=2,
        moe_intermediate_size=16, final_logit_softcapping=30.0, pad_token_id=ids["<pad>"],
        eos_token_id=[ids["<eos>"], ids["<turn|>"], ids["<|tool_response>"]], bos_token_id=ids["<bos>"],
    )  # fmt: skip
    config = DiffusionGemmaConfig(
        text_config=text_config, vision_config=TINY_VISION_CONFIG, canvas_length=256,
        boi_token_id=tokenizer.convert_tokens_to_ids("<|image>"),
        eoi_token_id=tokenizer.convert_tokens_to_ids("<image|>"),
        image_token_id=tokenizer.convert_tokens_to_ids("<|image|>"),
    )  # fmt: skip
    torch.manual_seed(seed)
    model = DiffusionGemmaForBlockDiffusion(config)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    generation = dict(REAL_GENERATION_CONFIG, pad_token_id=ids["<pad>"], bos_token_id=ids["<bos>"])
    generation["eos_token_id"] = text_config["eos_token_id"]
    (out / "generation_config.json").write_text(json.dumps(generation, indent=2))
    return out


@pytest.fixture(scope="session")
def gemma_model_dir(tmp_path_factory) -> Path:
    return build_gemma_like_model(tmp_path_factory.mktemp("gemma_like_model"))
