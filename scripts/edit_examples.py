"""Before/after examples of each edit action, produced by a model (the README's examples).

    .venv/bin/python scripts/edit_examples.py [--model DIR]

Runs the engine calls the server's actions run: rewrite (strength 0.5), rewrite with an
instruction, fill holes, complete block; prints Markdown.
"""

from __future__ import annotations

import argparse

from difill.engine.api import FillOptions, RewriteRequest
from difill.engine.infill import InfillEngine
from difill.engine.model import load_model

SOURCE = """def total_price(items, tax_rate):
    subtotal = 0
    for item in items:
        subtotal += item.price * item.quantity
    return subtotal * (1 + tax_rate)
"""
HOLES = """def read_lines(path):
    with open(path) as f:
        return [line.<|hole|>() for line in <|hole|>]
"""
STUB = """class Counter:
    def __init__(self):
        self.count = 0

    def increment(self):
        """
STUB_SUFFIX = """

    def reset(self):
        self.count = 0
"""


def block(title: str, before: str, after: str) -> str:
    return f"**{title}**\n\n```python\n# before\n{before.rstrip()}\n# after\n{after.rstrip()}\n```\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    args = parser.parse_args()
    engine = InfillEngine(load_model(args.model, device="cpu"))
    options = FillOptions(language="python", seed=0)
    start = SOURCE.index("    for item")
    end = SOURCE.index("    return")
    prefix, selection, suffix = SOURCE[:start], SOURCE[start:end], SOURCE[end:]
    rewritten = engine.rewrite(RewriteRequest(prefix, selection, suffix, 0.5), options)
    print(
        block("Rewrite selection (strength 0.5), the loop selected", SOURCE, prefix + rewritten.text + suffix)
    )
    told = engine.rewrite(
        RewriteRequest(prefix, selection, suffix, 0.5, "use sum() with a generator"), options
    )
    print(
        block(
            'Edit selection with instruction "use sum() with a generator"',
            SOURCE,
            prefix + told.text + suffix,
        )
    )
    holes = engine.fill_holes(HOLES, options=FillOptions(max_hole_tokens=8, seed=0))
    print(block("Fill holes in selection", HOLES, holes.text))
    completed = engine.fill(STUB, STUB_SUFFIX, FillOptions(max_hole_tokens=32, language="python", seed=0))
    print(
        block(
            "Complete block (empty method body)",
            STUB + "pass" + STUB_SUFFIX,
            STUB + completed.text + STUB_SUFFIX,
        )
    )


if __name__ == "__main__":
    main()
