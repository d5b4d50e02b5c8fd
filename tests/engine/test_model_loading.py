from __future__ import annotations

import shutil

import pytest

from difill.engine.api import ModelLoadError
from difill.engine.model import load_model


def test_missing_directory_names_the_path_and_the_fix(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(ModelLoadError) as err:
        load_model(missing)
    assert str(missing) in str(err.value)
    assert "--model" in str(err.value)


def test_hub_id_is_refused_without_network():
    with pytest.raises(ModelLoadError, match="never downloads"):
        load_model("google/diffusiongemma-26B-A4B-it")


def test_truncated_safetensors_is_a_clear_error(tiny_model_dir, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_model_dir, broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(ModelLoadError) as err:
        load_model(broken)
    assert str(broken) in str(err.value)


def test_pickle_weights_are_refused(tiny_model_dir, tmp_path):
    pickled = tmp_path / "pickled"
    shutil.copytree(tiny_model_dir, pickled)
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="pickle weights are refused"):
        load_model(pickled)


def test_missing_tokenizer_is_named(tiny_model_dir, tmp_path):
    partial = tmp_path / "partial"
    shutil.copytree(tiny_model_dir, partial)
    (partial / "tokenizer.json").unlink()
    with pytest.raises(ModelLoadError, match="tokenizer"):
        load_model(partial)


def test_loads_fp32_on_cpu(loaded):
    assert loaded.device.type == "cpu"
    assert str(loaded.dtype) == "torch.float32"
    assert loaded.max_prefix_tokens == 128


def read_the_transformers_way(path):
    """What load_checkpoint_meta gave before it read checkpoints without transformers: the
    tokenizer through AutoTokenizer, the configs through DiffusionGemmaConfig and GenerationConfig."""
    import torch
    from transformers import AutoTokenizer, DiffusionGemmaConfig, GenerationConfig

    from difill.engine.model import TOKENIZER_LOAD, checkpoint_settings

    tokenizer = AutoTokenizer.from_pretrained(path, **TOKENIZER_LOAD)
    config = DiffusionGemmaConfig.from_pretrained(path, local_files_only=True)
    generation = None
    if (path / "generation_config.json").is_file():
        generation = GenerationConfig.from_pretrained(path, local_files_only=True)
    return checkpoint_settings(None, config, generation, tokenizer, path, torch.device("cpu"))


def settings_of(loaded) -> tuple:
    from difill.engine.model import checkpoint_drafts, difill_meta

    return (loaded.ids, loaded.max_prefix_tokens, loaded.sampler, loaded.min_token_prob, loaded.languages,
            checkpoint_drafts(loaded.config), difill_meta(loaded.config))  # fmt: skip


def tokenizer_reads(tokenizer, texts: list[str]) -> tuple:
    """Everything the engines ask of a tokenizer (engine/tokens.py, engine/vocab.py, token_texts)."""
    from difill.engine.tokens import encode

    encoded = [encode(tokenizer, text) for text in texts]
    every_id = list(range(len(tokenizer.get_vocab())))
    return (
        tokenizer.get_vocab(), len(tokenizer), tokenizer.all_special_tokens, tokenizer.all_special_ids,
        {i: (t.content, t.special) for i, t in tokenizer.added_tokens_decoder.items()},
        tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id, encoded,
        [tokenizer.decode(ids) for ids in encoded], [tokenizer.decode(ids, skip_special_tokens=True) for ids in encoded],
        [tokenizer.decode([i]) for i in every_id], tokenizer.decode(every_id, skip_special_tokens=True),
    )  # fmt: skip


TEXTS = [
    "", "x", "def f(a, b):\r\n\treturn a + b  # café ☃ 𝄞\n", "marker = '<|fill|>' <|hole|><eos> <bos>x",
    "    " * 9 + "\n\n\n" + "é" * 40, "\ud7ff\u00a0\u200b\x00\x7f", "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>",
]  # fmt: skip


@pytest.mark.parametrize("which", ["shipped", "tiny", "no max_prefix_tokens", "sampler settings"])
def test_checkpoint_meta_reads_what_transformers_reads(which, tiny_model_dir, tmp_path):
    """The llama.cpp and MLX engines' read of a checkpoint (its tokenizer and difill's settings,
    no weights, no transformers) gives what AutoTokenizer, DiffusionGemmaConfig and
    GenerationConfig give, also for a config that leaves a value to the class's defaults."""
    import json

    from difill.engine.file_tokenizer import FileTokenizer
    from difill.engine.model import DEFAULT_MODEL_DIR, load_checkpoint_meta

    path = {"shipped": DEFAULT_MODEL_DIR, "tiny": tiny_model_dir}.get(which)
    if path is None:
        path = tmp_path / "ckpt"
        shutil.copytree(DEFAULT_MODEL_DIR, path)
        config = json.loads((path / "config.json").read_text())
        if which == "no max_prefix_tokens":  # the limit falls back to max_position_embeddings' default
            del config["difill"]["max_prefix_tokens"], config["text_config"]["max_position_embeddings"]
        (path / "config.json").write_text(json.dumps(config))
        generation = {"max_denoising_steps": 7, "t_max": 0.9, "t_min": 0.2, "confidence_threshold": 0.5,
                      "sampler_config": {"entropy_bound": 0.3}}  # fmt: skip
        (path / "generation_config.json").write_text(json.dumps(generation))
    ours, theirs = load_checkpoint_meta(path), read_the_transformers_way(path)
    assert isinstance(ours.tokenizer, FileTokenizer)
    assert settings_of(ours) == settings_of(theirs)
    texts = [*TEXTS, (DEFAULT_MODEL_DIR.parents[3] / "examples" / "demo.py").read_text()]
    assert tokenizer_reads(ours.tokenizer, texts) == tokenizer_reads(theirs.tokenizer, texts)


@pytest.mark.parametrize("setting", [{"add_bos_token": True}, {"clean_up_tokenization_spaces": True},
                                     {"tokenizer_class": "GemmaTokenizer"}, {"unk_token": "<unk>"}])  # fmt: skip
def test_a_tokenizer_with_other_settings_is_read_by_transformers(setting, tmp_path):
    """FileTokenizer reads only what it reads as transformers would; anything else (a setting it
    does not apply, a special token tokenizer.json lacks) is AutoTokenizer's."""
    import json

    from difill.engine.file_tokenizer import FileTokenizer
    from difill.engine.model import DEFAULT_MODEL_DIR, load_tokenizer

    path = tmp_path / "ckpt"
    shutil.copytree(DEFAULT_MODEL_DIR, path)
    settings = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(json.dumps({**settings, **setting}))
    assert not isinstance(load_tokenizer(path), FileTokenizer)
