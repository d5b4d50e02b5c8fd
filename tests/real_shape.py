"""A tiny random checkpoint with DiffusionGemma-26B-A4B's structure and a Gemma-4-like tokenizer.

``tests/conftest.py`` builds it once per session (fixture ``gemma_model_dir``); the constants are
imported by the tests that check the tokenizer's special tokens.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import torch


def _tiny_corpus() -> list[str]:
    import importlib

    names = ("textwrap", "string", "json.encoder", "shlex")
    return [inspect.getsource(importlib.import_module(name)) for name in names]


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
    """A byte-level BPE with Gemma 4's special tokens: eos is ``<turn|>``, no ``<|fill|>``.

    As in Gemma's tokenizer.json, the control tokens are entries of the added-token table flagged
    special, but only bos, eos, pad, unk and mask are *named* special tokens (``all_special_ids``).
    """
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
