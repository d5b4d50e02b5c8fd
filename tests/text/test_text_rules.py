"""The text rules and the pipeline's own steps (text); the filters have golden files."""

from __future__ import annotations

import pytest

from difill.engine.api import Candidate
from difill.text.context import build_context
from difill.text.pipeline import shown_middles, shown_texts
from difill.text.rules import trim_suffix_overlap, with_middles
from difill.text.syntax import parser_for

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

MARKER = "<|hole|>"


@pytest.mark.parametrize(
    "middle,suffix,shown",
    [
        pytest.param("foo(x))", ")\n", "foo(x)", id="closing_bracket_the_suffix_already_has_is_dropped"),
        # `f(g(x)` + `)`: the middle closes its own bracket; the suffix closes f's.
        pytest.param("g(x)", ")", "g(x)", id="balanced_closing_bracket_is_kept"),
        pytest.param("a])", "])", "a", id="several_duplicated_closers_are_dropped"),
    ],
)
def test_closers_are_dropped_only_where_the_suffix_already_has_them(middle, suffix, shown):
    assert trim_suffix_overlap(middle, suffix) == shown


def test_lines_repeating_the_suffix_start_are_dropped():
    middle = "    x = 1\n    return x\n"
    assert trim_suffix_overlap(middle, "    return x\n") == "    x = 1\n"


def context(text: str, offset: int, language: str | None = "python"):
    parser = parser_for(language)
    tree = parser.parse(text.encode()) if parser else None
    return build_context(text, offset, language, context_tokens=1024, max_tokens=32, tree=tree)


def test_context_windows_are_lf_and_the_document_endings_are_remembered():
    text = "def f(x):\r\n    return \r\n\r\nprint(f(1))\r\n"
    ctx = context(text, text.index(" \r\n\r\nprint") + 1)
    assert "\r" not in ctx.prefix + ctx.suffix
    assert ctx.crlf
    assert ctx.line_before == "    return " and ctx.line_after == ""


def test_a_crlf_document_gets_crlf_suggestions_and_an_lf_one_lf():
    middle = Candidate("if x:\n        return 1\n    return 2", 8, 0.0, True)
    for endings in ("\n", "\r\n"):
        text = endings.join(["def f(x):", "    ", "", "print(f(1))", ""])
        offset = text.index("    ") + 4
        (shown,) = shown_texts([middle], context(text, offset))
        assert shown == "if x:\n        return 1\n    return 2".replace("\n", endings)


def test_candidates_are_ranked_on_the_text_as_shown():
    # The better-scored middle leaves the code unparseable; the one shown first must parse.
    text = "def f(x):\n    return \n"
    offset = text.index("return ") + len("return ")
    broken = Candidate("x +* (", 8, -0.1, True)
    fine = Candidate("x + 1", 8, -0.9, True)
    incomplete = Candidate("x + 2", 8, -0.01, False)  # the hole ran out: complete ones go first
    assert shown_texts([broken, incomplete, fine], context(text, offset)) == ["x + 1", "x +* (", "x + 2"]


def test_a_mid_line_hole_gets_one_line_and_a_line_hole_several():
    text = f"total = {MARKER} + 1\ndef f():\n    {MARKER}\n"
    middles = ["a\nb\nc", "x = 1\n    return x"]
    shown = shown_middles(text, MARKER, middles, "python", context_tokens=1024, max_tokens=16)
    assert shown == ["a", "x = 1\n    return x"]
    assert with_middles(text, MARKER, shown) == "total = a + 1\ndef f():\n    x = 1\n    return x\n"


def test_hole_middles_keep_the_document_line_endings():
    text = f"def f():\r\n    {MARKER}\r\n"
    (shown,) = shown_middles(text, MARKER, ["x = 1\n    return x"], "python", 1024, 16)
    assert shown == "x = 1\r\n    return x"


def test_each_thread_parses_with_its_own_parser():
    """tree-sitter parsers are not thread-safe: the event loop and a worker must never share one."""
    import threading

    here = parser_for("python")
    assert parser_for("python") is here  # reused within a thread
    there: list = []
    worker = threading.Thread(target=lambda: there.append(parser_for("python")))
    worker.start()
    worker.join()
    assert there[0] is not None and there[0] is not here
