"""Benchmark DiffusionGemma-26B-A4B's architecture at random init, in bf16, on one GPU.

    python -m lab.scripts.gpu_bench --device cuda            # the real shape (~52 GB of bf16 weights)
    python -m lab.scripts.gpu_bench --tiny --device cpu      # the same code at a tiny scale (tests)

Random weights: the figures are speed and memory, never quality.  Per canvas length it measures
the encoder prefill of the prefix, one decoder step (difill's CanvasDecoder: every layer over the
cached prefix + canvas, the LM head on every slot), tokens/s if a canvas is finished in
``--steps-per-canvas`` steps (vLLM's max_denoising_steps), and peak memory.  Each step is set
against the HBM roofline: a step must read every weight it touches (a 256-slot canvas routes to
nearly all experts, so all of them) plus the KV cache, so ``bytes / bandwidth`` bounds it below.

The 26B-A4B shape below is the published config as remembered, not read from a checkpoint (none
can be downloaded here); its parameter count (printed) should be ~25.2B total, ~3.8B active.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion, DynamicCache

from difill.engine.decoder import CanvasDecoder
from difill.engine.hf_compat import cache_kwargs
from difill.engine.model import TINY_VISION_CONFIG

REAL_26B_A4B = dict(
    vocab_size=262_144, hidden_size=2816, intermediate_size=2112, num_hidden_layers=30,
    num_attention_heads=16, num_key_value_heads=8, head_dim=256, global_head_dim=512,
    num_global_key_value_heads=2, attention_k_eq_v=True, max_position_embeddings=262_144,
    sliding_window=1024, num_experts=128, top_k_experts=8, moe_intermediate_size=704,
    final_logit_softcapping=30.0,
)  # fmt: skip
TINY = dict(
    REAL_26B_A4B, vocab_size=4096, hidden_size=32, intermediate_size=64, num_hidden_layers=6,
    num_attention_heads=4, num_key_value_heads=2, head_dim=8, global_head_dim=16,
    num_global_key_value_heads=1, max_position_embeddings=4096, sliding_window=64, num_experts=8,
    top_k_experts=2, moe_intermediate_size=16,
)  # fmt: skip
HBM_BYTES_PER_S = {"H100": 3.35e12, "H200": 4.8e12, "A100": 2.0e12, "L40S": 0.864e12, "RTX 5090": 1.79e12}


def bandwidth_of(device: torch.device, given: float | None) -> float | None:
    if given:
        return given * 1e9
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((bw for key, bw in HBM_BYTES_PER_S.items() if key in name), None)


def build(shape: dict, device: torch.device, dtype: torch.dtype) -> DiffusionGemmaForBlockDiffusion:
    config = DiffusionGemmaConfig(
        text_config=dict(shape), vision_config=TINY_VISION_CONFIG, canvas_length=256
    )
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = DiffusionGemmaForBlockDiffusion(config)
    finally:
        torch.set_default_dtype(default)
    return model.eval()


def parameter_counts(model, shape: dict) -> tuple[int, int]:
    total = sum(p.numel() for n, p in model.named_parameters() if "vision" not in n)
    experts = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    active = total - experts + experts * shape["top_k_experts"] // shape["num_experts"]
    return total, active


def timed(fn, device: torch.device, repeat: int) -> float:
    """Median ms of ``repeat`` calls after one warm-up."""
    fn()
    times = []
    for _ in range(repeat):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append((time.perf_counter() - t0) * 1000)
    return sorted(times)[len(times) // 2]


@torch.inference_mode()
def bench(args) -> dict:
    device = torch.device(args.device)
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    shape = TINY if args.tiny else REAL_26B_A4B
    model = build(shape, device, dtype)
    total, active = parameter_counts(model, shape)
    bytes_per = torch.finfo(dtype).bits // 8
    bandwidth = bandwidth_of(device, args.hbm_gbps)
    vocab = shape["vocab_size"]
    prefix = torch.randint(0, vocab, (1, args.prefix_tokens), device=device)
    cache = DynamicCache(config=model.config.text_config)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    model.model.encoder(input_ids=prefix, use_cache=True, **cache_kwargs(cache))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    prefill_ms = (time.perf_counter() - t0) * 1000
    kv_bytes = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    rows = []
    for length in args.canvas:
        canvas = torch.randint(0, vocab, (1, length), device=device)
        decoder = CanvasDecoder(model, cache)

        def step(decoder=decoder, canvas=canvas):
            decoder.logits(decoder.hidden(canvas, None))

        ms = timed(step, device, args.repeat)
        step_bytes = total * bytes_per + kv_bytes  # every weight (all experts at 256 slots) + the cache
        roofline_ms = step_bytes / bandwidth * 1000 if bandwidth else None
        rows.append({
            "canvas": length, "step_ms": round(ms, 3),
            "tokens_per_s": round(length / (args.steps_per_canvas * ms / 1000), 1),
            "roofline_step_ms": round(roofline_ms, 3) if roofline_ms else None,
            "of_roofline": round(roofline_ms / ms, 3) if roofline_ms else None,
        })  # fmt: skip
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    hbm = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else None
    return {
        "shape": "tiny" if args.tiny else "26B-A4B", "device": str(device), "dtype": args.dtype,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "parameters": total, "active_parameters": active, "weight_bytes": total * bytes_per,
        "prefix_tokens": args.prefix_tokens, "prefill_ms": round(prefill_ms, 3), "kv_cache_bytes": kv_bytes,
        "steps_per_canvas": args.steps_per_canvas, "hbm_bytes_per_s": bandwidth,
        "peak_memory_bytes": peak, "device_memory_bytes": hbm, "canvases": rows,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    parser.add_argument("--tiny", action="store_true", help="a tiny model of the same structure (CPU tests)")
    parser.add_argument("--prefix-tokens", type=int, default=1024)
    parser.add_argument("--canvas", type=int, nargs="+", default=[32, 64, 256])
    parser.add_argument("--steps-per-canvas", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--hbm-gbps", type=float, default=None, help="HBM bandwidth; default: by GPU name")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = bench(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['shape']} on {result['device_name']}: {result['parameters'] / 1e9:.2f}B parameters "
              f"({result['active_parameters'] / 1e9:.2f}B active), prefill {result['prefix_tokens']} tokens "
              f"{result['prefill_ms']:.1f} ms, peak {((result['peak_memory_bytes'] or 0) / 2**30):.1f} GiB")  # fmt: skip
        for row in result["canvases"]:
            print(f"  canvas {row['canvas']}: {row['step_ms']:.2f} ms/step, {row['tokens_per_s']:.0f} tok/s "
                  f"at {args.steps_per_canvas} steps/canvas, roofline {row['roofline_step_ms']} ms "
                  f"({row['of_roofline']} of it)")  # fmt: skip
    return result


if __name__ == "__main__":
    main()
