#!/usr/bin/env bash
# The GPU recipe for the default model, ready before a session is lent a GPU (issue 12, item 7).
#
#   bash lab/scripts/gpu_recipe.sh prepare     # here: wheels and the compressed corpus into .gpu/ (< 64 MiB)
#   device run, carry [".gpu"], timeout_s 600:
#       bash lab/scripts/gpu_recipe.sh run     # there: install, train on the GPU for $MINUTES, weights to $OUT
#   bash lab/scripts/gpu_recipe.sh smoke       # here: the 'run' half on the CPU at a tiny scale
#
# Why this shape: the device machine reaches no network and carries at most 64 MiB, and its image
# has an older transformers (5.17, no DiffusionGemma). So difill and transformers 5.23 travel as
# wheels, and the corpus as xz-compressed JSON lines. The GPU continues the shipped weights at
# the shipped size: typing must stay within ~100 ms on a 2-core CPU, so what a GPU buys this
# project is tokens (about 100x the CPU's rate), not width. It trains with the same `difill train`
# (packed causal-LM + canvas steps), bf16 autocast, batch 128. What comes back (<= 8 files,
# 16 MiB each): the EMA weights in fp16, its training_state.json and the train log. Then, here:
# `difill eval --model <files_at>` and `difill ship` only if it beats the shipped model.
# DRAFT_SHARE=0.3 (say) trains on draft-seeded canvases too (issue 22: a model that keeps right
# drafts and mends wrong ones; docs/drafts.md "Training on draft-seeded canvases"); judge it with
# `difill eval --workspace-cases 60`, whose seeded row must beat retrieval alone and the model.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${MINUTES:-8}
CORPUS_MB=${CORPUS_MB:-38}  # compressed corpus budget inside the 64 MiB that travel

prepare() {
  mkdir -p .git/info && touch .git/info/exclude
  grep -qx '/.gpu/' .git/info/exclude || echo '/.gpu/' >> .git/info/exclude
  rm -rf .gpu && mkdir -p .gpu/wheels
  .venv/bin/pip wheel -q --no-deps -w .gpu/wheels .
  .venv/bin/pip download -q --no-deps --only-binary=:all: -d .gpu/wheels transformers==5.23.0
  # As many training files as fit the budget once compressed (code compresses ~7x with xz).
  .venv/bin/python - "$CORPUS_MB" <<'PY'
import lzma, sys
budget = int(sys.argv[1]) * 2**20
with open("data/corpus/train.jsonl", "rb") as src, open(".gpu/train.jsonl.xz", "wb") as raw:
    with lzma.open(raw, "wb", preset=6) as dst:
        for line in src:
            dst.write(line)
            if raw.tell() > budget:  # compressed bytes written so far
                break
PY
  xz -T2 -6 -c data/corpus/heldout.jsonl > .gpu/heldout.jsonl.xz
  du -sh .gpu
}

run() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/wheels/*.whl
  export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
  mkdir -p /tmp/corpus && xz -dc .gpu/train.jsonl.xz > /tmp/corpus/train.jsonl
  xz -dc .gpu/heldout.jsonl.xz > /tmp/corpus/heldout.jsonl
  nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv || true
  local shipped
  shipped=$(python3 -c "from difill.engine.model import DEFAULT_MODEL_DIR; print(DEFAULT_MODEL_DIR)")
  python3 -m difill.cli train --init "$shipped" --out /tmp/gpu-run --corpus /tmp/corpus \
    --device "${DEVICE:-cuda}" ${BF16:---bf16} --batch-size "${BATCH:-128}" --minutes "$MINUTES" --lr 2e-3 \
    --canvas-share 0.3 --canvas-share-end 0.6 --save-every-minutes 3 --draft-share "${DRAFT_SHARE:-0}"
  local out=${OUT:-/tmp/gpu-out}
  mkdir -p "$out"
  cp /tmp/gpu-run/latest/{config.json,generation_config.json,training_state.json,tokenizer.json,tokenizer_config.json} "$out"/
  cp /tmp/gpu-run/latest/model*.safetensors* "$out"/
  cp /tmp/gpu-run/train_log.jsonl "$out"/
  ls -la "$out"
}

smoke() {  # the device half on this CPU, tiny: proves the wheels install and the run saves weights
  [ -d .gpu ] || CORPUS_MB=1 prepare
  rm -rf /tmp/site /tmp/gpu-out
  PATH="$PWD/.venv/bin:$PATH" DEVICE=cpu BF16=" " BATCH=4 MINUTES=0.5 OUT=/tmp/gpu-out run
}

"$@"
