"""The MLX engine (engine/mlx): parity with torch, the same fills, the backend contract, and
checkpoints or installs it cannot use.

MLX runs here on its CPU backend (``mlx[cpu]``, installed by the test extra on Linux and macOS).
Parity runs on the shipped model in float32; the contract on the tiny random DiffusionGemma the
fixtures build.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from engine_parity import (
    FILLS,
    assert_same_contract,
    assert_same_fill,
    assert_same_holes_rewrite_and_draft_rows,
    assert_same_name_scores,
)

from difill.engine.api import Cancelled, FillOptions, InfillBackend, ModelLoadError
from difill.engine.backends import EngineChoice, local_backend
from difill.engine.decoder import CanvasDecoder
from difill.engine.infill import InfillEngine
from difill.engine.model import DEFAULT_MODEL_DIR, load_model
from difill.engine.prefix_cache import PrefixCache, expand_cache
from difill.engine.tokens import encode

if sys.platform not in ("linux", "darwin"):  # the only platforms with MLX wheels
    pytest.skip("MLX has no wheels for this platform", allow_module_level=True)

from difill.engine.mlx.engine import MlxCanvasPass, MlxEngine, load_mlx_engine  # noqa: E402

PARITY_ATOL = 1e-4  # MLX's CPU kernels against torch's, float32 both: measured 1.2e-5 to 1.9e-5


@pytest.fixture(scope="module")
def shipped():
    torch_engine = InfillEngine(load_model(DEFAULT_MODEL_DIR, device="cpu", dtype="float32"))
    return torch_engine, load_mlx_engine(dtype="float32")


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return InfillEngine(load_model(tiny_model_dir, device="cpu")), load_mlx_engine(tiny_model_dir)


def passes(torch_engine, mlx_engine, prompt, rows):
    cache = PrefixCache(torch_engine.loaded.model).encode(prompt).cache
    ours = CanvasDecoder(torch_engine.loaded.model, expand_cache(cache, rows))
    return ours, MlxCanvasPass(mlx_engine.mlx_model, mlx_engine.prefix_cache.encode(prompt).cache, rows)


def assert_parity(ours: np.ndarray, theirs: np.ndarray) -> None:
    ours, theirs = torch.from_numpy(ours), torch.from_numpy(theirs)
    assert ours.shape == theirs.shape
    assert (ours - theirs).abs().max().item() < PARITY_ATOL
    assert torch.equal(ours.argmax(-1), theirs.argmax(-1))


# ---------------------------------------------------------------- parity on the shipped model


@pytest.mark.parametrize("length", [16, 32, 48])
def test_logits_match_torch_with_and_without_self_conditioning(shipped, length):
    torch_engine, mlx_engine = shipped
    loaded = torch_engine.loaded
    vocab = loaded.ids.vocab_size
    generator = torch.Generator().manual_seed(length)
    prompt = [loaded.ids.bos, *encode(loaded.tokenizer, "import os\n\ndef add(a, b):\n    return ")]
    canvas = torch.randint(8, vocab, (2, length), generator=generator).numpy()  # (B, C)
    open_mask = (torch.rand(2, length, generator=generator) < 0.7).numpy()  # (B, C)
    slots = open_mask.nonzero()
    ours_pass, theirs_pass = passes(torch_engine, mlx_engine, prompt, 2)
    with torch.inference_mode():
        ours = ours_pass.open_logits(canvas, None, slots)
        theirs = theirs_pass.open_logits(canvas, None, slots)
        assert_parity(ours, theirs)
        # Second pass, self-conditioned on the first (each side on its own logits): slots open then
        # and closed now read their own token's embedding.
        soft_ours = ours_pass.soft_embeddings(canvas, slots, ours)
        soft_theirs = theirs_pass.soft_embeddings(canvas, slots, theirs)
        assert np.abs(np.array(soft_theirs) - soft_ours.numpy()).max() < PARITY_ATOL
        canvas2 = np.where(
            open_mask, torch.randint(8, vocab, canvas.shape, generator=generator).numpy(), canvas
        )
        slots2 = (open_mask & (torch.rand(2, length, generator=generator) < 0.6).numpy()).nonzero()
        assert_parity(
            ours_pass.open_logits(canvas2, soft_ours, slots2),
            theirs_pass.open_logits(canvas2, soft_theirs, slots2),
        )


def test_a_longer_or_shorter_prompt_encodes_only_what_changed(shipped):
    torch_engine, mlx_engine = shipped
    loaded, prefix = torch_engine.loaded, mlx_engine.prefix_cache
    tok = loaded.tokenizer
    base = [loaded.ids.bos, *encode(tok, "class Point:\n    def __init__(self, x, y):\n        self.x = x\n")]
    longer = base + encode(tok, "        self.y = y\n\n    def norm(self):\n        return ")
    canvas = torch.randint(
        8, loaded.ids.vocab_size, (1, 16), generator=torch.Generator().manual_seed(3)
    ).numpy()
    every = np.ones((1, 16), dtype=bool).nonzero()
    prefix.encode([loaded.ids.bos, 99, 98])  # something else in the cache first
    assert (prefix.encode(base).reused_tokens, prefix.encode(longer).encoded_tokens) == (
        1,
        len(longer) - len(base),
    )
    backspace = prefix.encode(base)  # cut back: served from the cache without encoding
    assert (backspace.reused_tokens, backspace.encoded_tokens) == (len(base), 0)
    with torch.inference_mode():
        for prompt in (base, longer):  # grown again after the cut: the trimmed keys were replaced
            ours_pass, theirs_pass = passes(torch_engine, mlx_engine, prompt, 1)
            assert_parity(
                ours_pass.open_logits(canvas, None, every), theirs_pass.open_logits(canvas, None, every)
            )


@pytest.mark.parametrize("prefix,suffix", FILLS)
def test_the_same_fill_from_both_engines(shipped, prefix, suffix):
    assert_same_fill(*shipped, prefix, suffix)


def test_the_same_holes_rewrite_and_draft_rows_from_both_engines(shipped):
    assert_same_holes_rewrite_and_draft_rows(*shipped)


def test_the_same_name_scores_from_both_engines(shipped):
    assert_same_name_scores(*shipped)


def test_difill_fill_engine_mlx_prints_the_torch_engines_text(capsys):
    from difill.cli import main

    demo = f"{Path(__file__).parents[3] / 'examples' / 'demo.py'}:28:21"
    shown = {}
    for engine in ("torch", "mlx"):
        assert main(["fill", demo, "--engine", engine, "--device", "cpu", "--json"]) == 0
        shown[engine] = json.loads(capsys.readouterr().out)
    assert shown["mlx"]["model_text"] == shown["torch"]["model_text"]
    assert shown["mlx"]["text"] == shown["torch"]["text"] and shown["mlx"]["steps"] == shown["torch"]["steps"]


# ---------------------------------------------------------------- the backend contract (tiny model)


def test_it_is_an_infill_backend_with_the_checkpoints_settings(tiny):
    torch_engine, mlx_engine = tiny
    assert isinstance(mlx_engine, InfillBackend)
    assert mlx_engine.loaded.model is None  # the weights run in MLX only
    assert mlx_engine.loaded.max_prefix_tokens == torch_engine.loaded.max_prefix_tokens == 128


def test_contract_fills_holes_rewrites_and_drafts_like_torch(tiny):
    torch_engine, mlx_engine = tiny
    assert_same_contract(torch_engine, mlx_engine)


def test_a_fill_is_cancelled_between_passes(tiny):
    _, mlx_engine = tiny
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 2

    with pytest.raises(Cancelled):
        mlx_engine.fill("def f(x):\n    return ", "\n", FillOptions(max_steps=12, entropy_bound=1e-9), stop)
    assert len(asked) == 3  # asked before the prompt and each pass: one pass ran, the second was refused
    assert mlx_engine.fill("x = ", "\n").stats.steps >= 1  # the engine serves the next fill


def test_concurrent_fills_from_worker_threads_take_turns(tiny):
    torch_engine, mlx_engine = tiny
    results, errors = {}, []

    def run(prefix: str) -> None:
        try:
            results[prefix] = mlx_engine.fill(prefix, "\n").text
        except Exception as err:  # noqa: BLE001
            errors.append(err)

    prefixes = [f"x{i} = " for i in range(4)]
    threads = [threading.Thread(target=run, args=(p,)) for p in prefixes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and all(not t.is_alive() for t in threads)
    assert results == {p: torch_engine.fill(p, "\n").text for p in prefixes}


def test_engine_mlx_is_chosen_by_name_never_by_auto(tiny_model_dir, monkeypatch):
    assert isinstance(local_backend(str(tiny_model_dir), "cpu", EngineChoice("mlx")), MlxEngine)
    monkeypatch.delenv("DIFILL_ENGINE", raising=False)
    assert not isinstance(local_backend(str(tiny_model_dir), "cpu", EngineChoice("auto")), MlxEngine)


# ---------------------------------------------------------------- bad input


def test_without_mlx_the_error_gives_the_install_command(monkeypatch, tiny_model_dir):
    monkeypatch.setitem(sys.modules, "mlx_vlm", None)  # as if not installed: importing it fails
    with pytest.raises(ModelLoadError, match=r'pip install "difill\[mlx\]"'):
        load_mlx_engine(tiny_model_dir)


def test_float16_weights_are_cast_on_the_cpu_and_a_forced_float16_is_refused_clearly(tiny_model_dir):
    import mlx.core as mx
    from mlx.utils import tree_flatten

    engine = load_mlx_engine(DEFAULT_MODEL_DIR)  # stored in float16
    dtypes = {v.dtype for _, v in tree_flatten(engine.mlx_model.parameters())}
    if mx.default_device() == mx.cpu:
        assert dtypes == {mx.float32}
        with pytest.raises(ModelLoadError, match="float32 only"):
            load_mlx_engine(tiny_model_dir, dtype="float16")
    assert engine.fill("x = ", "\n").stats.steps >= 1


def test_a_config_without_the_full_attention_head_keys_is_completed_or_named(tiny, tiny_model_dir, tmp_path):
    """transformers leaves global_head_dim and num_global_key_value_heads out of the configs it
    saves (the tiny model's has neither): they are read off the weights, or named when they cannot be."""
    torch_engine, mlx_engine = tiny
    assert "global_head_dim" not in json.loads((tiny_model_dir / "config.json").read_text())["text_config"]
    assert mlx_engine.mlx_model.config.text_config.global_head_dim == 16  # not mlx-vlm's 512
    broken = shutil.copytree(tiny_model_dir, tmp_path / "model")
    (broken / "model.safetensors").rename(broken / "model-00001-of-00001.safetensors")
    with pytest.raises(ModelLoadError, match="global_head_dim or num_global_key_value_heads"):
        load_mlx_engine(broken)


def test_a_checkpoint_missing_a_weight_names_it(tiny_model_dir, tmp_path):
    from safetensors.numpy import load_file, save_file

    broken = shutil.copytree(tiny_model_dir, tmp_path / "model")
    weights = load_file(broken / "model.safetensors")
    gone = next(k for k in weights if k.endswith("layers.1.self_attn.q_proj.weight"))
    del weights[gone]
    save_file(weights, broken / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelLoadError, match=r"layers\.1\.self_attn\.q_proj\.weight"):
        load_mlx_engine(broken)


# ---------------------------------------------------------------- an MLX-converted, 4-bit checkpoint


@pytest.fixture(scope="module")
def four_bit(tmp_path_factory):
    """The shipped model as a Mac user converts the 26B: ``mlx_vlm convert -q --q-bits 4``."""
    import os
    import subprocess

    out = tmp_path_factory.mktemp("mlx-q4") / "difill-default-4bit"
    command = [sys.executable, "-m", "mlx_vlm", "convert", "--hf-path", str(DEFAULT_MODEL_DIR),
               "--mlx-path", str(out), "-q", "--q-bits", "4"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return load_mlx_engine(out)


def test_a_4bit_mlx_checkpoint_fills_and_self_conditions_through_its_packed_table(shipped, four_bit):
    import mlx.core as mx

    _, full = shipped
    embed = four_bit.mlx_model.model.decoder.embed_tokens
    assert hasattr(embed, "scales")  # a QuantizedEmbedding: soft_embeddings multiplies the packed table
    loaded = full.loaded
    prompt = [loaded.ids.bos, *encode(loaded.tokenizer, "import os\n\ndef add(a, b):\n    return ")]
    canvas = torch.randint(
        8, loaded.ids.vocab_size, (2, 32), generator=torch.Generator().manual_seed(0)
    ).numpy()
    slots = np.ones((2, 32), dtype=bool).nonzero()
    quantized = MlxCanvasPass(four_bit.mlx_model, four_bit.prefix_cache.encode(prompt).cache, 2)
    reference = MlxCanvasPass(full.mlx_model, full.prefix_cache.encode(prompt).cache, 2)
    logits = quantized.open_logits(canvas, None, slots)
    # 4 bits move a 4M model's logits by up to ~1 (measured 1.05); the argmax mostly stays (92%).
    agree = (logits.argmax(-1) == reference.open_logits(canvas, None, slots).argmax(-1)).mean()
    assert agree >= 0.75
    soft = np.array(quantized.soft_embeddings(canvas, slots, logits))  # (B, L, D)
    table = mx.dequantize(embed.weight, embed.scales, embed.biases, embed.group_size, embed.bits)  # (V, D)
    expected = (
        torch.from_numpy(logits).softmax(-1).numpy()
        @ np.array(table, dtype=np.float32)
        * embed_scale(four_bit)
    )
    assert np.abs(soft.reshape(-1, soft.shape[-1]) - expected).max() < 1e-3
    result = four_bit.fill("def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n", FillOptions(seed=7))
    assert result.candidates and result.stats.steps >= 1


def embed_scale(engine: MlxEngine) -> float:
    return float(engine.mlx_model.model.decoder.embed_scale)


# ---------------------------------------------------------------- the 26B's layout (tests/real_shape.py)


def test_the_26b_layout_matches_torch_past_the_sliding_window(gemma_model_dir):
    """12 layers in the 5:1 pattern, a 24-token sliding window shorter than the prompt, top-2 of 8
    experts, K=V full-attention layers with their own head size (which transformers leaves out of
    the config it saves: read off the weights here), a 262,144-row vocabulary.  Measured: every
    row within 4e-6, and 1.4e-5 after a cut back that the wrapped sliding caches cannot trim."""
    torch_engine = InfillEngine(load_model(gemma_model_dir, device="cpu"))
    mlx_engine = load_mlx_engine(gemma_model_dir)
    assert mlx_engine.mlx_model.config.text_config.num_global_key_value_heads is not None
    generator = torch.Generator().manual_seed(0)
    prompt = [torch_engine.loaded.ids.bos, *torch.randint(10, 600, (40,), generator=generator).tolist()]
    canvas = torch.randint(10, 600, (1, 32), generator=generator).numpy()
    slots = (torch.rand(1, 32, generator=generator) < 0.7).numpy().nonzero()
    for tokens in (prompt, prompt[:30]):  # the second is a cut back past the window: encoded again
        ours_pass, theirs_pass = passes(torch_engine, mlx_engine, tokens, 1)
        with torch.inference_mode():
            assert_parity(
                ours_pass.open_logits(canvas, None, slots), theirs_pass.open_logits(canvas, None, slots)
            )
    assert mlx_engine.prefix_cache.reencodes == 1
    fills = [engine.fill("def f(x):\n    return ", "\n") for engine in (torch_engine, mlx_engine)]
    assert [c.text for c in fills[1].candidates] == [c.text for c in fills[0].candidates]


def checkpoint_with_code(tiny_model_dir, tmp_path, where: str = "top") -> tuple[Path, Path]:
    """The tiny checkpoint plus a modeling.py that leaves a marker if anything imports it."""
    hostile = shutil.copytree(tiny_model_dir, tmp_path / "hostile")
    marker = tmp_path / "the-checkpoint-code-ran"
    (hostile / "modeling.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    config = json.loads((hostile / "config.json").read_text())
    (config if where == "top" else config["text_config"])["model_file"] = "modeling.py"
    (hostile / "config.json").write_text(json.dumps(config))
    return hostile, marker


@pytest.mark.parametrize("where", ["top", "text_config"])
def test_a_checkpoint_that_names_its_own_model_file_is_refused_and_its_code_never_runs(
    tiny_model_dir, tmp_path, where
):
    # Issue 51, item 2: mlx-vlm imported config.json's model_file inside the server, then served.
    hostile, marker = checkpoint_with_code(tiny_model_dir, tmp_path, where)
    with pytest.raises(ModelLoadError, match="model_file='modeling.py'.*never runs a checkpoint's code"):
        load_mlx_engine(hostile)
    assert not marker.exists()


def test_a_checkpoint_of_another_architecture_is_refused_before_mlx_vlm_loads_it(tiny_model_dir, tmp_path):
    other = shutil.copytree(tiny_model_dir, tmp_path / "other")
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "model_type": "qwen2"}))
    with pytest.raises(ModelLoadError, match="'qwen2', not 'diffusion_gemma'"):
        load_mlx_engine(other)


def test_the_torch_engine_never_runs_a_checkpoints_model_file_either(tiny_model_dir, tmp_path):
    hostile, marker = checkpoint_with_code(tiny_model_dir, tmp_path)
    load_model(hostile, device="cpu")  # transformers builds its own class: the key means nothing to it
    assert not marker.exists()
