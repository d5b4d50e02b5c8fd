"""Held-out quality against cumulative CPU-hours, for the model card's learning curve.

    .venv/bin/python -m lab.scripts.learning_curve runs/snapshots [--cases 40]

Each snapshot directory (diffusion-<cpu_hours> or ar-<cpu_hours>, saved from the trainer's
checkpoints) is evaluated on the same held-out cases as `difill eval`, through the server's
suggestion path and filters (what the editor shows).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lab.quality import EvalPlan, evaluate_served


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("snapshots", type=Path)
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    rows = []
    for snap in sorted(
        args.snapshots.iterdir(), key=lambda p: (p.name.split("-")[0], float(p.name.split("-")[1]))
    ):
        kind = snap.name.split("-")[0]
        hours = json.loads((snap / "training_state.json").read_text())["cpu_hours"]
        # Either kind loads through the server's backend choice (a Llama checkpoint is the AR baseline).
        scores = evaluate_served(EvalPlan(str(snap), Path("data/corpus"), args.cases, args.seed))["diffusion"]
        cells = " | ".join(f"{s['exact_match']:.1%} / {s['edit_similarity']:.2f}" for s in scores.values())
        rows.append(f"| {kind} | {hours:.2f} | {cells} |")
        print(rows[-1], flush=True)
    print("\n| model | CPU-hours | rest of line EM / sim | whole line EM / sim | 2-5 lines EM / sim |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
