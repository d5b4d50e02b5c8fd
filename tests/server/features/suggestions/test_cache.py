"""The suggestion cache: exact hits, typed-ahead reuse, what was asked, and LRU eviction."""

from __future__ import annotations

import pytest

from difill.server.features.suggestions.cache import Asked, SuggestionCache

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

GHOST = Asked(invoked=False, newline="\n")


def test_exact_context_returns_the_stored_suggestions():
    cache = SuggestionCache()
    cache.store(GHOST, "x = ", "\n", ["compute(1)", "0"])
    hit = cache.lookup(GHOST, "x = ", "\n")
    assert hit.suggestions == ["compute(1)", "0"] and hit.typed == 0


def test_typing_the_start_of_a_suggestion_returns_its_rest():
    cache = SuggestionCache()
    cache.store(GHOST, "x = ", "\n", ["compute(1)", "0"])
    hit = cache.lookup(GHOST, "x = comp", "\n")
    assert hit.suggestions == ["ute(1)"] and hit.typed == 4


def test_typing_something_else_misses():
    cache = SuggestionCache()
    cache.store(GHOST, "x = ", "\n", ["compute(1)"])
    assert cache.lookup(GHOST, "x = cum", "\n") is None
    assert cache.lookup(GHOST, "x = comp", "\nother") is None  # the suffix changed


def test_typing_a_whole_suggestion_leaves_nothing_to_suggest():
    cache = SuggestionCache()
    cache.store(GHOST, "x = ", "\n", ["0"])
    assert cache.lookup(GHOST, "x = 0", "\n") is None


def test_another_ask_or_line_ending_misses():
    cache = SuggestionCache()
    cache.store(GHOST, "x = ", "\n", ["compute"])
    assert cache.lookup(Asked(invoked=True, newline="\n"), "x = ", "\n") is None
    assert cache.lookup(Asked(invoked=False, newline="\r\n"), "x = ", "\n") is None


def test_typing_a_line_break_into_a_crlf_suggestion_returns_its_rest():
    crlf = Asked(invoked=False, newline="\r\n")
    cache = SuggestionCache()
    cache.store(crlf, "if x:", "\n", [":\r\n    pass"])  # contexts are LF, suggestions the document's
    hit = cache.lookup(crlf, "if x::\n  ", "\n")
    assert hit.suggestions == ["  pass"] and hit.typed == 4


def test_least_recently_used_entries_are_evicted():
    cache = SuggestionCache(max_entries=2)
    cache.store(GHOST, "a", "", ["1"])
    cache.store(GHOST, "b", "", ["2"])
    cache.lookup(GHOST, "a", "")  # a is now the most recent
    cache.store(GHOST, "c", "", ["3"])
    assert cache.lookup(GHOST, "b", "") is None
    assert cache.lookup(GHOST, "a", "") is not None and cache.lookup(GHOST, "c", "") is not None


def test_an_empty_answer_is_remembered_for_its_own_context_only():
    cache = SuggestionCache()
    cache.store(GHOST, "x = ", "\n", [])
    hit = cache.lookup(GHOST, "x = ", "\n")
    assert hit is not None and hit.suggestions == []
    assert cache.lookup(GHOST, "x = 1", "\n") is None  # nothing to type ahead into


def test_an_answer_is_not_reused_when_what_it_read_beyond_the_window_changed():
    # Issue 52, item 2: import drafts read the whole document; a use of wait_fixed added 5 KB below
    # the cursor still got the cached "_" (the key held 4 KB either side).
    from difill.server.features.suggestions.cache import beyond

    head, tail = "from pkg.wait import ", "\n" + "x = 1\n" * 1000
    text = head + tail
    cache = SuggestionCache()
    cache.store(GHOST, head, tail, ["_"], beyond(text, len(head), generation=7))
    same = cache.lookup(GHOST, head, tail, lambda typed: beyond(text, len(head), 7, typed))
    assert same is not None and same.suggestions == ["_"]
    edited = text + "wait_fixed(1)\n"  # far below the cursor
    assert cache.lookup(GHOST, head, tail, lambda typed: beyond(edited, len(head), 7, typed)) is None
    assert (
        cache.lookup(GHOST, head, tail, lambda typed: beyond(text, len(head), 8, typed)) is None
    )  # another file


def test_typing_at_the_cursor_keeps_what_lies_beyond_the_window():
    from difill.server.features.suggestions.cache import beyond

    before, after = "import os\n" * 900 + "value = ", "\n" + "y = 2\n" * 900
    cache = SuggestionCache()
    cache.store(GHOST, before, after, ["compute(1)"], beyond(before + after, len(before), 3))
    typed = before + "comp"
    hit = cache.lookup(GHOST, typed, after, lambda t: beyond(typed + after, len(typed), 3, t))
    assert hit is not None and hit.suggestions == ["ute(1)"] and hit.typed == 4
