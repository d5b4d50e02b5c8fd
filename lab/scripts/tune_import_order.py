"""Where import drafts go among the drafts (server/draft_policy.py ``drafts_at``), chosen on the tuning
packages (lab/training/tuning_packages.txt), never on the eval's.

Two orders on the same repository-level cases (lab/workspace_eval.py), the served row:

* ``imports-first`` (shipped): the index's import drafts, then the finder's continuations;
* ``long-match-first``: a new import line only after continuations that matched
  ``SHOW_MIN_MATCH`` tokens or more (a typed import line still first).

    .venv/bin/python -m lab.scripts.tune_import_order --cases 60

The rule, fixed before the run: whole-line exact plus names (the shape a new import line is for);
a tie keeps the shipped order.  Figures: docs/drafts.md "Import drafts".
"""

from __future__ import annotations

import argparse
from pathlib import Path

import difill.server.draft_policy as draft_policy
from difill.server.config import Settings
from lab.quality import load_served
from lab.training.corpus_sources import TUNING_PACKAGE_LIST, read_pins
from lab.workspace_eval import (
    PackageIndexes,
    fetch_packages,
    row_models,
    score_workspace,
    workspace_cases,
)

SHIPPED = draft_policy.drafts_at


def long_match_first(text, offset, sources=(), index_drafts=()):
    found = SHIPPED(text, offset, sources)
    typed = [d for d in index_drafts if d.kind == "import"]
    new = [d for d in index_drafts if d.kind != "import"]
    long = [d for d in found if d.matched >= draft_policy.SHOW_MIN_MATCH]
    return [*typed, *long, *new, *[d for d in found if d.matched < draft_policy.SHOW_MIN_MATCH]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=60, help="repository-level cases per shape")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cache", default="data/archives")
    args = ap.parse_args()
    packages = fetch_packages(read_pins(TUNING_PACKAGE_LIST), Path(args.cache))
    model = load_served(None, settings=Settings())
    models = {"served": row_models(model)["served"]}
    cases = workspace_cases(packages, args.cases, args.seed)
    indexes = PackageIndexes(packages)
    try:
        for name, order in (("imports-first", SHIPPED), ("long-match-first", long_match_first)):
            draft_policy.drafts_at = order
            report = score_workspace(models, cases, indexes)["served"]
            for shape, score in report.items():
                print(
                    f"{name} {shape}: exact {score['exact_match']:.1%}, names {score['names']:.1%}",
                    flush=True,
                )
    finally:
        draft_policy.drafts_at = SHIPPED
        indexes.close()


if __name__ == "__main__":
    main()
