"""A full-size synthetic DiffusionGemma-26B-A4B GGUF (issue 49, item 5): random weights, real layout.

``python -m lab.big_gguf write OUT.gguf`` writes the 26B's text model (research.md §11:
hidden 2816, 30 layers 5 sliding : 1 full, 16 heads, 8 / 2 KV heads, head_dim 256 / 512, a dense
MLP of 2112 plus 128 experts top-8 of 704, vocab 262,144, window 1024, softcap 30, tied
embeddings, K=V full attention by default) in the tensor types ``llama-quantize Q4_K_M`` gives
this architecture (the rules of the vendored ``src/llama-quant.cpp``: Q4_K; Q6_K for the tied
embedding and for attn_v / ffn_down in the "more bits" layers; rows that are not a multiple of
256 fall back, Q4_K to Q5_0 and Q6_K to Q8_0, as ffn_down (2112) and the experts' down (704) do;
norms, scales and the router f32).

Nothing is ever held whole: the tensor infos go first, then each tensor's quantized blocks are
drawn at random a few MiB at a time and written straight to the file (random nibbles and
sub-block scales, small finite fp16 ``d``/``dmin``): no bf16 or f32 copy exists on disk or in
memory.  The metadata is gguf_export.py's own (``write_metadata``), so the file is what
``difill export-gguf`` would write for the real checkpoint, but for the tokenizer (synthetic
names) and the weights.  A file that the disk or this machine's memory would not hold is refused
before anything is written, with what it needs.

``python -m lab.big_gguf measure OUT.gguf`` loads it with ``difill-llama-worker`` through
engine/native/worker.py with token ids (difill's engine needs a tokenizer of the same vocabulary,
which does not exist here) and prints load time, the worker's VmRSS / VmHWM, one step at C=16 and
C=32, and a ghost-text-sized fill.  Random weights: speed and memory are meaningful, text is not.

The shape, the tensor plan and the roofline's arithmetic are lab/big_gguf_layout.py.

A lab tool: nothing in the server or the engine imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from difill.engine.native import gguf_export
from lab.big_gguf_layout import (
    BLOCKS,
    FULL,
    GIB,
    SMALL,
    BigConfig,
    TensorSpec,
    file_bytes,
    step_bytes,
    step_flops,
    tensor_plan,
)

if TYPE_CHECKING:
    from difill.engine.native.worker import LlamaWorker

CHUNK_BYTES = 32 << 20  # random blocks drawn and written per piece
MEMORY_MARGIN = 1 * GIB  # prompt store, compute buffers and the worker itself, at the default context
DISK_MARGIN = 1 * GIB
Q4_K_M_FILE_TYPE = 15  # LLAMA_FTYPE_MOSTLY_Q4_K_M


def memory_needed(config: BigConfig, plan: list[TensorSpec]) -> int:
    """What loading it and running a self-conditioned step takes: the weights, the worker's f16
    transposed embedding for self-conditioning (models/diffusion-gemma.cpp dg_ensure_sc_embT),
    and a margin for the prompt store and compute buffers at the worker's default context."""
    return file_bytes(plan) + config.vocab * config.hidden * 2 + MEMORY_MARGIN


def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def refusal(out: Path, config: BigConfig, plan: list[TensorSpec], check_memory: bool = True,
            free: int | None = None, available: int | None = None) -> str | None:  # fmt: skip
    """One line saying why ``out`` is not written (disk or memory short, with what it needs); None: go."""
    size = file_bytes(plan) + 64 * (1 << 20)
    if free is None:
        folder = out.parent
        while not folder.exists():
            folder = folder.parent
        free = shutil.disk_usage(folder).free
    if free < size + DISK_MARGIN:
        return (
            f"refused: {out} needs {size / GIB:.1f} GiB on disk (+{DISK_MARGIN / GIB:.0f} GiB spare), "
            f"{free / GIB:.1f} GiB free there"
        )
    if check_memory:
        need = memory_needed(config, plan)
        if available is None:
            available = mem_available()
        if available < need:
            return (
                f"refused: loading {out.name} needs {need / GIB:.1f} GiB of memory (weights "
                f"{file_bytes(plan) / GIB:.1f}, self-conditioning table {config.vocab * config.hidden * 2 / GIB:.1f}, "
                f"{MEMORY_MARGIN / GIB:.0f} spare), {available / GIB:.1f} GiB available "
                "(--no-memory-check writes it for another machine)"
            )
    return None


