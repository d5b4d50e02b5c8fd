"""Choose ``SHOW_MIN_MATCH`` (server/draft_policy.py) on tuning packages, never on the eval's.

With ``contextDrafts`` "show", a draft is the ghost text when it matched at least this many tokens
before the cursor; a draft on a shorter match is shown only where the model's text is empty.
The value is chosen on the packages of ``lab/training/tuning_packages.txt`` (in neither the corpus
nor the eval's workspaces: the model never trained on them), each indexed as a workspace, through
the served path (ServedModel: the server's context, settings and filters, every request with its
workspace context):

* exact match of 100 in-file cases per shape;
* the end-of-file typing replay (the last 4 lines of ``--files`` files, as `difill eval`);
* the typing replay inside files (lab/workspace_eval.py).

    .venv/bin/python -m lab.scripts.tune_show_match --files 10 --values 1,3,5,8,99

The rule, fixed before the sweep: the value with the highest sum of rest-of-line exact,
whole-line exact, end-of-file typing (net) and typing inside files (net).  ``--train-docs N``
tunes on the first N training documents instead, as the first sweep did (the model has learned
those files, which favours it over retrieval).  (99: no draft reaches the threshold: the model
alone, drafts only where it shows nothing; the sweeps are in docs/drafts.md "When a draft is shown")
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
from pathlib import Path

import difill.server.draft_policy as draft_policy
from difill.server.config import Settings
from lab.quality import load_served
from lab.training.corpus import read_jsonl
from lab.training.corpus_sources import TUNING_PACKAGE_LIST, read_pins
from lab.training.evaluate import ShapeScore, TypingReplay
from lab.training.examples import EVAL_SHAPES, sample_eval_example
from lab.workspace_eval import PackageIndexes, fetch_packages, group_packages, typing_replay_inside

LINES = 4  # lines typed per file in both replays


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", help="diffusion model dir (default: shipped)")
    ap.add_argument("--corpus", default="data/corpus")
    ap.add_argument("--train-docs", type=int, default=0, help="tune on this many training documents instead")
    ap.add_argument("--cache", default="data/archives", help="where the fetched package archives are kept")
    ap.add_argument("--files", type=int, default=10, help="files for each typing replay")
    ap.add_argument("--cases", type=int, default=100, help="in-file cases per shape")
    ap.add_argument("--values", default="1,3,5,8,99")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()

    if args.train_docs:
        train = itertools.islice(read_jsonl(Path(args.corpus) / "train.jsonl"), args.train_docs)
        packages = group_packages((doc["path"], doc["text"]) for doc in train)
    else:
        packages = fetch_packages(read_pins(TUNING_PACKAGE_LIST), Path(args.cache))
    docs = [(path, text) for files in packages.values() for path, text in files]
    model = load_served(args.model, settings=Settings(context_drafts="show"))
    rng = random.Random(args.seed)
    end_of_file = rng.sample([(p, t) for p, t in docs if t.count("\n") >= 40], args.files)
    inside_files = [(p, t) for p, t in docs if t.count("\n") >= 40]
    spots = []
    for path, text in rng.sample(inside_files, args.files):
        starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        first = rng.randrange(len(starts) // 4, 3 * len(starts) // 4)
        last = min(first + LINES, len(starts) - 1)
        spots.append((path, text[: starts[first]], text[starts[first] : starts[last]], text[starts[last] :]))
    cases: dict[str, list] = {}
    for shape in EVAL_SHAPES:
        cases[shape] = []
        while len(cases[shape]) < args.cases:
            path, text = rng.choice(docs)
            ex = sample_eval_example(text, rng, shape)
            if ex is not None and ex.middles[0].strip():
                cases[shape].append((path, ex))
    indexes = PackageIndexes(packages)

    def suggest(text: str, offset: int, path: str) -> tuple[str, float]:
        """What the served path shows at ``offset``, the file's package indexed as its workspace."""
        context = indexes.retrieval(path, text, offset)
        shown = model.suggest(
            text,
            offset,
            indexes.uri(path),
            retrieval=context,
        )
        return shown.text, shown.ms

    try:
        for value in [int(v) for v in args.values.split(",")]:
            draft_policy.SHOW_MIN_MATCH = value
            row: dict = {"show_min_match": value}
            for shape, examples in cases.items():
                score = ShapeScore()
                for path, ex in examples:
                    text, _ = suggest(ex.prefix + ex.suffix, len(ex.prefix), path)
                    score.add(ex, text, 0, 0.0, 0.0, False)
                row[shape] = score.summary()["exact_match"]
                row[f"{shape}_similarity"] = score.summary()["edit_similarity"]
            row["end_of_file_typing"] = end_of_file_replay(suggest, end_of_file)["net_saved_share"]
            row["inside_typing"] = typing_replay_inside(suggest, spots)["net_saved_share"]
            row["sum"] = round(100 * sum(row[k] for k in ("rest_of_line", "whole_line", "end_of_file_typing",
                                                          "inside_typing")), 2)  # fmt: skip
            print(json.dumps(row), flush=True)
    finally:
        indexes.close()


def end_of_file_replay(suggest, files: list[tuple[str, str]]) -> dict:
    """Type the last LINES lines of each file with nothing below; Tab when the suggestion matches."""
    replay = TypingReplay()
    for path, text in files:
        body = text.rstrip("\n") + "\n"
        starts = [i + 1 for i, ch in enumerate(body) if ch == "\n"][:-1]
        cut = starts[-LINES] if len(starts) >= LINES else 0
        replay.type_target(
            body[cut:],
            lambda typed, before=body[:cut], p=path: suggest(before + typed, len(before + typed), p),
        )
    return replay.summary()


if __name__ == "__main__":
    main()
