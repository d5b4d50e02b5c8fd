"""A rename's places are found within a bound (issue 62 row 7): the prose check reads each line
once, a line of data is no place, and a cancelled request stops the scan."""

from __future__ import annotations

import threading
import time

from difill.server.context.drafts import ProseScan, in_prose
from difill.server.features.next_edit.patterns import pattern_of, places
from difill.text.budget import Budget
from difill.text.languages import spec_of

DATA_LINE = "DATA = [" + "count, " * 13_000 + "]"  # 91 KB on one line
BEFORE = f"count = 1\n{DATA_LINE}\n\ndef f():\n    return count + 1\n"
AFTER = BEFORE.replace("count = 1", "total = 1", 1)


def test_the_prose_state_of_every_offset_of_a_long_line_is_read_in_linear_time():
    line = "x = [" + "'a', " * 20_000 + "b]  # the end"
    scan = ProseScan(line, spec_of("python"))
    started = time.thread_time()  # this thread's CPU: other processes on the cores do not count
    kinds = [scan.kind_at(end) for end in range(0, len(line), 7)]
    assert time.thread_time() - started < 1.0  # ~0.03 s; f7ad0f7 (a prefix per offset): minutes
    assert kinds.count("string") > 1000 and kinds[-1] == "comment"
    assert [scan.kind_at(n) for n in (5, 6, 8)] == ["", "string", ""]  # x = [' a ' ,
    assert in_prose("s = 'it\\'s", None) and not in_prose("s = 'it\\'s'", None)
    assert ProseScan("a = 1  # x\nb = 'c", None).kind_at(14) == "" and in_prose("b = 'c", None)


def test_a_rename_beside_a_90k_data_literal_finds_the_places_in_code_at_once():
    pattern = pattern_of(BEFORE, AFTER)
    assert pattern is not None and pattern.rename
    started = time.thread_time()
    found = places(pattern, AFTER, 9)
    assert time.thread_time() - started < 0.5  # f7ad0f7: never (quadratic in the line)
    assert [AFTER.count("\n", 0, p.start) for p in found] == [4]  # in f, not in the data line


def test_a_cancelled_rename_scan_stops_with_what_it_found():
    text = "total = 1\n" + "print(count)\n" * 5000
    pattern = pattern_of(text.replace("total", "count", 1), text)
    cancel = threading.Event()
    assert len(places(pattern, text, 9, budget=Budget(10_000, 100, cancel))) == 32  # MAX_PLACES
    cancel.set()
    assert places(pattern, text, 9, budget=Budget(10_000, 100, cancel)) == []
    assert len(places(pattern, text, 9, budget=Budget(10_000, 10))) == 10  # 10 steps: 10 matches looked at