# ------------------------------------------------------------------ writing


def random_blocks(rng: np.random.Generator, kind: str, count: int) -> np.ndarray:
    """``count`` random blocks of ``kind`` as bytes: random quants and sub-block scales, finite
    fp16 block scales small enough that a weight is about N(0, 0.02)."""
    block, size = BLOCKS[kind]
    data = np.frombuffer(bytearray(rng.bytes(count * size)), dtype=np.uint8).reshape(count, size)
    f16 = lambda x: np.frombuffer(np.float16(x).tobytes(), dtype=np.uint8)  # noqa: E731
    if kind == "Q4_K":  # d, dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles
        data[:, 0:2] = f16(8e-5)
        data[:, 2:4] = f16(6e-4)  # ~7.5 d: the mean weight near zero
    elif kind == "Q6_K":  # ql[128], qh[64], int8 scales[16], d
        data[:, 192:208] &= 0x0F
        data[:, 208:210] = f16(1.2e-4)
    elif kind == "Q5_0":  # d, qh[4], qs[16]
        data[:, 0:2] = f16(2e-3)
    elif kind == "Q8_0":  # d, int8 qs[32]
        data[:, 0:2] = f16(2.7e-4)
    else:
        raise ValueError(kind)
    return data


def f32_values(spec: TensorSpec, config: BigConfig, rng: np.random.Generator) -> np.ndarray:
    if spec.fill == "ones":
        return np.ones(spec.elements, dtype=np.float32)
    if spec.fill == "rope":
        return gguf_export.rope_freqs(config.text_config())
    return (rng.standard_normal(spec.elements) * 0.02).astype(np.float32)


