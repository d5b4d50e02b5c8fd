"""Can the model tell a right draft from a wrong one?  (docs/drafts.md, the 2026-12-02 table.)

For in-file cases from the *training* split, each draft of the served path is seeded into a canvas
row (engine/infill.py, ``contextDrafts`` "seed") and one extra forward records the probability the
model gives each draft token there (temperature 1) before the fill runs as usual.  Prints the
quartiles of the lowest and mean token log-probs and the argmax agreement for right and wrong
drafts, and how often a few verification rules would be right.

    .venv/bin/python -m lab.scripts.draft_verification --cases 60
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from pathlib import Path

import numpy as np
import torch

import difill.engine.infill as infill
from difill.engine.api import Candidate
from difill.server.config import Settings
from difill.server.draft_policy import fitting_drafts
from difill.text.pipeline import shown_texts
from lab.quality import load_served
from lab.training.corpus import read_jsonl
from lab.training.examples import EVAL_SHAPES, sample_eval_example

RECORDED: list = []


def recording_denoise(decoder, request, config, noise, **kwargs):
    """The engine's denoise, after one forward that scores every seeded row's draft tokens.
    The request is the sampler's (NumPy); the forward's side is torch, on the model's device."""
    if request.seeded is not None:
        with torch.inference_mode():
            hidden = decoder.hidden(decoder.on_device(request.canvas), None)  # (B, L, D)
            for row in np.flatnonzero(request.seeded.any(-1)).tolist():
                slots = np.flatnonzero(request.seeded[row])  # (S,)
                seeded_hidden = hidden[row, decoder.on_device(slots)]  # (S, D)
                logits = decoder.logits(seeded_hidden)[:, : request.vocab_size].float()
                logits[:, decoder.on_device(request.banned_ids)] = -torch.inf
                logp = torch.log_softmax(logits, -1)  # (S, V)
                tokens = decoder.on_device(request.canvas[row, slots])  # (S,)
                RECORDED.append((tokens.tolist(), logp.gather(-1, tokens[:, None])[:, 0].tolist(),
                                 logp.argmax(-1).tolist()))  # fmt: skip
    return REAL_DENOISE(decoder, request, config, noise, **kwargs)


REAL_DENOISE = infill.denoise


def draft_part(tokens, logp, argmax):
    """The draft's tokens and the first filler after them (the rest of the hole is filler)."""
    end = len(tokens)
    while end > 1 and tokens[end - 2] == tokens[-1]:
        end -= 1
    return tokens[:end], logp[:end], argmax[:end]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="data/corpus")
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--cases", type=int, default=60, help="cases per shape")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    infill.denoise = recording_denoise
    docs = []
    for doc in read_jsonl(Path(args.corpus) / "train.jsonl"):
        if doc["text"].count("\n") >= 10:
            docs.append(doc["text"])
        if len(docs) >= args.docs:
            break
    model = load_served(None, settings=Settings(context_drafts="seed"))
    rng = random.Random(args.seed)
    right, wrong, counts = [], [], {"cases": 0, "best_right": 0, "ranked_right": 0}
    for shape in EVAL_SHAPES:
        done = 0
        while done < args.cases:
            ex = sample_eval_example(rng.choice(docs), rng, shape)
            if ex is None or not ex.middles[0].strip():
                continue
            done += 1
            text, offset = ex.prefix + ex.suffix, len(ex.prefix)
            ctx = model.request(text, offset, "file:///tune/case.py").ctx
            drafts = fitting_drafts(text, offset, ctx)
            if not drafts:
                continue
            RECORDED.clear()
            model.suggest(text, offset, "file:///tune/case.py")
            shown = [
                (shown_texts([Candidate(d.text, 0, 0.0, True, "draft")], ctx) or [""])[0] for d in drafts
            ]
            hits = [s.rstrip() == ex.middles[0].rstrip() for s in shown]
            scores = []
            for hit, record in zip(hits, RECORDED, strict=False):
                tokens, logp, argmax = draft_part(*record)
                stats = (
                    min(logp),
                    statistics.fmean(logp),
                    sum(a == b for a, b in zip(tokens, argmax, strict=True)) / len(tokens),
                )
                (right if hit else wrong).append(stats)
                scores.append(stats[1])
            counts["cases"] += 1
            counts["best_right"] += hits[0]
            counts["ranked_right"] += bool(scores) and hits[max(range(len(scores)), key=scores.__getitem__)]
    for name, group in (("right", right), ("wrong", wrong)):
        if len(group) < 4:
            print(name, len(group), "drafts: too few for quartiles")
            continue
        quartiles = [
            [round(q, 2) for q in statistics.quantiles([g[i] for g in group], n=4)] for i in range(3)
        ]
        print(f"{name} ({len(group)}): min log-prob {quartiles[0]}, mean log-prob {quartiles[1]}, "
              f"argmax agrees {quartiles[2]}")  # fmt: skip
    print(f"cases with drafts {counts['cases']}: longest match right {counts['best_right']}, "
          f"the model's best-scored draft right {counts['ranked_right']}; floor e^-4.6: "
          f"{sum(r[0] >= math.log(0.01) for r in right)} right and {sum(w[0] >= math.log(0.01) for w in wrong)} "
          "wrong drafts kept")  # fmt: skip


if __name__ == "__main__":
    main()
