"""lab/scripts/gpu_bench.py at a tiny scale on the CPU: the same code the GPU run uses."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "lab" / "scripts" / "gpu_bench.py"


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_runs_the_real_structure_at_tiny_scale(capsys):
    bench = load_script()
    result = bench.main(["--tiny", "--device", "cpu", "--dtype", "fp32", "--prefix-tokens", "100",
                         "--canvas", "16", "32", "--repeat", "1", "--hbm-gbps", "100", "--json"])  # fmt: skip
    assert result["shape"] == "tiny" and 0 < result["active_parameters"] < result["parameters"]
    assert [row["canvas"] for row in result["canvases"]] == [16, 32]
    for row in result["canvases"]:
        assert row["step_ms"] > 0 and row["tokens_per_s"] > 0 and row["roofline_step_ms"] > 0
    assert result["kv_cache_bytes"] > 0 and '"canvases"' in capsys.readouterr().out


def test_the_26b_shape_has_the_published_parameter_count():
    """Counted on the meta device: ~25.2B parameters, ~3.8B active (8 of 128 experts)."""
    import torch

    bench = load_script()
    model = bench.build(bench.REAL_26B_A4B, torch.device("meta"), torch.bfloat16)
    total, active = bench.parameter_counts(model, bench.REAL_26B_A4B)
    assert 24.5e9 < total < 26e9 and 3.5e9 < active < 4.1e9
