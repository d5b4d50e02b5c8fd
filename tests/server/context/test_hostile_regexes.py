"""Issue 51: every regular expression that reads user text, against inputs that make a
backtracking pattern quadratic, each under a deadline.  symbol_usage's ECHOED took 62 s on a
40,000-character word, imports' walrus alternative 17 s, the token before a name 22 s: each is
linear now (a name starts where a word does, and the line is read in a bounded window)."""

from __future__ import annotations

import importlib
import re
import time

import pytest

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

# The modules whose patterns run on documents, workspace files and the line at the cursor.
MODULES = (
    "difill.server.context.symbols", "difill.server.context.symbols_js", "difill.server.context.symbols_go",
    "difill.server.context.symbol_usage", "difill.server.context.symbol_lookup", "difill.server.context.imports",
    "difill.server.context.drafts",
    "difill.server.context.retrieval", "difill.server.context.definitions", "difill.server.context.similarity",
    "difill.server.context.policy", "difill.text.filters", "difill.text.shape", "difill.text.scope",
    "difill.text.rules", "difill.server.suggestion_path", "difill.server.features.suggestions.completion",
)  # fmt: skip
N = 80_000  # a quadratic pattern takes seconds here (DEF_LINE did: 2 s of CPU), a linear one milliseconds
HOSTILE = {
    "word": "a" * N,
    "word then operator": "0x" + "f" * N + " +",
    "words and dots": "a." * (N // 2),
    "spaces": " " * N + "x",
    "tabs and newlines": "\t\n" * (N // 2),
    "open parentheses": "(" * N,
    "import list": "import " + "a, " * (N // 3),
    "relative dots": "from " + "." * N,
    "quotes": '"' * N,
    "unclosed call": "def f(" + "a, " * (N // 3),
    "unclosed go groups": "var (\n\tX = 1\n" * (N // 13),
    "export path": "export * from '" + "a" * N,
    "assignments": "a = 1\n" * (N // 6),
    "colons": ":" * N,
    "digits": "1" * N,
    "mixed word": "aA1_" * (N // 4),
}
DEADLINE_S = 0.5  # of this thread's CPU: linear is a few ms on 80,000 characters


def patterns() -> list[tuple[str, re.Pattern]]:
    found = []
    for module in MODULES:
        for name, value in vars(importlib.import_module(module)).items():
            if isinstance(value, re.Pattern):
                found.append((f"{module.rsplit('.', 1)[-1]}.{name}", value))
    return found


@pytest.mark.parametrize(("name", "pattern"), patterns(), ids=[name for name, _ in patterns()])
def test_each_pattern_is_linear_on_hostile_text(name, pattern):
    slow = []
    for kind, text in HOSTILE.items():
        started = time.thread_time()  # this thread's CPU: other processes on the cores do not count
        for _ in pattern.finditer(text):
            pass
        pattern.search(text)
        if time.thread_time() - started > DEADLINE_S:
            slow.append(kind)
    assert not slow, f"{name} is slow on: {', '.join(slow)}"


def test_the_patterns_are_found():
    # The parametrised test passes on an empty list: the modules must hold the patterns it names.
    names = {name for name, _ in patterns()}
    assert {
        "symbol_usage.ECHOED",
        "imports.BINDINGS",
        "symbols_go.GROUP_OPEN",
        "symbols.ATTRIBUTE_AT_CURSOR",
    } <= names
    assert len(names) > 40