def write_big_gguf(
    out: Path, config: BigConfig = FULL, seed: int = 0, check_memory: bool = True,
    log=print,
) -> Path:  # fmt: skip
    """Write ``out`` (the file appears only when complete); refuses with SystemExit's one line
    when the disk or the memory would not hold it."""
    import gguf

    out = Path(out)
    plan = tensor_plan(config)
    if reason := refusal(out, config, plan, check_memory):
        raise SystemExit(reason)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    writer = gguf.GGUFWriter(str(partial), gguf_export.ARCH)
    text = config.text_config()
    gguf_export.write_metadata(
        writer, Path(f"synthetic-diffusiongemma-{config.layers}L-{config.hidden}"),
        {"canvas_length": config.canvas_length}, text, "f32",
    )  # fmt: skip
    file_type = gguf.Keys.General.FILE_TYPE
    writer.kv_data[0][file_type] = gguf.GGUFValue(Q4_K_M_FILE_TYPE, gguf.GGUFValueType.UINT32)
    write_tokenizer(writer, config)
    for spec in plan:
        writer.add_tensor_info(
            spec.name, tuple(reversed(spec.ne)), np.dtype(np.float32), spec.nbytes,
            raw_dtype=gguf.GGMLQuantizationType[spec.kind],
        )  # fmt: skip
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    # write_tensor_data, a piece at a time: align, the tensor's bytes, pad to the alignment.
    fout = writer.fout[0]
    rng = np.random.default_rng(seed)
    started, written = time.monotonic(), 0
    for n, spec in enumerate(plan):
        writer.write_padding(fout, fout.tell())
        if spec.kind == "F32":
            f32_values(spec, config, rng).tofile(fout)
        else:
            block, size = BLOCKS[spec.kind]
            left = spec.elements // block
            per_chunk = max(1, CHUNK_BYTES // size)
            while left:
                count = min(left, per_chunk)
                random_blocks(rng, spec.kind, count).tofile(fout)
                left -= count
        writer.write_padding(fout, spec.nbytes)
        written += spec.nbytes
        if log and (n % 25 == 0 or n == len(plan) - 1):
            log(f"  {n + 1}/{len(plan)} tensors, {written / GIB:.2f} GiB, {time.monotonic() - started:.0f} s")
    for tensors in writer.tensors:
        tensors.clear()  # their data went out above
    writer.close()
    partial.replace(out)
    return out


def write_tokenizer(writer, config: BigConfig) -> None:
    """A byte-level BPE vocabulary of the right size with synthetic names: Gemma's special ids
    (pad 0, eos 1, bos 2, unk 3, mask 4), the 256 byte symbols, then ``<t{i}>`` up to the vocab."""
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    byte_symbols = list(_byte_symbols())
    tokens = specials + byte_symbols + ["ĠĠ"]
    tokens += [f"<t{i}>" for i in range(len(tokens), config.vocab)]
    if len(tokens) != config.vocab:
        raise ValueError(f"a vocabulary of {config.vocab} cannot hold the {len(tokens)} fixed tokens")
    types = [gguf_export.TOKEN_NORMAL] * config.vocab
    types[: len(specials)] = [gguf_export.TOKEN_CONTROL] * len(specials)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(["Ġ Ġ"])
    for key, token_id in (("padding", 0), ("eos", 1), ("bos", 2)):
        writer.add_uint32(f"tokenizer.ggml.{key}_token_id", token_id)
    writer.add_uint32("tokenizer.ggml.mask_token_id", 4)


def _byte_symbols():
    """GPT-2's byte-to-unicode table, as byte-level BPE vocabularies spell single bytes."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra = 0
    for b in range(256):
        if b in printable:
            yield chr(b)
        else:
            yield chr(256 + extra)
            extra += 1


# ------------------------------------------------------------------ measuring

HBM_BYTES_PER_S = {"H100": 3.35e12, "H200": 4.8e12, "A100": 2.0e12, "L40S": 0.864e12, "L4": 0.3e12}


def read_bandwidth(size: int = 1 << 30, repeats: int = 5) -> float:
    """Bytes a second one core reads from memory (numpy's max over 1 GiB, best of 5)."""
    data = np.ones(size // 8, dtype=np.float64)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        data.max()
        best = min(best, time.perf_counter() - started)
    return size / best


def proc_memory(pid: int) -> dict[str, float]:
    """VmRSS, VmHWM (and RssAnon / RssFile) of a process, GiB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            values[key] = int(rest.split()[0]) * 1024 / GIB
    return values


def referenced(pid: int) -> dict[str, float]:
    """GiB of pages ``pid`` touched since its referenced bits were last cleared (``clear_refs``,
    /proc/PID/smaps "Referenced"): anonymous memory and the GGUF's mapped pages, so the working
    set, which VmRSS overstates with mapped pages no longer read."""
    totals = {"anon": 0, "gguf": 0, "other_files": 0}
    mapping = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        parts = line.split()
        if parts and "-" in parts[0] and not parts[0].endswith(":"):
            mapping = parts[5] if len(parts) > 5 else ""
        elif parts and parts[0] == "Referenced:":
            key = (
                "gguf" if mapping.endswith(".gguf") else "other_files" if mapping.startswith("/") else "anon"
            )
            totals[key] += int(parts[1])
    result = {key: kib / (1 << 20) for key, kib in totals.items()}
    result["total"] = sum(result.values())
    return result


def evict(path: Path) -> None:
    """Drop this one file's pages from the page cache (a cold load), nothing else's."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Run:
    """How ``measure`` runs the worker (the ``measure`` command's flags)."""

    threads: int = 2
    prompt: int = 128  # prompt tokens prefilled
    steps: int = 12  # passes of the ghost-text-sized fill
    canvases: tuple[int, ...] = (16, 32)  # canvas lengths one step is timed at
    repeats: int = 3  # timed steps per canvas length, the median reported
    cold: bool = True  # evict the file from the page cache first
    gpu_layers: int = 0
    flash_attn: bool = False


def measure(
    gguf: Path, run: Run = Run(), binary: Path | None = None, bandwidth: float | None = None,
    config: BigConfig = FULL, log=print,
) -> dict:  # fmt: skip
    """Load ``gguf`` in the worker and time it with token ids: load, prefill, one step per canvas
    (all slots open, self-conditioned after the first), and a fill of ``run.steps`` passes at the
    first canvas (difill's max_steps cap: random weights never settle)."""
    from difill.engine.native.build import built_worker
    from difill.engine.native.worker import FillRules, LlamaWorker, WorkerSettings

    if binary is None:
        binary = built_worker()
    if run.cold:
        evict(gguf)
    settings = WorkerSettings(
        Path(binary), Path(gguf), threads=run.threads, gpu_layers=run.gpu_layers, flash_attn=run.flash_attn,
        timeout_s=1800.0,
    )  # fmt: skip
    worker = LlamaWorker(settings)
    result: dict = {
        "gguf": str(gguf),
        "gguf_bytes": gguf.stat().st_size,
        "command": settings.command(),
        "cold": run.cold,
    }
    if bandwidth is None and not run.gpu_layers:
        bandwidth = read_bandwidth()
    result["bandwidth_bytes_per_s"] = bandwidth
    rng = np.random.default_rng(0)
    try:
        started = time.perf_counter()
        info = worker.start()
        result["load_s"] = time.perf_counter() - started
        result["info"] = asdict(info)
        result["after_load"] = proc_memory(worker.pid)
        log(f"loaded in {result['load_s']:.1f} s: {info}; memory {result['after_load']}")
        vocab = info.vocab_size
        ids = [2] + [int(i) for i in rng.integers(300, vocab, run.prompt - 1)]
        started = time.perf_counter()
        worker.fill(ids, FillRules(vocab))
        result["prefill_s"] = time.perf_counter() - started
        result["prefill_tokens"] = run.prompt
        log(f"prefill {run.prompt} tokens: {result['prefill_s']:.2f} s")
        result["steps"] = time_steps(worker, vocab, run, config, bandwidth, rng, log)
        result["fill"] = time_fill(worker, ids, vocab, run)
        log(f"fill: {result['fill']}")
        result["working_set"] = referenced(worker.pid)
        log(f"pages the fill touched (GiB): {result['working_set']}")
        result["end"] = proc_memory(worker.pid)
        log(f"memory at the end: {result['end']}")
    finally:
        worker.close()
    return result


def time_steps(
    worker: LlamaWorker,
    vocab: int,
    run: Run,
    config: BigConfig,
    bandwidth: float | None,
    rng: np.random.Generator,
    log,
) -> dict:
    """One step at each of ``run.canvases`` (all slots open), without and with self-conditioning,
    ``run.repeats`` times each, beside the bytes and flops a step reads and does."""
    from difill.engine.native.worker import OPEN

    plan = tensor_plan(config)
    steps: dict = {}
    for length in run.canvases:
        canvas = rng.integers(300, vocab, (1, length))
        flags = np.full((1, length), OPEN, dtype=np.uint8)
        times = {}
        for use_sc in (False, True):
            runs = []
            for _ in range(run.repeats):
                started = time.perf_counter()
                worker.step(canvas, flags, use_sc, 1.0, top_k=256)
                runs.append(time.perf_counter() - started)
            times["sc" if use_sc else "no_sc"] = {"median_s": statistics.median(runs), "runs_s": runs}
        times["step_bytes"] = step_bytes(config, plan, length)
        times["step_flops"] = step_flops(config, plan, length)
        times["gflops_no_sc"] = times["step_flops"] / times["no_sc"]["median_s"] / 1e9
        if bandwidth:
            times["roofline_s"] = times["step_bytes"] / bandwidth
        steps[length] = times
        log(f"C={length}: {times}; memory {proc_memory(worker.pid)}")
    return steps


def time_fill(worker: LlamaWorker, ids: list[int], vocab: int, run: Run) -> dict:
    """A ghost-text fill's time: the ``run.steps`` passes difill's cap allows at the first canvas."""
    from difill.engine.native.worker import OPEN, FillRules

    # A ghost-text fill: a fresh FILL of the same prompt (its K,V reused), then `steps`
    # self-conditioned passes at the first canvas, every slot open, as the sampler's cap.
    length = run.canvases[0]
    canvas = np.full((1, length), 4, dtype=np.int64)  # the mask token everywhere
    flags = np.full((1, length), OPEN, dtype=np.uint8)
    Path(f"/proc/{worker.pid}/clear_refs").write_text("1")  # the working set: from here
    started = time.perf_counter()
    worker.fill(ids, FillRules(vocab))
    for n in range(run.steps):
        out = worker.step(canvas, flags, n > 0, 1.0, top_k=256)
        canvas = out.ids[:, 0].reshape(1, length).astype(np.int64)
    return {"canvas": length, "steps": run.steps, "seconds": time.perf_counter() - started}


def gpu_bandwidth() -> float | None:
    """The HBM bandwidth of the first GPU nvidia-smi names, from the table; None if unknown."""
    import subprocess

    try:
        name = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True
        ).stdout.splitlines()[0]
    except (OSError, IndexError):
        return None
    return next((bw for key, bw in HBM_BYTES_PER_S.items() if key in name), None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.big_gguf", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    write = sub.add_parser("write", help="write the synthetic GGUF")
    write.add_argument("out", type=Path)
    write.add_argument("--small", action="store_true", help="the tiny config (seconds), not the 26B")
    write.add_argument("--no-k-eq-v", action="store_true", help="full-attention layers with their own v_proj")
    write.add_argument("--layers", type=int, help="fewer layers (same pattern)")
    write.add_argument("--seed", type=int, default=0)
    write.add_argument("--no-memory-check", action="store_true", help="write it for another machine")
    run = sub.add_parser("measure", help="load it in difill-llama-worker and time it")
    run.add_argument("gguf", type=Path)
    run.add_argument("--threads", type=int, default=2)
    run.add_argument("--prompt", type=int, default=128)
    run.add_argument("--steps", type=int, default=12)
    run.add_argument("--canvas", type=int, nargs="+", default=[16, 32])
    run.add_argument("--repeats", type=int, default=3)
    run.add_argument("--warm", action="store_true", help="keep the file in the page cache")
    run.add_argument("--json", type=Path, help="also write the figures here")
    run.add_argument("--gpu-layers", type=int, default=0)
    run.add_argument("--flash-attn", action="store_true")
    run.add_argument("--hbm-gbps", type=float, help="memory bandwidth for the roofline (GPU: by name)")
    run.add_argument("--small", action="store_true", help="the file is the tiny config (roofline)")
    run.add_argument(
        "--worker", type=Path, help="this difill-llama-worker (default: the one build-native built)"
    )
    args = parser.parse_args(argv)
    if args.command == "write":
        config = SMALL if args.small else FULL
        if args.no_k_eq_v:
            config = replace(config, k_eq_v=False)
        if args.layers:
            config = replace(config, layers=args.layers)
        plan = tensor_plan(config)
        print(f"{len(plan)} tensors, {file_bytes(plan) / GIB:.2f} GiB of tensor data -> {args.out}")
        started = time.monotonic()
        write_big_gguf(args.out, config, args.seed, not args.no_memory_check)
        seconds = time.monotonic() - started
        print(f"wrote {args.out} ({args.out.stat().st_size / GIB:.2f} GiB) in {seconds:.0f} s")
        return 0
    bandwidth = args.hbm_gbps * 1e9 if args.hbm_gbps else None
    if args.gpu_layers and bandwidth is None:
        bandwidth = gpu_bandwidth()
    run = Run(
        threads=args.threads, prompt=args.prompt, steps=args.steps, canvases=tuple(args.canvas),
        repeats=args.repeats, cold=not args.warm, gpu_layers=args.gpu_layers, flash_attn=args.flash_attn,
    )  # fmt: skip
    result = measure(args.gguf, run, args.worker, bandwidth, SMALL if args.small else FULL)
    text = json.dumps(result, indent=1, default=str)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
