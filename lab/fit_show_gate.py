"""Fit the show gate's calibration (server/show_gate.json) on labelled typing traces.

    python -m lab.fit_show_gate TRACE.jsonl [TRACE.jsonl ...] [--precision 0.5] [--out PATH]

The traces come from the typing bench on the **tuning** projects only (``bench_typing(...,
trace=PREFIX, settings={"minShowProbability": 0})``: every text the filters keep, with its
features and whether what was typed next began with it).  A logistic model of ``features`` is
fitted by Newton's method with a small L2 penalty, and the threshold is the lowest P at which the
texts at or above it were right at least ``--precision`` of the time (per request: the bench's
distinct-suggestion precision is then checked by a replay, docs/show_gate.md).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from difill.server.show_gate import CALIBRATION, FEATURES, Evidence, features, starts, with_text

L2 = 1.0  # the penalty on every weight but the bias: a few thousand rows, correlated by keystroke


@dataclass(frozen=True)
class Case:
    """One text the gate may show at one request, and whether it was right."""

    request: tuple[str, int]  # the document's sha1 and the cursor
    evidence: Evidence  # of the text, whole or cut (``starts``)
    right: bool  # what was typed next begins with it
    whole: bool  # the text as the pipeline left it (not a cut)


def cases_of(paths: list[str]) -> list[Case]:
    """Every trace row's texts the gate may show (whole, first line, first word), labelled."""
    out = []
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            e = Evidence(**row["evidence"])
            for i, text in enumerate(starts(e.text)):
                out.append(
                    Case(
                        (row["sha1"], row["offset"]),
                        with_text(e, text),
                        row["typed"].startswith(text),
                        i == 0,
                    )
                )
    return out


def fit(x: np.ndarray, y: np.ndarray, steps: int = 50) -> np.ndarray:
    """Weights (f,) of P(right) = sigmoid(x @ w), by Newton's method on the penalised log-loss."""
    n, f = x.shape
    w = np.zeros(f)
    penalty = np.full(f, L2)
    penalty[0] = 0.0  # the bias is free
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -60, 60)))  # (n,)
        grad = x.T @ (p - y) + penalty * w  # (f,)
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty + 1e-9)  # (f, f)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def shown_texts(cases: list[Case], p: np.ndarray, threshold: float) -> dict[tuple[str, int], Case]:
    """What each request shows at ``threshold``, as show_gate.gate picks it: the first text whose
    whole or a cut reaches the bar, the longest such."""
    shown: dict[tuple[str, int], Case] = {}
    for case, pc in zip(cases, p, strict=True):
        if case.request not in shown and pc >= threshold:
            shown[case.request] = case  # the longest passing start comes first in ``cases``
    return shown


def distinct_precision(shown: dict[tuple[str, int], Case]) -> tuple[int, int]:
    """(suggestions, right) as the typing bench counts them: one while typing agrees with it (the
    text shown next, after what was typed since, is the rest of this one)."""
    suggestions = right = 0
    last: tuple[int, str] | None = None
    for (_, offset), case in shown.items():
        text = case.evidence.text
        step = offset - last[0] if last is not None else -1
        if not (last is not None and 0 < step <= len(last[1]) and last[1][step:] == text):
            suggestions += 1
            right += case.right
        last = (offset, text)
    return suggestions, right


def threshold_for(cases: list[Case], p: np.ndarray, precision: float) -> float:
    """The lowest P at which the distinct suggestions shown were right at least ``precision`` of
    the time (``distinct_precision``), on a grid of 0.01."""
    for t in np.arange(0.0, 1.0, 0.01):
        shown, right = distinct_precision(shown_texts(cases, p, t))
        if shown and right / shown >= precision:
            return round(float(t), 2)
    return 1.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--precision", type=float, default=0.5)
    parser.add_argument("--out", default=str(CALIBRATION))
    args = parser.parse_args(argv)
    cases = cases_of(args.traces)
    x = np.array([features(c.evidence) for c in cases], dtype=np.float64)  # (n, f)
    y = np.array([float(c.right) for c in cases])  # (n,)
    w = fit(x, y)
    p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))  # (n,)
    threshold = threshold_for(cases, p, args.precision)
    shown, right = distinct_precision(shown_texts(cases, p, threshold))
    everything = distinct_precision(
        shown_texts(cases, np.ones(len(cases)) * (np.array([c.whole for c in cases])), 0.5)
    )
    report = {
        "weights": {name: round(float(v), 4) for name, v in zip(FEATURES, w, strict=True)},
        "threshold": threshold,
        "fitted_on": {
            "traces": [Path(t).name for t in args.traces],
            "texts": len(cases),
            "right": int(y.sum()),
            "log_loss": round(float(-np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))), 4),
            "shown_at_threshold": [shown, right],
            "shown_without_gate": list(everything),
        },
    }
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report["fitted_on"]), "threshold", report["threshold"])
    for name, v in report["weights"].items():
        print(f"  {name:12s} {v:+.3f}")


if __name__ == "__main__":
    main()
