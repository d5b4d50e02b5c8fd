"""lab/big_gguf.py: the synthetic DiffusionGemma GGUF on its tiny config (seconds), the 26B's
plan without writing it, and the refusal when the disk or the memory is short."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from lab import big_gguf  # noqa: E402
from lab.big_gguf import FULL, GIB, SMALL, file_bytes, refusal, tensor_plan, write_big_gguf  # noqa: E402

A = "diffusion-gemma"


def field(reader, key):
    value = reader.get_field(key)
    assert value is not None, key
    return value.contents()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("big") / "small.gguf"
    write_big_gguf(out, SMALL, check_memory=False, log=None)
    return out


def test_the_tiny_file_reads_back_with_the_exporters_keys_and_the_planned_tensors(small):
    reader = gguf.GGUFReader(small)
    assert field(reader, "general.architecture") == A
    assert field(reader, "general.file_type") == big_gguf.Q4_K_M_FILE_TYPE
    assert field(reader, f"{A}.block_count") == SMALL.layers
    assert field(reader, f"{A}.embedding_length") == SMALL.hidden
    assert field(reader, f"{A}.expert_count") == SMALL.experts
    assert field(reader, f"{A}.expert_used_count") == SMALL.top_k
    assert field(reader, f"{A}.expert_feed_forward_length") == SMALL.moe_intermediate
    assert field(reader, f"{A}.attention.head_count_kv") == [SMALL.kv_heads, SMALL.global_kv_heads]
    assert field(reader, f"{A}.attention.key_length") == SMALL.global_head_dim
    assert field(reader, f"{A}.attention.key_length_swa") == SMALL.head_dim
    assert field(reader, f"{A}.attention.sliding_window_pattern") == [True, False]
    assert field(reader, f"{A}.final_logit_softcapping") == pytest.approx(30.0)
    assert field(reader, "diffusion.canvas_length") == SMALL.canvas_length
    assert len(field(reader, "tokenizer.ggml.tokens")) == SMALL.vocab

    plan = {spec.name: spec for spec in tensor_plan(SMALL)}
    assert {t.name for t in reader.tensors} == set(plan)
    for tensor in reader.tensors:
        spec = plan[tensor.name]
        assert tensor.tensor_type.name == spec.kind, tensor.name
        assert tuple(int(n) for n in tensor.shape) == spec.ne, tensor.name
        assert tensor.n_bytes == spec.nbytes, tensor.name
    # every block's fp16 scale is finite and small; norms are ones
    blocks = next(t for t in reader.tensors if t.name == "blk.0.attn_q.weight").data
    d = blocks.reshape(-1, 144)[:, 0:4].copy().view(np.float16)
    assert np.isfinite(d).all() and np.abs(d).max() < 1e-2
    norm = next(t for t in reader.tensors if t.name == "blk.0.attn_norm.weight").data
    assert (norm == 1.0).all()
    assert not small.with_name(small.name + ".partial").exists()


def test_k_eq_v_leaves_out_the_full_layers_value_projection_and_both_are_supported():
    names = {spec.name for spec in tensor_plan(SMALL)}
    assert "blk.0.attn_v.weight" in names and "blk.1.attn_v.weight" not in names  # layer 1 is full
    names = {spec.name for spec in tensor_plan(replace(SMALL, k_eq_v=False))}
    assert "blk.1.attn_v.weight" in names


def test_the_26b_plan_has_its_layout_and_q4_k_m_size():
    plan = tensor_plan(FULL)
    kinds = {spec.name: spec.kind for spec in plan}
    assert kinds["token_embd.weight"] == "Q6_K"  # tied: the output's type
    assert kinds["blk.0.ffn_gate_up_exps.weight"] == "Q4_K"
    assert kinds["blk.0.ffn_down_exps.weight"] == "Q8_0"  # 704 is no multiple of 256: Q6_K -> Q8_0
    assert kinds["blk.3.ffn_down_exps.weight"] == "Q5_0"  # Q4_K -> Q5_0
    assert kinds["blk.0.ffn_gate_inp.weight"] == "F32"
    full_layers = [i for i, t in enumerate(FULL.layer_types()) if t == "full_attention"]
    assert full_layers == [5, 11, 17, 23, 29]
    assert not any(f"blk.{i}.attn_v.weight" in kinds for i in full_layers)
    assert 15.0 * GIB < file_bytes(plan) < 16.5 * GIB  # Unsloth's Q4_K_M: "16 GB"


def test_a_file_the_disk_or_memory_would_not_hold_is_refused_before_writing(tmp_path, monkeypatch):
    plan = tensor_plan(FULL)
    out = tmp_path / "big.gguf"
    line = refusal(out, FULL, plan, free=10 * GIB, available=64 * GIB)
    assert line.startswith("refused:") and "GiB on disk" in line and "10.0 GiB free" in line
    line = refusal(out, FULL, plan, free=100 * GIB, available=8 * GIB)
    assert "GiB of memory" in line and "8.0 GiB available" in line
    assert refusal(out, FULL, plan, free=100 * GIB, available=64 * GIB) is None
    assert refusal(out, FULL, plan, check_memory=False, free=100 * GIB) is None

    monkeypatch.setattr(big_gguf, "mem_available", lambda: 1 * GIB)
    with pytest.raises(SystemExit, match="needs .* GiB of memory"):
        write_big_gguf(out, FULL, log=None)
    assert list(tmp_path.iterdir()) == []


def test_the_tiny_file_loads_in_the_llamacpp_worker_with_finite_logits(small):
    from difill.engine.native.build import BuildError, built_worker
    from difill.engine.native.worker import OPEN, FillRules, LlamaWorker, WorkerSettings

    try:
        binary = built_worker()
    except BuildError as error:
        pytest.skip(f"no llama.cpp worker here: {error}")
    worker = LlamaWorker(WorkerSettings(binary, small, threads=1))
    try:
        info = worker.start()
        assert (info.vocab_size, info.layers, info.hidden_size) == (SMALL.vocab, SMALL.layers, SMALL.hidden)
        worker.fill([2, 300, 301, 302], FillRules(SMALL.vocab))
        canvas, flags = np.full((1, 16), 4), np.full((1, 16), OPEN, dtype=np.uint8)
        for use_sc in (False, True):
            assert np.isfinite(worker.step(canvas, flags, use_sc, 1.0).values).all()
    finally:
        worker.close()
