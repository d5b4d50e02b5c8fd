"""Issue 28, item 4: the completion fallback finds the typed word in a bounded tail of the line,
so a 30 KB hex literal no longer holds the event loop for seconds."""

from __future__ import annotations

import time

import pytest

from difill.server.features.suggestions.completion import WORD_CHARS, typed_word

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)


def test_the_typed_word_is_found_at_the_end_of_the_line():
    assert typed_word("    return wid") == "wid"
    assert typed_word("x = f(") == ""
    assert typed_word("é_ok") == "é_ok"


def test_a_30_kb_line_takes_no_time_and_the_word_is_cut_to_the_tail():
    line = 'KEY = "' + "deadbeef" * 3750 + '"; value'  # "\w*$" tried every start in the literal
    started = time.thread_time()  # this thread's CPU: other processes on the cores do not count
    for _ in range(20):
        assert typed_word(line) == "value"
    assert time.thread_time() - started < 0.5  # ~1 ms; "\w*$" on the whole line: seconds
    word = "ab" * 15_000
    assert typed_word(word) == word[-WORD_CHARS:]
