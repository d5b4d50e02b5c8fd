"""Issue 60, item 2: the edit gate (text/edit_gate.py).  Each rule holds back the noise the
shipped model wrote (docs/edits.md) and lets a plausible edit of the same selection through."""

from __future__ import annotations

import pytest

from difill.text.edit_gate import Edit, excerpt, held_back

pytestmark = pytest.mark.unit

SOURCE = """def total_price(items, tax_rate):
    subtotal = 0
    for item in items:
        subtotal += item.price * item.quantity
    return subtotal * (1 + tax_rate)
"""
LOOP = "    for item in items:\n        subtotal += item.price * item.quantity\n"
GOOD = "    subtotal = sum(item.price * item.quantity for item in items)\n"


def gate(
    new: str, text: str = SOURCE, selected: str = LOOP, language: str | None = "python", **kw
) -> list[str]:
    start = text.index(selected)
    return held_back(Edit(text, start, start + len(selected), new, language, **kw))


def test_a_plausible_rewrite_passes_every_rule():
    assert gate(GOOD) == []
    assert gate(GOOD, instructed=True) == []
    assert gate(GOOD.replace("sum", "math.fsum")) == []  # a new name alone is no rename


def test_an_edit_that_parses_worse_is_held_back():
    broken = "    for item in items:\n        subtotal += (item.price * item.quantity\n"
    (reason,) = gate(broken)
    assert "does not parse" in reason


def test_python_that_no_longer_compiles_is_held_back_even_where_tree_sitter_recovers():
    # tree-sitter reads `return` outside a function without an error; Python does not compile it.
    text = "x = 1\n"
    (reason,) = gate("return 1\n", text=text, selected="x = 1\n")
    assert "compile" in reason
    assert gate("x = 2\n", text="x = 1\nprint(x)\n", selected="x = 1\n") == []


def test_a_selection_that_did_not_parse_may_stay_broken_but_not_get_worse():
    text = "def f(a):\n    return (a +\n"
    assert gate("    return (a * 2 +\n", text=text, selected="    return (a +\n") == []
    assert "does not parse" in gate("    return (a + ]] [\n", text=text, selected="    return (a +\n")[0]


@pytest.mark.parametrize(
    "new, repeated",
    [
        ("    for item in items items:\n        subtotal += item.price * item.quantity\n", "items"),
        ("    for item in items:\n        subtotal += item.item.price * item.quantity\n", "item"),
    ],
)
def test_a_repeated_name_is_held_back(new, repeated):
    reasons = gate(new)
    assert any(f"repeats `{repeated}`" in r for r in reasons), reasons


def test_a_line_written_twice_in_a_row_is_held_back():
    twice = LOOP + "        subtotal += item.price * item.quantity\n"
    assert any("a line twice" in r for r in gate(twice))


def test_a_repeat_the_selection_already_had_is_allowed():
    text = "def f(self):\n    self.self.x = 1\n    g()\n    g()\n"
    selected = "    self.self.x = 1\n    g()\n    g()\n"
    assert gate("    self.self.x = 2\n    g()\n    g()\n", text=text, selected=selected) == []


def test_renaming_a_name_used_outside_the_selection_is_held_back():
    mangled = "    for item in items:\n        subcount += item.price * item.quantity\n"
    (reason,) = gate(mangled)
    assert "renames" in reason and "`subtotal`" in reason and "`subcount`" in reason


def test_renaming_to_a_name_the_file_has_is_a_rename_too():
    text = "class A:\n    def f(self):\n        self.width = 0\n        self.style = 1\n        return self.width\n"
    (reason,) = gate("        self.style = 0\n", text=text, selected="        self.width = 0\n")
    assert "`width` gone, `style` in" in reason


def test_a_name_that_is_also_a_builtin_is_renamed_too():
    text = "class A:\n    def __eq__(self, other):\n        return self.id == other.id\n    id = 1\n"
    selected = "        return self.id == other.id\n"
    (reason,) = gate("        return self.args == other.max\n", text=text, selected=selected)
    assert "`id` gone" in reason


def test_dropping_a_shared_name_without_bringing_in_another_passes():
    # `subtotal` is used outside; the edit drops it and brings in only a builtin.
    assert gate("    for item in items:\n        print(item.price)\n") == []


