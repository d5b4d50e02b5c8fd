"""`difill eval`: held-out infill quality of the diffusion model and the AR baseline, side by side.

Cases are cut from the held-out split with a fixed seed: rest of line, whole line (cursor after
the indentation) and 2-5 whole lines.  Metrics per model and shape: exact match (trailing
whitespace ignored), edit similarity, the share of fills after which the whole file still parses
(over files that parse to begin with), mean denoising steps / forwards and tokens per forward.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from difill.engine.syntax import parses
from difill.engine.training.corpus import read_jsonl
from difill.engine.training.examples import EVAL_SHAPES, InfillExample, sample_eval_example

SHAPE_OPTIONS = {  # hole budget and single-line mode per shape, as the language server asks
    "rest_of_line": (24, True),
    "whole_line": (32, True),
    "multi_line_2_5": (64, False),
}


@dataclass
class ShapeScore:
    cases: int = 0
    exact: int = 0
    similarity: list[float] = field(default_factory=list)
    parsed: int = 0
    parse_cases: int = 0
    forwards: list[int] = field(default_factory=list)
    tokens_per_forward: list[float] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    def add(
        self, ex: InfillExample, middle: str, forwards: int, tpf: float, ms: float, original_parses: bool
    ):
        target = ex.middles[0]
        self.cases += 1
        self.exact += middle.rstrip() == target.rstrip()
        self.similarity.append(difflib.SequenceMatcher(None, middle, target).ratio())
        if original_parses:
            self.parse_cases += 1
            self.parsed += bool(parses(ex.prefix + middle + ex.suffix, "python"))
        self.forwards.append(forwards)
        self.tokens_per_forward.append(tpf)
        self.ms.append(ms)

    def summary(self) -> dict:
        return {
            "cases": self.cases,
            "exact_match": round(self.exact / max(1, self.cases), 4),
            "edit_similarity": round(statistics.fmean(self.similarity or [0]), 4),
            "parse_rate": round(self.parsed / max(1, self.parse_cases), 4),
            "mean_forwards": round(statistics.fmean(self.forwards or [0]), 2),
            "tokens_per_forward": round(statistics.fmean(self.tokens_per_forward or [0]), 3),
            "p50_ms": round(statistics.median(self.ms or [0]), 1),
        }


def _first(cands, ex):
    return cands[0].text if cands else ""


def _by_logprob(cands, ex):
    return max(cands, key=lambda c: c.score).text if cands else ""


def _longest_hole(cands, ex):
    return max(cands, key=lambda c: c.hole_length).text if cands else ""


def _oracle(cands, ex):
    hits = [c.text for c in cands if c.text.rstrip() == ex.middles[0].rstrip()]
    return hits[0] if hits else _first(cands, ex)


# How to pick among candidate hole lengths; "engine" is what the engine ships (rank_candidates).
SELECTION_RULES = {
    "engine": _first,
    "logprob_only": _by_logprob,
    "longest_hole": _longest_hole,
    "oracle": _oracle,
}


def eval_cases(corpus: Path, per_shape: int, seed: int) -> dict[str, list[InfillExample]]:
    docs = [d for d in read_jsonl(corpus / "heldout.jsonl") if d["text"].count("\n") >= 10]
    rng = random.Random(seed)
    cases: dict[str, list[InfillExample]] = {}
    for shape in EVAL_SHAPES:
        out: list[InfillExample] = []
        attempts = 0
        while len(out) < per_shape and attempts < per_shape * 50:
            attempts += 1
            ex = sample_eval_example(rng.choice(docs)["text"], rng, shape)
            if ex is not None and ex.middles[0].strip():
                out.append(ex)
        cases[shape] = out
    return cases


def evaluate(
    diffusion_dir: str | None,
    ar_dir: str | None,
    corpus: Path,
    per_shape: int,
    seed: int,
    diffusion: bool = True,
) -> dict:
    """Both models on the same cases; ``diffusion=False`` evaluates the AR baseline alone."""
    cases = eval_cases(corpus, per_shape, seed)
    original_parses = {id(ex): bool(parses(ex.document, "python")) for exs in cases.values() for ex in exs}
    report: dict = {"cases_per_shape": per_shape, "seed": seed}
    if diffusion:
        report.update(evaluate_diffusion(diffusion_dir, cases, original_parses))
    if ar_dir and Path(ar_dir).exists():
        report.update(evaluate_ar(ar_dir, cases, original_parses))
    return report


def evaluate_diffusion(model_dir: str | None, cases: dict, original_parses: dict) -> dict:
    from difill.engine.infill import FillOptions, InfillEngine
    from difill.engine.model import load_model

    loaded = load_model(model_dir, device="cpu")
    engine = InfillEngine(loaded)
    scores = {shape: ShapeScore() for shape in cases}
    selection = {rule: 0 for rule in SELECTION_RULES}  # exact matches under each way to pick a candidate
    for shape, exs in cases.items():
        max_tokens, single_line = SHAPE_OPTIONS[shape]
        for ex in exs:
            options = FillOptions(max_hole_tokens=max_tokens, single_line=single_line, language="python")
            r = engine.fill(ex.prefix, ex.suffix, options)
            scores[shape].add(ex, r.text, r.stats.decoder_forwards, r.stats.tokens_per_forward,
                              r.stats.total_ms, original_parses[id(ex)])  # fmt: skip
            for rule, pick in SELECTION_RULES.items():
                chosen = pick(r.candidates, ex)
                selection[rule] += bool(chosen) and chosen.rstrip() == ex.middles[0].rstrip()
    total = sum(len(exs) for exs in cases.values())
    return {
        "diffusion": {shape: s.summary() for shape, s in scores.items()},
        "diffusion_selection_exact_match": {
            rule: round(n / max(1, total), 4) for rule, n in selection.items()
        },
        "diffusion_model": str(loaded.path),
    }


def evaluate_ar(model_dir: str, cases: dict, original_parses: dict) -> dict:
    from difill.engine.ar_baseline import ARBaseline

    ar = ARBaseline(model_dir)
    scores = {shape: ShapeScore() for shape in cases}
    for shape, exs in cases.items():
        max_tokens, single_line = SHAPE_OPTIONS[shape]
        for ex in exs:
            r = ar.fill(ex.prefix, ex.suffix, max_tokens, single_line)
            scores[shape].add(ex, r.text, r.forwards, r.tokens / max(1, r.forwards), r.total_ms,
                              original_parses[id(ex)])  # fmt: skip
    return {"ar": {shape: s.summary() for shape, s in scores.items()}, "ar_model": str(model_dir)}


def format_table(report: dict) -> str:
    rows = ["| model | shape | exact match | edit sim. | parses | forwards | tokens/forward | p50 ms |",
            "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for model in ("diffusion", "ar"):
        for shape, s in report.get(model, {}).items():
            rows.append(f"| {model} | {shape} | {s['exact_match']:.1%} | {s['edit_similarity']:.3f} | "
                        f"{s['parse_rate']:.1%} | {s['mean_forwards']} | {s['tokens_per_forward']} | {s['p50_ms']} |")  # fmt: skip
    if "diffusion_selection_exact_match" in report:
        picks = ", ".join(f"{k} {v:.1%}" for k, v in report["diffusion_selection_exact_match"].items())
        rows.append(f"\nexact match over all shapes by candidate selection rule: {picks}")
    return "\n".join(rows)


AR_BASELINE_DIRS = ("benchmarks/ar-baseline", "runs/ar/latest")  # committed yardstick, then a local run


def default_ar_baseline() -> str | None:
    return next((d for d in AR_BASELINE_DIRS if (Path(d) / "config.json").exists()), None)


def main(args: argparse.Namespace) -> int:
    ar_dir = args.ar_model or default_ar_baseline()
    started = time.time()
    report = evaluate(args.model, ar_dir, Path(args.corpus), args.cases, args.seed)
    report["eval_seconds"] = round(time.time() - started, 1)
    if args.record:
        from difill.engine.model import DEFAULT_MODEL_DIR

        state_path = Path(args.model or DEFAULT_MODEL_DIR) / "training_state.json"
        state = json.loads(state_path.read_text()) if state_path.exists() else {}
        state.setdefault("history", []).append({"cpu_hours": state.get("cpu_hours"), "eval": report})
        state_path.write_text(json.dumps(state, indent=1) + "\n")
    print(json.dumps(report, indent=1) if args.json else format_table(report))
    return 0
