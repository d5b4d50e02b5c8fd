"""Issue 35, edit drafts: the pattern of the last edit and the places it applies (no model)."""

from __future__ import annotations

import pytest

from difill.server.features.next_edit.history import EditHistory
from difill.server.features.next_edit.patterns import pattern_of, places

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)


def applied(text: str, before: str) -> list[str]:
    """The document after each place's edit, line by line where it lands."""
    pattern = pattern_of(before, text)
    assert pattern is not None
    out = []
    for place in places(pattern, text, pattern.at):
        edited = text[: place.start] + place.text + text[place.end :]
        out.append(edited.split("\n")[text.count("\n", 0, place.start)])
    return out


def test_rename_every_other_use_not_in_comments_strings_or_attributes():
    before = "def total(items, count):\n    x = count + 1\n    self.count = 'count'\n    return count * x  # count\n"
    after = before.replace("items, count", "items, cnt")
    assert applied(after, before) == ["    x = cnt + 1", "    return cnt * x  # count"]


def test_inserted_argument_goes_to_the_other_calls_and_not_where_it_is():
    before = "a = f(x, y)\nb = f(x, y)\nc = f(x, y, z)\n"
    after = before.replace("a = f(x, y)", "a = f(x, y, z)")
    assert applied(after, before) == ["b = f(x, y, z)"]


def test_code_being_written_is_no_pattern():
    """Typing inside brackets not yet closed offers nothing elsewhere: found by typing a new line
    at the end of tests/editors/sample_stats.txt in Neovim (it was offered after every other
    ``values)``)."""
    before = "def mean(values):\n    return sum(values) / len(values)\n"
    typed = before + "    return sum((v - m"
    assert pattern_of(before, typed) is None
    assert pattern_of(before, before.replace("sum(values)", "sum(values, f()")) is None  # ", f(" open
    # A balanced insertion on one line still is one: the argument added to one call.
    assert pattern_of(before, before.replace("sum(values)", "sum(values, 0)")) is not None


def test_deleted_argument():
    before = "a = f(x, y)\nb = f(x, y)\n"
    assert applied(before.replace("a = f(x, y)", "a = f(x)"), before) == ["b = f(x)"]


def test_changed_keyword_and_multi_token_substitution():
    before = "if a == None:\n    pass\nif b == None:\n    pass\n"
    assert applied(before.replace("a == None", "a is None"), before) == ["if b is None:"]
    before = "log.warn('a')\nlog.warn('b')\n"
    assert applied(before.replace("log.warn('a')", "log.warning('a')"), before) == ["log.warning('b')"]


def test_a_partial_identifier_edit_is_widened_to_the_whole_name():
    before = "value = load()\nprint(value)\n"
    after = before.replace("value = load", "values = load")  # one character typed at the end
    assert applied(after, before) == ["print(values)"]


@pytest.mark.parametrize(("before", "after"), [
    ("x = 1\n", "x = 1\n"),  # nothing changed
    ("x = 1\n", "x = 1\n\n"),  # whitespace only
    ("x = 1\n", "x = 1\n" + "y = 2\n" * 200),  # a paste is no pattern
])  # fmt: skip
def test_no_pattern(before, after):
    assert pattern_of(before, after) is None


def test_outside_the_window_only_renames_apply():
    before = "a = f(x, y)\n" + "pass\n" * 40 + "b = f(x, y)\n"
    after = before.replace("a = f(x, y)", "a = f(x, y, z)", 1)
    pattern = pattern_of(before, after)
    assert pattern is not None and places(pattern, after, 0) == []


def test_history_coalesces_keystrokes_and_bounds_what_it_keeps():
    now = [0.0]
    history = EditHistory(clock=lambda: now[0])
    texts = ["count = 1\n", "coun = 1\n", "cou = 1\n", "co = 1\n", "c = 1\n", "cn = 1\n", "cnt = 1\n"]
    for version, (before, after) in enumerate(zip(texts, texts[1:], strict=False), 2):
        now[0] += 0.1
        history.changed("u", before, after, version)
    edit = history.last("u")
    assert edit is not None and (edit.before, edit.after) == ("count = 1\n", "cnt = 1\n")  # one edit
    now[0] += 5  # a pause: the next change is another edit
    history.changed("u", "cnt = 1\n", "cnt = 2\n", 9)
    assert history.last("u").before == "cnt = 1\n"
    history.changed("u", "cnt = 2\n", "cnt = 2\n" + "x" * 10_000, 10)  # a paste
    assert history.last("u") is None


