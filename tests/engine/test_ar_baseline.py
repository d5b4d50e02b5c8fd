"""The AR yardstick loads like a checkpoint and fills through the engine's interface."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from difill.engine.api import FillOptions, RewriteRequest
from difill.engine.ar_baseline import ARBackend
from difill.engine.backends import is_ar_checkpoint
from difill.engine.vocab import TokenIds
from lab.training.train import build_ar_model


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


def test_prompt_cache_reads_only_what_changed_and_fills_the_same(tiny_ar_dir):
    from difill.engine.ar_baseline import ARBaseline

    plain, cached = ARBaseline(tiny_ar_dir), ARBaseline(tiny_ar_dir, prompt_cache=True)
    read: list[int] = []
    for model in (plain.model, cached.model):
        model.forward = (lambda f: lambda *a, **k: (read.append(k["input_ids"].shape[1]), f(*a, **k))[1])(
            model.forward
        )
    prefix = "import os\n\n\ndef f(x):\n    y = x * 2\n    return "
    for typed in (prefix, prefix + "y"):  # a keystroke at the end of the prefix
        read.clear()
        want = plain.fill(typed, "\n\nprint(f(1))\n", max_new_tokens=5)
        whole = read[0]
        read.clear()
        got = cached.fill(typed, "\n\nprint(f(1))\n", max_new_tokens=5)
        assert got.text == want.text
    assert read[0] < whole // 2  # the keystroke's prompt: its last tokens and the suffix, not the file again
