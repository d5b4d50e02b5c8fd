"""Before/after examples of each edit action, as the editor applies them (the README's examples).

    .venv/bin/python -m lab.scripts.edit_examples [--model DIR]

Each example is the server's own edit path (server/features/edits/plans.py): ``engine_work`` asks
the engine what the code action asks, with the editor's default settings, and ``new_selection``
turns the answer into the text that replaces the selection (the text pipeline's filters
included).  Rewrite (strength 0.5), rewrite with an instruction, fill holes, complete block;
prints Markdown.
"""

from __future__ import annotations

import argparse

from difill.engine.infill import InfillEngine
from difill.engine.model import load_model
from difill.server.config import Settings
from difill.server.documents import Document
from difill.server.features.edits.plans import (
    COMPLETE_BLOCK,
    FILL_HOLES,
    REWRITE,
    EditError,
    EditRequest,
    engine_work,
    new_selection,
)
from difill.server.trees import SyntaxTrees

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


def edited(engine: InfillEngine, text: str, selected: str, kind: str, instruction: str | None = None) -> str:
    """``text`` after the editor applies ``kind`` to its first ``selected`` span."""
    settings, trees = Settings(), SyntaxTrees()
    document = Document("file:///example.py", "python", 1, text)
    start = text.index(selected)
    request = EditRequest(kind, document.uri, 1, start, start + len(selected), instruction)
    result = engine_work(request, document, settings, trees, lambda: False, None)(engine)
    try:
        return (
            text[:start]
            + new_selection(request, document, result, settings, trees)
            + text[start + len(selected) :]
        )
    except EditError as err:  # what the editor would show instead of an edit
        return f"{text.rstrip()}\n# (no edit: {err})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    args = parser.parse_args()
    engine = InfillEngine(load_model(args.model, device="cpu"))
    loop = SOURCE[SOURCE.index("    for item") : SOURCE.index("    return")]
    print(
        block(
            "Rewrite selection (strength 0.5), the loop selected",
            SOURCE,
            edited(engine, SOURCE, loop, REWRITE),
        )
    )
    told = edited(engine, SOURCE, loop, REWRITE, "use sum() with a generator")
    print(block('Edit selection with instruction "use sum() with a generator"', SOURCE, told))
    print(block("Fill holes in selection", HOLES, edited(engine, HOLES, HOLES, FILL_HOLES)))
    stub = STUB + "pass" + STUB_SUFFIX
    print(block("Complete block (empty method body)", stub, edited(engine, stub, "pass", COMPLETE_BLOCK)))


if __name__ == "__main__":
    main()
