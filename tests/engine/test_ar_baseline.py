"""The AR yardstick loads like a checkpoint and fills through the engine's interface."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from difill.engine.api import FillOptions, RewriteRequest
from difill.engine.ar_baseline import ARBackend
from difill.engine.backends import is_ar_checkpoint
from difill.engine.vocab import TokenIds
from difill.lab.training.train import build_ar_model


@pytest.fixture(scope="module")
def tiny_ar_dir(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny_ar")
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = build_ar_model(len(tok), hidden=32, layers=2, ids=TokenIds.from_tokenizer(tok, len(tok)))
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def test_checkpoint_kind_is_read_from_its_config(tiny_ar_dir, tiny_model_dir):
    assert is_ar_checkpoint(tiny_ar_dir)
    assert not is_ar_checkpoint(tiny_model_dir)


def test_ar_backend_fills_one_hole_with_stats(tiny_ar_dir):
    result = ARBackend(tiny_ar_dir).fill(
        "def f(x):\n    return ", "\n", FillOptions(max_hole_tokens=6, single_line=True)
    )
    assert "\n" not in result.text
    assert 1 <= result.stats.decoder_forwards <= 7
    assert result.stats.candidates == 1


def test_ar_backend_stops_before_an_unsure_token(tiny_ar_dir):
    backend = ARBackend(tiny_ar_dir)
    prompt = ("def f(x):\n    return ", "\n")
    full = backend.fill(*prompt, FillOptions(max_hole_tokens=6))
    assert full.stats.hole_tokens == 6  # a random model never writes eos this early
    assert backend.fill(*prompt, FillOptions(max_hole_tokens=6, min_token_prob=1e-12)).text == full.text
    nothing = backend.fill(*prompt, FillOptions(max_hole_tokens=6, min_token_prob=1.0))
    assert nothing.text == "" and nothing.candidates == [] and nothing.stats.decoder_forwards == 1


def test_ar_checkpoint_names_its_own_cut(tiny_ar_dir, tmp_path):
    import json
    import shutil

    sure_of_nothing = tmp_path / "ar"
    shutil.copytree(tiny_ar_dir, sure_of_nothing)
    config = json.loads((sure_of_nothing / "config.json").read_text())
    config["difill"] = {"min_token_prob": 1.0}
    (sure_of_nothing / "config.json").write_text(json.dumps(config))
    backend = ARBackend(sure_of_nothing)
    prompt = ("def f(x):\n    return ", "\n")
    assert backend.fill(*prompt, FillOptions(max_hole_tokens=6, min_token_prob=None)).text == ""
    assert backend.fill(*prompt, FillOptions(max_hole_tokens=6, min_token_prob=0.0)).text


def test_ar_backend_refuses_canvas_only_work(tiny_ar_dir):
    backend = ARBackend(tiny_ar_dir)
    with pytest.raises(NotImplementedError):
        backend.fill_holes("x = <|hole|>\n")
    with pytest.raises(NotImplementedError):
        backend.rewrite(RewriteRequest("x = ", "1", "\n"))
