"""Issue 63, bad input for generalised next edits: a transformation that matches thousands of
places offers a bounded number, nearest first, in bounded time; a huge line or a file over the
parse cap gets nothing and is not scanned; a cancelled request stops; an edit whose parse fails
is never generalised."""

from __future__ import annotations

import threading
import time

import pytest

from difill.server.features.next_edit import tree_places as tree_places_module
from difill.server.features.next_edit.patterns import MAX_PLACES
from difill.server.features.next_edit.tree_places import MAX_PARSE_BYTES, tree_places

pytestmark = pytest.mark.unit

EDIT = ("str(total / 99999)", "str(int(total / 99999))")
RECEIVER = ("cls._T99999", "self._T99999")  # ``cls`` must read the same: every place is anchored


def edited(before: str, edit: tuple[str, str] = EDIT) -> tuple[str, int]:
    after = before.replace(*edit, 1)
    return after, after.index(edit[1]) + len(edit[1])


def test_thousands_of_matches_offer_a_bounded_number_nearest_first():
    lines = [f"v{i} = cls._T{i}" for i in range(6000)]
    lines[3000] = "a = cls._T99999"
    before = "\n".join(lines) + "\n"
    after, cursor = edited(before, RECEIVER)
    started = time.thread_time()  # this thread's CPU: other processes on the cores do not count
    found = tree_places(before, after, cursor, "python")
    took = time.thread_time() - started
    assert len(found) == MAX_PLACES
    rows = [after.count("\n", 0, p.start) for p in found]
    assert sorted(rows[:2]) == [2999, 3001]  # the nearest first
    assert max(abs(r - 3000) for r in rows) <= MAX_PLACES  # never a far one before a near one
    assert took < 5.0  # bounded (the figure, ~0.1 s, is in docs/next_edit.md)


def test_a_huge_line_gets_nothing_and_its_matches_are_not_scanned():
    data = "DATA = [" + "str(total / 3), " * 8000 + "]"  # 128 KB on one line
    before = f"a = str(total / 99999)\n{data}\nb = str(total / 7)\n"
    after, cursor = edited(before)
    started = time.thread_time()
    found = tree_places(before, after, cursor, "python")
    assert time.thread_time() - started < 5.0
    assert [after.count("\n", 0, p.start) for p in found] == [2]  # b, never the data line
    # The edit made on the huge line itself: nothing, at once.
    on_line = data.replace("str(total / 3)", "str(int(total / 3))", 1)
    assert tree_places(data, on_line, 30, "python") == []


def test_a_file_over_the_parse_cap_gets_nothing(monkeypatch):
    before = "a = str(total / 99999)\n" + "b = str(total / 7)\n" * (MAX_PARSE_BYTES // 19 + 1)
    after, cursor = edited(before)
    parsed, parse = [], tree_places_module._parsed
    monkeypatch.setattr(tree_places_module, "_parsed", lambda *args: parsed.append(args) or parse(*args))
    assert tree_places(before, after, cursor, "python") == []
    assert parsed == []  # not parsed (a clock could not tell: parsing it takes ~0.2 s)


def test_a_cancelled_request_stops():
    before = "a = cls._T99999\n" + "b = cls._T7\n" * 50
    after, cursor = edited(before, RECEIVER)
    cancel = threading.Event()
    assert len(tree_places(before, after, cursor, "python", cancel)) == MAX_PLACES
    cancel.set()
    assert tree_places(before, after, cursor, "python", cancel) == []


@pytest.mark.parametrize(
    ("language", "before", "new"),
    [
        ("python", "a = str(total / 99999)\nb = str(total / 7)\n", "str(int(total / 99999)"),  # a bracket open
        ("python", "a = str(total / 99999)\nb = str(total / 7)\n", "str(int(total / 99999)) +"),
        ("go", "package a\n\nvar a = f(total / 100)\nvar b = f(total / 7)\n", "f(int(total / 100)"),
        ("typescript", "const a = f(total / 100);\nconst b = f(total / 7);\n", "f(Math.round(total / 100)"),
    ],
)
def test_an_edit_whose_parse_fails_is_never_generalised(language, before, new):
    old = before.split("= ")[1].split("\n")[0].rstrip(";")
    after = before.replace(old, new, 1)
    assert tree_places(before, after, after.index(new) + len(new), language) == []
