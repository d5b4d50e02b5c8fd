"""Issue 28, item 8: every checkpoint load (the diffusion model and the AR baseline behind
``modelPath`` or ``difill fill --model``) reads safetensors only and never runs checkpoint code."""

from __future__ import annotations

import io
import json
import shutil
import sys

import pytest
import torch
from transformers import AutoTokenizer

from difill.engine.api import ModelLoadError
from difill.engine.ar_baseline import ARBackend
from difill.engine.model import load_error
from difill.engine.vocab import TokenIds
from lab.training.train import build_ar_model

PAYLOAD = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


@pytest.fixture(scope="module")
def tiny_ar_dir(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny_ar_hostile")
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = build_ar_model(len(tok), hidden=32, layers=2, ids=TokenIds.from_tokenizer(tok, len(tok)))
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture()
def no_pickle_no_stdin(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("torch.load (pickle) was called")

    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # a "run the custom code?" prompt says yes


def test_pickle_weights_beside_a_decoy_safetensors_file_are_refused(
    tiny_ar_dir, tmp_path, no_pickle_no_stdin
):
    hostile = tmp_path / "ar"
    shutil.copytree(tiny_ar_dir, hostile)
    (hostile / "model.safetensors").unlink()
    (hostile / "pytorch_model.bin").write_bytes(b"not read")
    (hostile / "decoy.safetensors").write_bytes(b"{}")  # used to pass difill's own check
    with pytest.raises(ModelLoadError, match="no model.safetensors weights.*pytorch_model.bin") as caught:
        ARBackend(hostile)
    assert "weights_only" not in str(caught.value)


def test_pickle_weights_beside_safetensors_are_ignored(tiny_ar_dir, tmp_path, no_pickle_no_stdin):
    both = tmp_path / "ar"
    shutil.copytree(tiny_ar_dir, both)
    (both / "pytorch_model.bin").write_bytes(b"not read")
    assert ARBackend(both).fill("x = ", "\n").stats.candidates == 1


def test_a_tokenizer_auto_map_never_runs_the_checkpoints_code(tiny_ar_dir, tmp_path, no_pickle_no_stdin):
    hostile = tmp_path / "ar"
    shutil.copytree(tiny_ar_dir, hostile)
    marker = tmp_path / "code-ran"
    (hostile / "evil_tokenizer.py").write_text(PAYLOAD.format(marker=str(marker)))
    config_path = hostile / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["auto_map"] = {"AutoTokenizer": ["evil_tokenizer.EvilTokenizer", None]}
    config_path.write_text(json.dumps(config))
    try:
        ARBackend(hostile)
    except ModelLoadError:
        pass  # refusing is fine; running the code, or asking on stdin, is not
    assert not marker.exists()
    assert sys.stdin.read() == "y\n"  # nobody asked


def test_a_load_error_never_advises_unpickling(tmp_path):
    err = RuntimeError(
        "Weights only load failed. Re-running `torch.load` with `weights_only` set to `False` will likely succeed"
    )
    message = str(load_error(tmp_path, err))
    assert "weights_only" not in message and "never" in message
