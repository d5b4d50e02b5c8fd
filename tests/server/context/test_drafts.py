"""The draft finder: prompt-lookup continuations of the text before the cursor, best first."""

from __future__ import annotations

import time

import pytest

from difill.server.context.drafts import Draft, find_drafts

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)


def test_continues_after_an_earlier_match_in_the_current_document():
    before = "total = compute_total(items, tax=0.2)\nprint(total)\nother = compute_"
    drafts = find_drafts(before, [])
    assert drafts[0] == Draft("total(items, tax=0.2)\nprint(total)\nother = compute_", "current")


def test_the_occurrence_at_the_cursor_itself_is_not_a_draft():
    assert find_drafts("x = load_config(path)", []) == []


def test_longest_match_wins_over_source_order():
    before = "def area(r):\n    return math.pi * r"
    sources = [("open", "y = x * r + 1\n"), ("pkg/geo.py", "    return math.pi * r ** 2\n")]
    drafts = find_drafts(before, sources)
    assert drafts[0] == Draft(" ** 2\n", "pkg/geo.py")  # 6 tokens matched beat 2
    assert Draft(" + 1\n", "open") in drafts


def test_sources_keep_their_order_at_one_match_length_and_current_comes_first():
    before = "a = 1\nvalue = self.reader.read_block(\nz = self.reader."
    sources = [("open", "q = self.reader.flush()\n"), ("lib/io.py", "self.reader.close()\n")]
    drafts = find_drafts(before, sources, max_drafts=3)
    assert [d.source for d in drafts] == ["current", "open", "lib/io.py"]
    assert drafts[0].text.startswith("read_block(")
    assert drafts[1].text == "flush()\n"
    assert drafts[2].text == "close()\n"


def test_nearest_earlier_occurrence_in_the_current_document_comes_first():
    before = "x = f(1)\nx = f(2)\nx = f("
    assert [d.text[:2] for d in find_drafts(before, [])] == ["2)", "1)"]


def test_a_partly_typed_word_is_continued():
    drafts = find_drafts("result = parse_head", [("lib.py", "h = parse_header(raw)\n")])
    assert drafts == [Draft("er(raw)\n", "lib.py")]


def test_a_match_must_start_at_a_word_start():
    # "config" inside "myconfig" is not the identifier "config".
    assert find_drafts("x = config", [("a.py", "myconfig.load()\n")]) == []


def test_whitespace_before_the_cursor_is_matched_and_not_repeated():
    drafts = find_drafts("if ready:\n    ", [("a.py", "if ready:\n        start()\n")])
    assert drafts == [Draft("start()\n", "a.py")]
    drafts = find_drafts("y = ", [("a.py", "y =  value\n")])
    assert drafts == [Draft("value\n", "a.py")]


def test_distinct_drafts_capped_in_number_and_length():
    sources = [("a.py", "k = run(1)\nk = run(1)\nk = run(2)\nk = run(3)\nk = run(4)\n")]
    drafts = find_drafts("k = run(", sources, max_drafts=3, max_chars=2)
    assert [d.text for d in drafts] == ["1)", "2)", "3)"]


def test_one_short_token_is_not_a_match():
    # A lone "(" or a two-letter word says nothing about what follows.
    assert find_drafts("(", [("a.py", "(x)\n")]) == []
    assert find_drafts("ab", [("a.py", "ab = 1\n")]) == []
    assert find_drafts("", [("a.py", "ab = 1\n")]) == []


def test_a_five_megabyte_source_stays_fast():
    big = ("def f(a, b):\n    return a + b\n" * 200_000)[:5_000_000]
    started = time.thread_time()  # this thread's CPU: other processes on the cores do not count
    for before in ("x = call(a, b) + (", "    return self.value(", "def f(a, b):\n    ret"):
        find_drafts(before, [("big.py", big)])
    assert find_drafts(big[:1_000_000] + "def f(a, b):\n    ret", [("big.py", big)])
    assert time.thread_time() - started < 2.0  # bounded work, not a benchmark: ~0.04 s here


def test_sources_past_the_budget_are_not_read():
    sources = [("a.py", "x" * 100), ("b.py", "k = run(9)\n")]
    assert find_drafts("k = run(", sources, max_source_chars=50) == []
    assert find_drafts("k = run(", sources, max_source_chars=10_000) == [Draft("9)\n", "b.py")]
