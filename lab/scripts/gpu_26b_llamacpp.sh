#!/usr/bin/env bash
# The 26B's denoising step with llama.cpp on a GPU (issue 49, item 5): one command, at most 10
# minutes on a lent machine; never needed by CI, never run by the tests.
#
#   device run, timeout_s 600:   bash lab/scripts/gpu_26b_llamacpp.sh
#
# What it does, on the machine itself (no network; only the repository's tracked files travel):
#   1. unpacks the vendored llama.cpp tarball (third_party/llama.cpp, PR #24423) and, while
#      2. `build_native(cuda=True)` builds difill-llama-worker against it (GGML_NATIVE: CUDA
#         kernels for this GPU's architecture only, which keeps the build to a few minutes),
#      3. lab/big_gguf.py writes the full-size synthetic DiffusionGemma-26B-A4B GGUF (random
#         weights in Q4_K_M's types, 15.6 GiB) with the tree's own gguf-py;
#   4. loads it with every layer on the GPU and times one step at C=16, 32 and 256 (self-
#      conditioned and not), prefill and a 12-step fill, with the GPU's HBM roofline: the bytes a
#      step must read (every non-expert weight, the tied embedding as LM head, the experts a
#      canvas routes to) over the card's bandwidth (H100 3.35 TB/s, H200 4.8 TB/s).
# Random weights: time and memory are the real model's; the text is not.  Figures go to
# $OUT/gpu26b.json (and stdout); put them in docs/llamacpp.md by hand, with the card's name.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu26b}
GGUF=${GGUF:-/tmp/dg26b-q4km.gguf}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT"
started=$(date +%s)
say() { echo "[$(( $(date +%s) - started )) s] $*"; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
for tool in cmake nvcc python3; do
  command -v "$tool" >/dev/null || { echo "gpu_26b_llamacpp.sh: $tool is missing on this machine" >&2; exit 2; }
done

# gguf-py from the vendored tree (the PyPI package may be absent); gguf_export imports
# safetensors at its top but big_gguf never calls it: a stub stands in if it is missing.
tree=/tmp/llama-src
mkdir -p "$tree"
tar -xJf third_party/llama.cpp/llama.cpp-pr24423-*.tar.xz -C "$tree"
gguf_py="$tree/llama.cpp/gguf-py"
export PYTHONPATH="$PWD/src:$gguf_py${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if ! python3 -c "import safetensors" 2>/dev/null; then
  mkdir -p /tmp/stub/safetensors && echo "def safe_open(*a, **k): raise ImportError('stub')" > /tmp/stub/safetensors/__init__.py
  export PYTHONPATH="$PYTHONPATH:/tmp/stub"
fi
python3 -c "import numpy, gguf" || { echo "gpu_26b_llamacpp.sh: numpy and gguf-py must import" >&2; exit 2; }

say "writing $GGUF in the background"
python3 -m lab.big_gguf write "$GGUF" > "$OUT/write.log" 2>&1 &
writer=$!

say "building the CUDA worker with $JOBS jobs"
python3 - "$JOBS" <<'PY' 2>&1 | tail -5 | tee "$OUT/build.log"
import sys
from difill.engine.native.build import build_native
result = build_native(cuda=True, jobs=int(sys.argv[1]), log=lambda line: None)
print(result.binary, f"built in {result.seconds:.0f} s" if result.built else "already current")
PY
wait "$writer" || { cat "$OUT/write.log"; exit 1; }
tail -1 "$OUT/write.log"

say "measuring"
python3 -m lab.big_gguf measure "$GGUF" --gpu-layers 999 --threads "$JOBS" --warm \
  --prompt 512 --canvas 16 32 256 --repeats 5 --steps 12 --json "$OUT/gpu26b.json" | tee "$OUT/measure.log"
nvidia-smi --query-gpu=memory.used --format=csv | tee -a "$OUT/gpu.txt"
rm -f "$GGUF"
say "done"
