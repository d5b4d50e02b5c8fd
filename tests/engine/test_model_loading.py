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
