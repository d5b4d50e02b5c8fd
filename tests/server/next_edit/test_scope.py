"""Issue 46: a rename walks the scope of the name it renames (tree-sitter), not every function
that happens to use the same word."""

from __future__ import annotations

import pytest

from difill.server.features.next_edit.patterns import pattern_of, places
from difill.server.features.next_edit.scope import rename_scope

pytestmark = pytest.mark.unit

SOURCE = (
    "import typing\n\n"
    "def first(count):\n    total = count + 1\n    return count * total\n\n"
    "def second(items):\n    count = len(items)\n    return count\n\n"
    "def third():\n    return typing.cast(int, 1) + typing.cast(int, 2)\n"
)


def lines_changed(before: str, after: str) -> list[int]:
    pattern = pattern_of(before, after)
    assert pattern is not None
    scope = rename_scope(after, pattern.at, pattern.old, pattern.attribute, "python")
    return sorted(after.count("\n", 0, p.start) for p in places(pattern, after, pattern.at, scope))


def test_a_parameter_renamed_walks_its_function_only():
    after = SOURCE.replace("def first(count)", "def first(n)")
    assert lines_changed(SOURCE, after) == [3, 4]  # never `count` of second(), lines 7-8


def test_a_local_renamed_at_a_use_walks_its_function_only():
    after = SOURCE.replace("    count = len(items)", "    size = len(items)")
    assert lines_changed(SOURCE, after) == [8]


def test_a_name_the_function_does_not_bind_walks_the_file():
    source = "LIMIT = 3\n\ndef f(x):\n    return min(x, LIMIT)\n\ndef g(y):\n    return max(y, LIMIT)\n"
    after = source.replace("min(x, LIMIT)", "min(x, CAP)")
    assert lines_changed(source, after) == [0, 6]  # a global: its definition and the other function


def test_a_renamed_module_qualifier_walks_its_attribute_only():
    after = SOURCE.replace("return typing.cast(int, 1)", "return t.cast(int, 1)")
    assert lines_changed(SOURCE, after) == [11]  # not ``import typing``


def test_a_function_renamed_at_its_def_walks_the_file():
    source = "def helper():\n    pass\n\ndef main():\n    helper()\n"
    after = source.replace("def helper", "def assist")
    assert lines_changed(source, after) == [4]


def test_without_a_grammar_the_file():
    assert rename_scope("def f(a):\n    a\n", 6, "a", False, None) is None
