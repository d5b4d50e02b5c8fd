"""Issue 63, round 2: a next edit's answer in a 2,000-line file under 50 ms.  Each cut reads the
same answers as the code it replaced: the parse check parses one side when the code is clean and
re-parses the other from its tree, and a rename's scope is read from the tree kept while the edit
is typed (docs/next_edit.md, "Round 2")."""

from __future__ import annotations

import pytest

from difill.server.features.next_edit.patterns import pattern_of
from difill.server.features.next_edit.scope import rename_scope
from difill.server.features.next_edit.tree_places import tree_after
from difill.text.pipeline import errors_unless_clean, errors_with_replacement

pytestmark = pytest.mark.unit

CODE = "".join(f"def f{i}(a, b):\n    x = g(a, b)\n    return x + {i}\n\n" for i in range(60))


@pytest.mark.parametrize(
    "first, second",
    [("g(a, b)", "g(a, b, None)"), ("g(a, b)", "g(a, (b"), ("g(a, (", "g(a, b)"), ("g(a, ((", "g(a, [")],
)
@pytest.mark.parametrize("at_line", [1, 120, 237])
def test_the_parse_check_counts_as_two_fresh_parses(first, second, at_line):
    """The second side, re-parsed from the first's tree, has the errors a fresh parse finds; it
    is skipped only when the first has none."""
    start = sum(len(line) + 1 for line in CODE.split("\n")[:at_line]) + len("    x = ")
    end = start + len("g(a, b)")
    one, two = errors_unless_clean(CODE, start, end, first, second, "python")
    assert one == errors_with_replacement(CODE, start, end, first, "python")
    if one:
        assert two == errors_with_replacement(CODE, start, end, second, "python")
    else:
        assert two is None
    assert errors_unless_clean(CODE, start, end, first, second, None) == (None, None)


def test_a_rename_scope_from_the_kept_tree_is_the_scope_of_a_fresh_parse():
    before = CODE
    after = CODE.replace("def f7(a, b):\n    x = g(a, b)", "def f7(a, b):\n    y = g(a, b)", 1)
    pattern = pattern_of(before, after)
    assert pattern is not None and pattern.rename
    tree = tree_after(before, after, "python")
    assert tree is not None and tree.root_node.text == after.encode()
    kept = rename_scope(after, pattern.at, pattern.old, pattern.attribute, "python", tree)
    assert kept == rename_scope(after, pattern.at, pattern.old, pattern.attribute, "python")
    assert kept is not None and after[kept[0] : kept[1]].startswith("def f7")
    assert tree_after(before, after, None) is None
