"""Selection edits without LSP: the smallest replacements, which edits a selection offers, and how
model answers become the selection's new text."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from difill.engine.api import Candidate, FillResult, FillStats
from difill.server.config import Settings
from difill.server.documents import UTF16, Document
from difill.server.features.edits.diff import apply_replacements, minimal_replacements, text_edits
from difill.server.features.edits.selection import (
    COMPLETE_BLOCK,
    FILL_HOLES,
    REWRITE,
    EditError,
    EditRequest,
    HeldBack,
    available_edits,
    check_shown,
    fill_markers,
    new_selection,
    stub_body,
)
from difill.server.trees import SyntaxTrees
from difill.text.spans import keep_edges

lines = st.lists(st.sampled_from(["a = 1\n", "b = 2\n", "é😀\n", "\n", "    c = 3\r\n", "d"]), max_size=8)


@given(old=lines, new=lines)
def test_replacements_turn_old_into_new(old, new):
    old, new = "".join(old), "".join(new)
    assert apply_replacements(old, minimal_replacements(old, new)) == new


def test_a_one_character_change_is_a_one_character_edit():
    old = "def f(x):\n    return x + 1\n\nprint(f(2))\n"
    new = old.replace("x + 1", "x + 2")
    (only,) = minimal_replacements(old, new)
    assert (old[only.start : only.end], only.text) == ("1", "2")


def test_unchanged_lines_are_not_touched():
    old = "a\nb\nc\nd\n"
    new = "a\nB\nc\nD\n"
    replaced = minimal_replacements(old, new)
    assert [(old[r.start : r.end], r.text) for r in replaced] == [("b", "B"), ("d", "D")]


def test_text_edits_use_the_client_encoding_after_the_selection_start():
    doc = Document("file:///a.py", "python", 1, 's = "😀"\nx = 1\n')
    start = doc.text.index("x")
    (edit,) = text_edits(doc, start, "x = 1", "x = 2", UTF16)
    assert (edit.range.start.line, edit.range.start.character, edit.new_text) == (1, 4, "2")


DOC = 'def f(x):\n    pass\n\ny = [<|hole|>, 2]\ns = "a <|hole|> b"\n'


def offers(start_text: str, end_text: str) -> list[str]:
    doc = Document("file:///a.py", "python", 1, DOC)
    start = DOC.index(start_text)
    end = DOC.index(end_text) + len(end_text)
    return available_edits(doc, start, end, "<|hole|>", SyntaxTrees())


def test_offers_follow_the_selection():
    assert offers("def", "(x):") == [REWRITE]
    assert offers("pass", "pass") == [REWRITE, COMPLETE_BLOCK]
    assert offers("y = [", "2]") == [REWRITE, FILL_HOLES]
    doc = Document("file:///a.py", "python", 1, DOC)
    assert available_edits(doc, 5, 5, "<|hole|>", SyntaxTrees()) == []
    # Issue 52: a whole function whose body is a stub is offered "Complete block" too, and the
    # body alone is what gets written (the header stays).
    assert offers("def", "pass") == [REWRITE, COMPLETE_BLOCK]
    assert offers("def", "pass\n") == [REWRITE, COMPLETE_BLOCK]
    body = stub_body(doc, DOC.index("def"), DOC.index("pass") + 4, SyntaxTrees())
    assert body is not None and DOC[body[0] : body[1]] == "    pass"
    assert offers("def", "2]") == [REWRITE, FILL_HOLES]  # a stub in the middle of the selection: no


def test_holes_in_strings_and_comments_stay_on_their_line_and_inside_the_string():
    text = 'msg = "Hello, <|hole|>"\n# say <|hole|> here\nx = 1\n'
    doc = Document("file:///a.py", "python", 1, text)
    request = EditRequest(FILL_HOLES, doc.uri, 1, 0, text.index("x = 1"))
    filled = fill_markers(doc, request, ['world" + x\ny', "hi\nthere"], Settings())
    assert filled == 'msg = "Hello, world"\n# say hi here\n'


def test_a_wrong_number_of_middles_is_refused():
    doc = Document("file:///a.py", "python", 1, "x = <|hole|>\n")
    request = EditRequest(FILL_HOLES, doc.uri, 1, 0, 12)
    try:
        fill_markers(doc, request, [], Settings())
    except EditError as err:
        assert "0 holes of 1" in str(err)
    else:
        raise AssertionError("no EditError")


def test_keep_edges_keeps_indentation_and_the_final_newline():
    assert keep_edges("    pass\n", "return 1") == "    return 1\n"
    assert keep_edges("pass", "return 1") == "return 1"
    assert keep_edges("    x\r\n", "    y") == "    y\r\n"


def result(*texts: str) -> FillResult:
    return FillResult(texts[0], [Candidate(t, 8, 0.0, True) for t in texts], FillStats())


def test_an_empty_rewrite_is_refused():
    doc = Document("file:///a.py", "python", 1, "x = 1\n")
    request = EditRequest(REWRITE, doc.uri, 1, 0, 5)
    try:
        new_selection(request, doc, result("\x00\u202e  "), Settings(), SyntaxTrees())
    except EditError:
        return
    raise AssertionError("no EditError")


def test_complete_block_takes_the_first_usable_candidate_in_the_block_shape():
    text = "def area(w, h):\n    pass\n\nprint(area(2, 3))\n"
    doc = Document("file:///a.py", "python", 1, text)
    start = text.index("pass")
    request = EditRequest(COMPLETE_BLOCK, doc.uri, 1, start, start + 4)
    raw = result("\x00", "    return w * h\n\nprint(1)")
    assert new_selection(request, doc, raw, Settings(), SyntaxTrees()) == "return w * h"


def test_a_held_back_edit_says_what_the_model_wrote_why_and_what_to_do():
    """Issue 60, item 2: one line; with the built-in model it names modelPath and remote; the
    excerpt is redacted before it is cut, so no key shows even in part; editGate off shows it."""
    text = "def total(prices, tax):\n    subtotal = sum(prices)\n    return subtotal * (1 + tax)\n"
    doc = Document("file:///a.py", "python", 1, text)
    start = text.index("    subtotal")
    request = EditRequest(REWRITE, doc.uri, 1, start, len(text), "use a generator")
    noise = "    subcount = sum(prices) + AKIAIOSFODNN7EXAMPLE\n    return subcount\n"
    with pytest.raises(HeldBack) as held:
        check_shown(request, doc, noise, Settings(), SyntaxTrees())
    message = str(held.value)
    assert message.startswith('held back the edit: the model wrote "subcount = sum(prices) + <redacted>')
    assert "\n" not in message and "`modelPath`" in message and "`remote`" in message, message
    assert "AKIA" not in message and held.value.reasons
    with pytest.raises(HeldBack) as again:
        check_shown(request, doc, noise, dataclasses.replace(Settings(), model_path="/m"), SyntaxTrees())
    assert "select less" in str(again.value) and "`modelPath`" not in str(again.value)
    check_shown(request, doc, noise, dataclasses.replace(Settings(), edit_gate=False), SyntaxTrees())
    good = "    subtotal = sum(p for p in prices)\n    return subtotal * (1 + tax)\n"
    check_shown(request, doc, good, Settings(), SyntaxTrees())
