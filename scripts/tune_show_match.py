"""Choose ``SHOW_MIN_MATCH`` (server/served.py) on *training* files only.

With ``contextDrafts`` "show", a draft is the ghost text when it matched at least this many tokens
before the cursor; a draft on a shorter match is shown only where the model's text is empty.
Held-out files are for reporting, so the value is chosen on the first ``--docs`` documents of the
train split, through the served path (ServedModel: the server's context, settings and filters):

* exact match of 100 in-file cases per shape;
* the end-of-file typing replay (the last 4 lines of ``--files`` files, as `difill eval`);
* the typing replay inside files, with each package indexed as a workspace (lab/workspace_eval.py).

    .venv/bin/python scripts/tune_show_match.py --files 10 --values 1,3,5,8,99

(99: no draft reaches the matching threshold: the model alone, drafts only where it shows nothing;
the 2026-12-02 sweep is in docs/drafts.md "When a draft is shown")
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import difill.server.served as served
from difill.lab.quality import load_served, suggested
from difill.lab.training.corpus import read_jsonl
from difill.lab.training.evaluate import ShapeScore, TypingReplay
from difill.lab.training.examples import EVAL_SHAPES, sample_eval_example
from difill.lab.workspace_eval import PackageIndexes, package_of, typing_replay_inside
from difill.server.config import Settings

LINES = 4  # lines typed per file in both replays


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", help="diffusion model dir (default: shipped)")
    ap.add_argument("--corpus", default="data/corpus")
    ap.add_argument("--docs", type=int, default=6000, help="train documents the tuning split is drawn from")
    ap.add_argument("--files", type=int, default=10, help="files for each typing replay")
    ap.add_argument("--cases", type=int, default=100, help="in-file cases per shape")
    ap.add_argument("--values", default="1,3,5,8,99")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()

    docs = []
    for doc in read_jsonl(Path(args.corpus) / "train.jsonl"):
        docs.append(doc)
        if len(docs) >= args.docs:
            break
    packages: dict[str, list[tuple[str, str]]] = {}
    for doc in docs:
        packages.setdefault(package_of(doc["path"]), []).append((doc["path"], doc["text"]))
    packages = {name: sorted(files) for name, files in packages.items() if len(files) >= 2}
    model = load_served(args.model, settings=Settings(context_drafts="show"))
    rng = random.Random(args.seed)
    end_of_file = rng.sample([d["text"] for d in docs if d["text"].count("\n") >= 40], args.files)
    inside_files = [(p, t) for files in packages.values() for p, t in files if t.count("\n") >= 40]
    spots = []
    for path, text in rng.sample(inside_files, args.files):
        starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        first = rng.randrange(len(starts) // 4, 3 * len(starts) // 4)
        last = min(first + LINES, len(starts) - 1)
        spots.append((path, text[: starts[first]], text[starts[first] : starts[last]], text[starts[last] :]))
    cases = {}
    for shape in EVAL_SHAPES:
        cases[shape] = []
        while len(cases[shape]) < args.cases:
            ex = sample_eval_example(rng.choice(docs)["text"], rng, shape)
            if ex is not None and ex.middles[0].strip():
                cases[shape].append(ex)
    indexes = PackageIndexes(packages)

    def inside(text: str, offset: int, path: str) -> tuple[str, float]:
        context = indexes.retrieval(path, text, offset)
        shown = model.suggest(
            text,
            offset,
            indexes.uri(path),
            sources=context.sources,
            snippets=context.snippets,
            index_drafts=context.drafts,
        )
        return shown.text, shown.ms

    try:
        for value in [int(v) for v in args.values.split(",")]:
            served.SHOW_MIN_MATCH = value
            row: dict = {"show_min_match": value}
            for shape, examples in cases.items():
                score = ShapeScore()
                for ex in examples:
                    shown = model.suggest(ex.prefix + ex.suffix, len(ex.prefix), "file:///tune/case.py")
                    score.add(ex, shown.text, shown.forwards, shown.tokens_per_forward, shown.ms, False)
                row[shape] = score.summary()["exact_match"]
            row["end_of_file_typing"] = end_of_file_replay(model, end_of_file)["net_saved_share"]
            row["inside_typing"] = typing_replay_inside(inside, spots)["net_saved_share"]
            print(json.dumps(row), flush=True)
    finally:
        indexes.close()


def end_of_file_replay(model, texts: list[str]) -> dict:
    """Type the last LINES lines of each text with nothing below; Tab when the suggestion matches."""
    replay = TypingReplay()
    for text in texts:
        body = text.rstrip("\n") + "\n"
        starts = [i + 1 for i, ch in enumerate(body) if ch == "\n"][:-1]
        cut = starts[-LINES] if len(starts) >= LINES else 0
        replay.type_target(body[cut:], lambda typed, before=body[:cut]: suggested(model, before + typed))
    return replay.summary()


if __name__ == "__main__":
    main()
