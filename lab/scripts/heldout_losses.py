"""Held-out LM and canvas losses of saved checkpoints, against their cumulative CPU-hours.

    .venv/bin/python -m lab.scripts.heldout_losses runs/snapshots/* runs/s4/latest engine/default_model

The same figures the trainer logs at every save (lab/training/train.py ``_log_heldout``), for
checkpoints saved before it logged the canvas loss: the model card's flatness check.  One JSON
line per checkpoint, in CPU-hour order.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion

from difill.engine.vocab import TokenIds
from lab.training.corpus import read_jsonl
from lab.training.packed import heldout_lm_loss, token_stream
from lab.training.train import heldout_canvas_loss, heldout_draft_figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoints", type=Path, nargs="+")
    parser.add_argument("--corpus", type=Path, default=Path("data/corpus"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = [d["text"] for d in read_jsonl(args.corpus / "heldout.jsonl")]

    def hours(path: Path) -> float:
        return json.loads((path / "training_state.json").read_text())["cpu_hours"]

    for path in sorted(args.checkpoints, key=hours):
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = DiffusionGemmaForBlockDiffusion.from_pretrained(path, dtype=torch.float32)
        model.config._experts_implementation = "eager"
        model.config.text_config._experts_implementation = "eager"
        ids = TokenIds.from_tokenizer(tok, model.config.text_config.vocab_size)
        stream = token_stream(args.corpus, "heldout", tok, TokenIds.from_tokenizer(tok, len(tok)))
        row = {
            "checkpoint": str(path),
            "cpu_hours": round(hours(path), 2),
            "heldout_lm_loss": round(heldout_lm_loss(model, stream), 4),
            "heldout_canvas_loss": round(heldout_canvas_loss(model, texts, tok, ids), 4),
        }
        drafts = heldout_draft_figures(model, texts, tok, ids)  # the draft-seeded objective (drafts.py)
        row.update({f"heldout_{k}": round(v, 4) for k, v in drafts.items()})
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