def test_the_first_line_keeps_its_indentation():
    moved = "for item in items:\n        subtotal += item.price * item.quantity\n"
    assert any("first line's indentation" in r for r in gate(moved, language=None))


def test_no_line_moves_left_of_the_block():
    text = "class A:\n    def f(self):\n        pass\n"
    body = "        x = 1\n    return x\n"
    assert any("left of" in r for r in gate(body, text=text, selected="        pass\n", language=None))
    deeper = "        if self:\n            return 1\n        return 2\n"
    assert gate(deeper, text=text, selected="        pass\n") == []


def test_an_instruction_must_change_more_than_whitespace():
    assert gate(LOOP, instructed=True) == ["it changes nothing"]
    assert gate(LOOP.replace("    for", "  for", 1).replace("  for", "    for "), instructed=True) != []
    assert gate(LOOP) == []  # a rewrite without an instruction may give the selection back


def test_the_hole_marker_is_no_name_and_the_fill_is_checked():
    text = "def read_lines(path):\n    with open(path) as f:\n        return [line.<|hole|>() for line in <|hole|>]\n"
    selected = text[text.index("        return") :]
    noise = "        return [line.read(path)() for line in os.get(path(f.f) +path.path.format]\n"
    assert gate(noise, text=text, selected=selected, marker="<|hole|>")
    good = "        return [line.strip() for line in f]\n"
    assert gate(good, text=text, selected=selected, marker="<|hole|>") == []


def test_a_language_without_a_grammar_still_gets_the_other_rules():
    assert gate(GOOD, language="cobol") == []
    assert gate("    for item in items items:\n", language="cobol")


def test_the_excerpt_is_the_changed_lines_on_one_line():
    new = LOOP.replace("subtotal +=", "subcount +=")
    assert excerpt(LOOP, new) == "subcount += item.price * item.quantity"
    assert "\n" not in excerpt(LOOP, "a\n" * 100) and len(excerpt(LOOP, "word " * 100)) <= 60


def test_a_module_and_its_own_name_is_no_repeat_where_the_file_imports_it():
    text = "import datetime\n\ndef now():\n    pass\n"
    assert gate("    return datetime.datetime.now()\n", text=text, selected="    pass\n") == []
    assert "repeats `self`" in gate("    return self.self.now()\n", text=text, selected="    pass\n")[0]


def test_a_new_name_with_a_piece_repeated_inside_is_held_back():
    text = "class A:\n    def f(self):\n        pass\n"
    for noise in ("        self.event = self.Suler.ulululerulerer\n", "        return self._jo_____________\n",
                  "        lock.locklocklock = 1\n"):  # fmt: skip
        assert any("piece repeated" in r for r in gate(noise, text=text, selected="        pass\n")), noise
    assert gate("        self.renderer = None\n", text=text, selected="        pass\n") == []


def test_a_fill_is_held_to_the_parse_a_name_in_the_hole_would_give():
    # The marker is itself a syntax error: a fill that breaks the line hid behind it.
    text = "def f(event_dict):\n    return <|hole|>\n"
    selected = "    return <|hole|>\n"
    noise = '    return event_dict["name"]name"]\n'
    assert "does not parse" in gate(noise, text=text, selected=selected, marker="<|hole|>")[0]
    assert gate('    return event_dict["name"]\n', text=text, selected=selected, marker="<|hole|>") == []


def test_a_given_tree_and_crlf_line_endings_give_the_same_verdicts():
    from difill.text.syntax import parser_for

    broken = "    for item in items:\n        subtotal += (item.price * item.quantity\n"
    tree = parser_for("python").parse(SOURCE.encode())
    assert gate(broken, tree=tree) == gate(broken) != []
    assert gate(GOOD, tree=tree) == []
    crlf = SOURCE.replace("\n", "\r\n")
    assert gate(GOOD.replace("\n", "\r\n"), text=crlf, selected=LOOP.replace("\n", "\r\n")) == []
    assert gate(broken.replace("\n", "\r\n"), text=crlf, selected=LOOP.replace("\n", "\r\n")) == gate(broken)
