"""Issue 28, the text pipeline's part: a lone CR is a line ending everywhere (item 2), unsafe
characters never reach the editor (item 9), and ranking is bounded (item 3)."""

from __future__ import annotations

import time

import pytest

from difill.engine.api import Candidate, FillResult, FillStats
from difill.server.config import Settings
from difill.server.documents import Document
from difill.server.features.edits.selection import REWRITE, EditRequest, new_selection
from difill.server.trees import SyntaxTrees
from difill.text.characters import first_unsafe, line_ending_of, line_start, to_lf
from difill.text.context import build_context
from difill.text.pipeline import MAX_CANDIDATES, distinct, shown_rewrite, shown_texts
from difill.text.syntax import parser_for

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)


def context(text: str, offset: int, language: str | None = "python"):
    parser = parser_for(language)
    tree = parser.parse(text.encode()) if parser else None
    return build_context(text, offset, language, context_tokens=1024, max_tokens=32, tree=tree)


def test_a_lone_cr_is_a_line_ending():
    assert to_lf("a\rb\r\nc\n") == "a\nb\nc\n"
    assert line_ending_of("a\rb\rc\r\nd") == "\r"
    assert line_ending_of("a\r\nb\r\nc\nd") == "\r\n"
    assert line_ending_of("abc") == "\n"
    for text in ("ab\ncd", "ab\rcd", "ab\r\ncd", "x\ny\rab\ncd", "x\ry\nz\rcd"):
        assert line_start(text, len(text)) == len(text) - 2, text


def test_a_cr_only_document_gets_several_lines_in_cr():
    middle = Candidate("if x:\n        return 1\n    return 2", 8, 0.0, True)
    text = "\r".join(["def f(x):", "    ", "", "print(f(1))", ""])
    ctx = context(text, text.index("    ") + 4)
    assert "\r" not in ctx.prefix + ctx.suffix
    assert ctx.line_before == "    " and ctx.line_after == ""
    (shown,) = shown_texts([middle], ctx)
    assert shown == "if x:\r        return 1\r    return 2"


def test_a_rewrite_in_a_cr_only_document_keeps_every_line():
    # Issue 28, item 2: the rewrite was cut at its first CR and two selected lines were deleted.
    text = "x = 1\ry = 2\rz = 3\rprint(x)\r"
    selection = "x = 1\ry = 2\rz = 3\r"
    document = Document("file:///a.py", "python", 1, text)
    request = EditRequest(REWRITE, document.uri, 1, 0, len(selection))
    answer = FillResult(
        "x = 1\ry = 5\rz = 3\r", [], FillStats()
    )  # the model answers in the document's endings
    new = new_selection(request, document, answer, Settings(), SyntaxTrees())
    assert new == "x = 1\ry = 5\rz = 3\r"
    lf_answer = FillResult("x = 1\ny = 5\nz = 3\n", [], FillStats())  # or in LF: the same result
    assert new_selection(request, document, lf_answer, Settings(), SyntaxTrees()) == new


UNSAFE = ["\u009b", "\u0085", "\u202e", "\u2066", "\u200b", "\u2028", "\u2029", "\ufeff", "\x1b", "\ufffd"]


@pytest.mark.parametrize("char", UNSAFE, ids=[f"U+{ord(c):04X}" for c in UNSAFE])
def test_control_bidi_and_zero_width_characters_never_reach_a_suggestion(char):
    text = "def f(x):\n    return \n"
    ctx = context(text, text.index("return ") + len("return "))
    (shown,) = shown_texts([Candidate(f"x + 1{char}  # ok", 8, 0.0, True)], ctx)
    assert shown == "x + 1"
    assert first_unsafe(shown_rewrite(f"a{char}b", ctx)) is None


def test_tab_and_line_endings_are_not_unsafe():
    assert first_unsafe("\ta\nb\r\nc\rd é 😀 ‘q’") is None


@pytest.mark.parametrize(
    "char", ["\u202e", "\u0085", "\x00", "\ufffd"], ids=["U+202E", "U+0085", "U+0000", "U+FFFD"]
)
def test_a_rewrite_holding_an_unsafe_character_loses_the_character_not_the_rest(char):
    # Cut at the character, the rewrite would replace the whole selection with its first part.
    text = "a = 1\nb = 2\nprint(a)\n"
    document = Document("file:///a.py", "python", 1, text)
    request = EditRequest(REWRITE, document.uri, 1, 0, len("a = 1\nb = 2\n"))
    answer = FillResult(f"a = 1\nb{char} = 3\n", [], FillStats())
    assert new_selection(request, document, answer, Settings(), SyntaxTrees()) == "a = 1\nb = 3\n"


def test_ranking_looks_at_a_bounded_number_of_candidates():
    # Issue 28, item 3: 40,000 candidates were ranked and deduplicated on the event loop (13 s).
    text = "def f(x):\n    return \n"
    ctx = context(text, text.index("return ") + len("return "))
    many = [Candidate(f"x + {i}", 8, -i / 1e5, True) for i in range(40_000)]
    started = time.thread_time()  # this thread's CPU: other processes on the cores do not count
    shown = shown_texts(many, ctx)
    assert time.thread_time() - started < 2.0  # ~1 ms
    assert len(shown) == MAX_CANDIDATES


def test_distinct_keeps_order_and_drops_empty_and_repeated_texts():
    assert distinct(["b", "", "a", "b", "c", "a"]) == ["b", "a", "c"]
