"""The suggestion cache: exact hits, typed-ahead reuse, and LRU eviction."""

from __future__ import annotations

from difill.server.features.suggestions.cache import SuggestionCache


def test_exact_context_returns_the_stored_suggestions():
    cache = SuggestionCache()
    cache.store("x = ", "\n", ["compute(1)", "0"])
    hit = cache.lookup("x = ", "\n")
    assert hit.suggestions == ["compute(1)", "0"] and hit.typed == 0


def test_typing_the_start_of_a_suggestion_returns_its_rest():
    cache = SuggestionCache()
    cache.store("x = ", "\n", ["compute(1)", "0"])
    hit = cache.lookup("x = comp", "\n")
    assert hit.suggestions == ["ute(1)"] and hit.typed == 4


def test_typing_something_else_misses():
    cache = SuggestionCache()
    cache.store("x = ", "\n", ["compute(1)"])
    assert cache.lookup("x = cum", "\n") is None
    assert cache.lookup("x = comp", "\nother") is None  # the suffix changed


def test_typing_a_whole_suggestion_leaves_nothing_to_suggest():
    cache = SuggestionCache()
    cache.store("x = ", "\n", ["0"])
    assert cache.lookup("x = 0", "\n") is None


def test_least_recently_used_entries_are_evicted():
    cache = SuggestionCache(max_entries=2)
    cache.store("a", "", ["1"])
    cache.store("b", "", ["2"])
    cache.lookup("a", "")  # a is now the most recent
    cache.store("c", "", ["3"])
    assert cache.lookup("b", "") is None
    assert cache.lookup("a", "") is not None and cache.lookup("c", "") is not None
