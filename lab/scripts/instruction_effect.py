"""Does an instruction change what the default model writes?  (issue 5: measure, don't assume)

For held-out whole lines, rewrite the line at a fixed strength with and without an instruction
(same seed), and count how often the text differs and how often it still parses.

    .venv/bin/python -m lab.scripts.instruction_effect [--model DIR] [--cases 40]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from difill.engine.api import FillOptions, RewriteRequest
from difill.engine.infill import InfillEngine
from difill.engine.model import load_model
from difill.text.syntax import parses
from lab.training.evaluate import eval_cases

INSTRUCTIONS = ("use a list comprehension", "rename the variable to result", "add error handling")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--strength", type=float, default=0.6)
    args = parser.parse_args()
    engine = InfillEngine(load_model(args.model, device="cpu"))
    cases = eval_cases(Path("data/corpus"), args.cases, seed=7)["whole_line"]
    rng = random.Random(0)
    changed = differs = parsed_plain = parsed_instr = 0
    for ex in cases:
        options = FillOptions(language="python", seed=3)
        selection = ex.middles[0]
        plain = engine.rewrite(RewriteRequest(ex.prefix, selection, ex.suffix, args.strength), options).text
        instruction = rng.choice(INSTRUCTIONS)
        told = engine.rewrite(
            RewriteRequest(ex.prefix, selection, ex.suffix, args.strength, instruction), options
        ).text
        changed += plain != selection
        differs += plain != told
        parsed_plain += bool(parses(ex.prefix + plain + ex.suffix, "python"))
        parsed_instr += bool(parses(ex.prefix + told + ex.suffix, "python"))
    n = len(cases)
    print(f"{n} held-out lines, strength {args.strength}:")
    print(f"  rewrite changed the line: {changed / n:.0%}")
    print(f"  an instruction changed the rewrite: {differs / n:.0%}")
    print(
        f"  file parses after the rewrite: {parsed_plain / n:.0%} without, {parsed_instr / n:.0%} with an instruction"
    )


if __name__ == "__main__":
    main()
