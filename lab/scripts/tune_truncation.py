"""Choose the ghost-text cut (the ``minTokenProb`` setting) on *training* files only.

Held-out files are for reporting, so the setting is chosen on a sample of the train split
(``--files``), through the served path (ServedModel: the server's context, settings and filters):
exact match, edit similarity, parse rate and share empty per shape, and the typing replay.  Each
fill's denoising runs once and is memoised, so every setting sees the same model output.

    .venv/bin/python -m lab.scripts.tune_truncation --cases 150 --typing-files 6 \\
        --max-tokens 32,16

(log-probs -3, -2, -1.5, -1, -0.5: the 2026-12-01 sweep, docs in engine/default_model/MODEL.md)
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from dataclasses import replace
from pathlib import Path

from difill.text.syntax import parses
from lab.quality import load_served, score_cases, typing_replay
from lab.training.corpus import read_jsonl
from lab.training.evaluate import eval_cases


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", help="diffusion model dir (default: shipped)")
    ap.add_argument("--corpus", default="data/corpus")
    ap.add_argument("--files", type=int, default=400, help="train files sampled as the tuning split")
    ap.add_argument("--cases", type=int, default=150)
    ap.add_argument("--typing-files", type=int, default=6)
    ap.add_argument(
        "--probs", default="0,0.0498,0.1353,0.2231,0.3679,0.6065", help="minTokenProb values (e^-3 .. e^-0.5)"
    )
    ap.add_argument("--max-tokens", default="32", help="maxTokens values")
    args = ap.parse_args()

    docs = read_jsonl(Path(args.corpus) / "train.jsonl")
    sample = random.Random(99).sample(docs, args.files)
    tune = Path(tempfile.mkdtemp()) / "corpus"
    tune.mkdir()
    (tune / "heldout.jsonl").write_text("".join(json.dumps(d) + "\n" for d in sample))

    served = load_served(args.model)
    engine = served.engine
    if hasattr(engine, "_encode_and_denoise"):  # the diffusion engine; the AR baseline just reruns
        denoise_once = engine._encode_and_denoise
        memo: dict = {}

        def memoised(prefix_ids, request, options, should_stop, on_step=None):
            key = (tuple(prefix_ids), tuple(map(tuple, request.canvas.tolist())), options.max_steps)
            if key not in memo:  # the cut only ends the loop early, so a longer run's result serves it
                memo[key] = denoise_once(
                    prefix_ids, replace(request, cut_below=None), options, should_stop, on_step
                )
            return memo[key]

        engine._encode_and_denoise = memoised

    cases = eval_cases(tune, args.cases, 1)
    parsed = {id(ex): bool(parses(ex.document, "python")) for exs in cases.values() for ex in exs}
    for max_tokens in (int(m) for m in args.max_tokens.split(",")):
        for prob in (float(p) for p in args.probs.split(",")):
            served.settings = replace(served.settings, max_tokens=max_tokens, min_token_prob=prob)
            scores = score_cases(served, cases, parsed)
            typing = typing_replay(served, tune, args.typing_files, 4, 1) if args.typing_files else {}
            row = {shape: [s["exact_match"], s["edit_similarity"], s["parse_rate"], s["empty_share"]]
                   for shape, s in scores.items()}  # fmt: skip
            print(json.dumps({"max_tokens": max_tokens, "min_token_prob": prob, **row,
                              "typing_saved": typing.get("saved_share"),
                              "accepted": typing.get("accepted")}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