def test_a_rename_just_after_a_block_was_set_is_an_edit_of_its_own():
    """Found by the Neovim client's tests: text set right after the file opened, then a rename
    inside it within the keystroke gap, was one edit of 600 characters, and no pattern."""
    now = [0.0]
    history = EditHistory(clock=lambda: now[0])
    block = "".join(f"def f{i}(count):\n    return count + {i}\n" for i in range(20))
    history.changed("u", "", block, 2)
    now[0] += 0.5
    renamed = block.replace("def f0(count)", "def f0(total)", 1)
    history.changed("u", block, renamed, 3)
    edit = history.last("u")
    assert edit is not None and edit.before == block
    pattern = pattern_of(edit.before, edit.after)
    assert pattern is not None and (pattern.old, pattern.new) == ("count", "total")


# ---------------------------------------------------------------------------- issue 46: right or silent


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("x = f(a, b)\ny = f(a, b)\n", "x = f(a, b,)\ny = f(a, b)\n"),  # ends on a comma: half made
        ("x = t.Optional[str]\ny = t.Optional[str]\n", "x = t.Union[str\ny = t.Optional[str]\n"),  # open bracket
        ("x = 'a'\ny = 'a'\n", "x = 'a\ny = 'a'\n"),  # a quote not closed
        ("a = 1\nb = 1\n", "a = 1\nimport os\nb = 1\n"),  # a new line is code being written
        ("a = g(x)  # old\nb = g(x)  # old\n", "a = g(x)  # new\nb = g(x)  # old\n"),  # in a comment
        ("a = g(x)  # note\nb = g(x)  # note\n", "a = g(x)\nb = g(x)  # note\n"),  # a comment removed
        ("    y = compute(x)\n    z = compute(x)\n", "    \n    z = compute(x)\n"),  # a line cleared
    ],
)
def test_half_made_edits_new_lines_and_comments_are_no_pattern(before, after):
    assert pattern_of(before, after) is None


def test_a_version_in_a_string_and_a_swapped_operator_are_patterns():
    before = "version='0.1.6',\nurl='https://x/tarball/0.1.6',\n"
    assert applied(before.replace("0.1.6'", "0.1.7'", 1), before) == ["url='https://x/tarball/0.1.7',"]
    before = "assert n is 1\nassert n is 2\n"
    assert applied(before.replace("n is 1", "n == 1"), before) == ["assert n == 2"]


def test_a_renamed_qualifier_walks_only_the_same_attribute():
    before = "a: typing.Callable\nb: typing.Pattern[str]\nc: typing.Pattern[bytes]\n"
    after = before.replace("b: typing.Pattern", "b: re.Pattern")
    assert applied(after, before) == ["c: re.Pattern[bytes]"]


def test_an_insertion_at_the_end_of_a_line_goes_only_to_ends_of_lines():
    before = "def f():\n    return\n\ndef g():\n    return value\n\ndef h():\n    return\n"
    after = before.replace("    return\n", "    return None\n", 1)
    assert applied(after, before) == ["    return None"]


def test_a_deleted_run_takes_its_own_spaces_with_it():
    before = "def f(a: int | float = 1,\n      b: int | float = 2):\n    pass\n"
    after = before.replace("a: int | float", "a: float")
    assert applied(after, before) == ["      b: float = 2):"]


def test_an_undo_is_no_edit_to_repeat():
    history = EditHistory(clock=iter(range(0, 100, 5)).__next__)  # every change a new edit
    before = "def f(count):\n    return count\n"
    renamed = before.replace("f(count)", "f(total)")
    history.changed("u", before, renamed, 2)
    assert not history.last("u").undoes
    history.changed("u", renamed, before, 3)  # `u` in Neovim, Ctrl+Z in VS Code: one change back
    assert history.last("u").undoes
