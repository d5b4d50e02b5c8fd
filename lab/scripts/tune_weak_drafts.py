"""When may a draft on a short match beat the model's text?  Rules tried on the tuning packages
(lab/training/tuning_packages.txt), never on the eval's.

With ``contextDrafts`` "show", a draft that matched fewer than ``SHOW_MIN_MATCH`` tokens is shown
only where the filters leave the model's text empty (server/suggestion_path.py ``model_text``: the
shipped rule, ``empty``).  The alternatives, each shown over the model's text when:

* ``agree``: the model's text is a proper prefix of the draft (the draft goes on where it stops);
* ``unknown-word``: the word the model's text makes at the cursor (with the partly typed word
  before it) occurs nowhere in the document's window: the model made it up;
* ``multi-line``: the request is for several lines (the model's blocks are rarely of use).

Each rule is scored by ``lab/scripts/tune_show_match.py`` at the shipped threshold (its sum of
rest-of-line exact, whole-line exact and both typing replays; the printed row adds the shapes' edit
similarity) and by the tuning packages' repository-level cases (lab/workspace_eval.py: how often
the served row names the cross-file symbol).

    .venv/bin/python -m lab.scripts.tune_weak_drafts --rules empty,agree,unknown-word,multi-line

The rule for adopting one, written down before the runs: its sum at least 0.5 above ``empty``'s
(for ``multi-line``: at most 0.5 below, with the 2-5 line similarity up and its names not down),
and its rest-of-line names not below ``empty``'s.  None passed (docs/drafts.md "When a draft is
shown").
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import difill.server.draft_policy as draft_policy
import difill.server.suggestion_path as suggestion_path
from difill.server.config import Settings
from difill.text.pipeline import shown_texts
from lab.quality import load_served
from lab.training.corpus_sources import TUNING_PACKAGE_LIST, read_pins
from lab.workspace_eval import (
    PackageIndexes,
    fetch_packages,
    row_models,
    score_workspace,
    workspace_cases,
)

SHIPPED = suggestion_path.model_text
WORD_BEFORE = re.compile(r"\w+$")
WORD_START = re.compile(r"\w+")


def weak_draft_wins(rule: str, ctx, model_text: str, draft_text: str) -> bool:
    if rule == "agree":
        return draft_text.startswith(model_text) and len(draft_text) > len(model_text)
    if rule == "multi-line":
        return not ctx.shape.single_line
    if rule == "unknown-word":
        typed = WORD_BEFORE.search(ctx.prefix)
        lead = WORD_START.match(model_text)
        if not lead:
            return False
        word = (typed.group() if typed else "") + lead.group()
        window = ctx.prefix[: len(ctx.prefix) - len(typed.group() if typed else "")] + " " + ctx.suffix
        return len(word) >= 3 and not re.search(rf"(?<!\w){re.escape(word)}(?!\w)", window)
    return False


def with_rule(rule: str):
    """``model_text`` where a weak draft may also win over the model's text by ``rule``."""

    def fill(engine, settings, request, drafts, *args, **kwargs):
        result = SHIPPED(engine, settings, request, drafts, *args, **kwargs)
        ctx, invoked = request.ctx, request.invoked
        weak = [d for d in drafts if not draft_policy.is_sure(d)]
        if (
            invoked
            or draft_policy.draft_mode(engine, settings) != "show"
            or not weak
            or len(weak) < len(drafts)
        ):
            return result  # a sure draft is shown anyway
        model_texts = shown_texts(result.candidates, ctx)
        if not model_texts or result.candidates[0].source != "model":
            return result  # the model showed nothing: the shipped rule already shows the draft
        draft_texts = shown_texts(draft_policy.drafts_result(weak).candidates, ctx)
        if draft_texts and weak_draft_wins(rule, ctx, model_texts[0], draft_texts[0]):
            result.candidates = draft_policy.drafts_result(weak).candidates + result.candidates
            result.text = result.candidates[0].text
        return result

    return fill


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", default="empty,agree,unknown-word,multi-line")
    ap.add_argument("--files", type=int, default=10, help="files for each typing replay")
    ap.add_argument("--cases", type=int, default=60, help="repository-level cases per shape")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--cache", default="data/archives")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    import tune_show_match

    packages = fetch_packages(read_pins(TUNING_PACKAGE_LIST), Path(args.cache))
    cases = workspace_cases(packages, args.cases, args.seed)
    model = load_served(None, settings=Settings(context_drafts="show"))
    models = {"served": row_models(model)["served"]}
    for rule in args.rules.split(","):
        suggestion_path.model_text = SHIPPED if rule == "empty" else with_rule(rule)
        try:
            print(f"== {rule}", flush=True)
            sys.argv = [
                "tune_show_match",
                "--files",
                str(args.files),
                "--values",
                str(draft_policy.SHOW_MIN_MATCH),
            ]
            tune_show_match.main()
            indexes = PackageIndexes(packages)
            try:
                report = score_workspace(models, cases, indexes)["served"]
            finally:
                indexes.close()
            names = ", ".join(f"{shape} {score['names']:.1%}" for shape, score in report.items())
            print(f"{rule} repository-level names: {names}", flush=True)
        finally:
            suggestion_path.model_text = SHIPPED


if __name__ == "__main__":
    main()
