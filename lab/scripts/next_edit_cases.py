"""Per-case outcomes of `nextEdit: drafts` through `difill serve`, and two runs compared (issue 63).

Run each tree's server on the same cases, then compare (docs/next_edit.md, "Edits generalised
from one example"):

    PYTHONPATH=<tree A>/src python -m lab.scripts.next_edit_cases run CASES.jsonl[,MORE.jsonl] a.json
    PYTHONPATH=<tree B>/src python -m lab.scripts.next_edit_cases run CASES.jsonl b.json
    python -m lab.scripts.next_edit_cases compare a.json b.json [-v]

The rows are lab/next_edit_eval.py's `run_row` (the same typing and asks as `difill eval
--next-edit`); the broad eval's cases need that module as issue 63's mined eval left it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import defaultdict
from pathlib import Path


def run(cases_arg: str, out: str) -> None:
    from lab.next_edit_eval import read_cases, run_row

    cases = [case for path in cases_arg.split(",") for case in read_cases(Path(path))]
    row = asyncio.run(run_row("drafts", "drafts", cases, None))
    json.dump([
        {"id": c.id, "kind": c.kind, "repo": c.repo, "exact": o.exact, "answered": o.answered,
         "interim": o.interim, "half": getattr(o, "half_answered", 0), "ms": round(o.ms, 1)}
        for c, o in zip(cases, row.outcomes, strict=True)
    ], open(out, "w"))  # fmt: skip


def compare(a_path: str, b_path: str, verbose: bool) -> None:
    runs = {"A": json.load(open(a_path)), "B": json.load(open(b_path))}
    if verbose:
        for a, b in zip(runs["A"], runs["B"], strict=True):
            key = ("exact", "answered")
            if [a[k] for k in key] != [b[k] for k in key] or (a["interim"] > 0) != (b["interim"] > 0):
                print(a["kind"], a["id"], "A", *(a[k] for k in key), a["interim"], "B", *(b[k] for k in key), b["interim"])
    for name, rows in runs.items():
        repeat = [r for r in rows if r["kind"] == "repeat"]
        none = [r for r in rows if r["kind"] == "none"]
        print(
            f"{name}: repeat exact {sum(r['exact'] for r in repeat)}/{len(repeat)}, noise "
            f"{sum(r['answered'] for r in none)}/{len(none)}, interim asks answered "
            f"{sum(r['interim'] > 0 for r in rows)}, mid-word {sum(r['half'] > 0 for r in rows)} of {len(rows)}"
        )
        by: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for r in rows:
            counts = by[r["repo"]]
            if r["kind"] == "repeat":
                counts[0] += r["exact"]
                counts[1] += 1
            elif r["kind"] == "none":
                counts[2] += r["answered"]
                counts[3] += 1
        print("   ", "; ".join(f"{repo} {c[0]}/{c[1]} noise {c[2]}/{c[3]}" for repo, c in sorted(by.items())))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3])
    else:
        compare(sys.argv[2], sys.argv[3], "-v" in sys.argv)
