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
    """What load_checkpoint_meta gave before it skipped transformers' model registry: the
    tokenizer through AutoTokenizer, the config through DiffusionGemmaConfig."""
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


@pytest.mark.parametrize("which", ["shipped", "tiny", "no max_prefix_tokens"])
def test_checkpoint_meta_reads_what_transformers_reads(which, tiny_model_dir, tmp_path):
    """The llama.cpp and MLX engines' read of a checkpoint (its tokenizer and difill's settings,
    no weights) gives what transformers' AutoTokenizer and DiffusionGemmaConfig give, also for a
    config that leaves a value to the class's defaults."""
    import json

    from difill.engine.model import DEFAULT_MODEL_DIR, load_checkpoint_meta

    path = {"shipped": DEFAULT_MODEL_DIR, "tiny": tiny_model_dir}.get(which)
    if path is None:  # the prefix limit falls back to text_config.max_position_embeddings' default
        path = tmp_path / "ckpt"
        shutil.copytree(DEFAULT_MODEL_DIR, path)
        config = json.loads((path / "config.json").read_text())
        del config["difill"]["max_prefix_tokens"], config["text_config"]["max_position_embeddings"]
        (path / "config.json").write_text(json.dumps(config))
    ours, theirs = load_checkpoint_meta(path), read_the_transformers_way(path)
    assert settings_of(ours) == settings_of(theirs)
    text = (DEFAULT_MODEL_DIR.parents[3] / "examples" / "demo.py").read_text() + " <|hole|><|fill|>"
    for tokenizer in (ours.tokenizer, theirs.tokenizer):
        assert type(tokenizer) is type(theirs.tokenizer)
        assert tokenizer.get_vocab() == theirs.tokenizer.get_vocab()
        assert tokenizer.all_special_tokens == theirs.tokenizer.all_special_tokens
        assert tokenizer.encode(text) == theirs.tokenizer.encode(text)
        assert tokenizer.decode(theirs.tokenizer.encode(text)) == theirs.tokenizer.decode(theirs.tokenizer.encode(text))
