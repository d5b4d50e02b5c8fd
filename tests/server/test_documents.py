"""Documents: LSP positions in UTF-8/16/32 code units <-> offsets, and incremental changes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types

from difill.server.documents import UTF8, UTF16, UTF32, Document, Documents, code_units

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

ENCODINGS = (UTF8, UTF16, UTF32)
LINE = 's = "é한😀x"'  # 2-byte, 3-byte and 4-byte (astral, a surrogate pair in UTF-16) characters


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def change(start: tuple[int, int], end: tuple[int, int], text: str) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=pos(*start), end=pos(*end)), text=text
    )


@pytest.mark.parametrize(
    ("encoding", "units_before_x"),
    [(UTF32, 8), (UTF16, 9), (UTF8, 14)],
)
def test_columns_count_code_units_of_the_negotiated_encoding(encoding, units_before_x):
    doc = Document("file:///a.py", "python", 1, LINE + "\n")
    offset = doc.offset_at(pos(0, units_before_x), encoding)
    assert doc.text[offset] == "x"
    assert doc.position_at(offset, encoding) == pos(0, units_before_x)


@pytest.mark.parametrize(("encoding", "inside"), [(UTF16, 8), (UTF8, 11), (UTF8, 12), (UTF8, 13)])
def test_a_position_inside_a_character_rounds_down_to_its_start(encoding, inside):
    doc = Document("file:///a.py", "python", 1, LINE)
    assert doc.text[doc.offset_at(pos(0, inside), encoding)] == "😀"


def test_a_character_past_the_end_of_the_line_means_the_end_of_the_line():
    doc = Document("file:///a.py", "python", 1, "ab\r\ncd\n")
    assert doc.offset_at(pos(0, 99), UTF16) == 2  # before the CRLF, not inside or after it
    assert doc.offset_at(pos(1, 99), UTF16) == 6


def test_a_line_past_the_end_has_no_offset():
    doc = Document("file:///a.py", "python", 1, "ab\n")
    assert doc.offset_at(pos(1, 0), UTF16) == 1 + 2  # the empty last line exists
    assert doc.offset_at(pos(2, 0), UTF16) is None


def test_only_lsp_line_endings_split_lines():
    # \x0c, \x1c, \u2028 are not line ends in LSP, though str.splitlines splits on them.
    doc = Document("file:///a.py", "python", 1, "a\x0cb\u2028c\rd\r\ne\nf")
    assert [doc.line_text(i) for i in range(doc.line_count)] == ["a\x0cb\u2028c", "d", "e", "f"]


def test_incremental_changes_in_utf16_apply_at_the_right_characters():
    docs = Documents()
    docs.open("file:///a.py", "python", 1, LINE + "\nnext\n")
    after_emoji = code_units('s = "é한😀', UTF16)
    doc = docs.change("file:///a.py", 2, [change((0, after_emoji), (0, after_emoji + 1), "Y")], UTF16)
    assert doc.text == 's = "é한😀Y"\nnext\n' and doc.version == 2
    doc = docs.change("file:///a.py", 3, [change((0, 4), (1, 0), ""), change((0, 0), (0, 0), "# ")], UTF16)
    assert doc.text == "# s = next\n"


def test_a_whole_document_change_replaces_the_text():
    docs = Documents()
    docs.open("file:///a.py", "python", 1, "old")
    doc = docs.change("file:///a.py", 2, [types.TextDocumentContentChangeWholeDocument(text="new\n")], UTF16)
    assert doc.text == "new\n"


def test_changes_to_unknown_documents_are_ignored():
    assert Documents().change("file:///nope.py", 2, [change((0, 0), (0, 0), "x")], UTF16) is None


def test_a_snapshot_keeps_the_document_as_it_was():
    docs = Documents()
    docs.open("file:///a.py", "python", 1, "one")
    snapshot = docs.snapshot()
    docs.change("file:///a.py", 2, [change((0, 0), (0, 3), "two")], UTF16)
    assert snapshot["file:///a.py"].text == "one" and docs.get("file:///a.py").text == "two"


def test_document_text_stays_out_of_reprs():
    assert "secret" not in repr(Document("file:///a.py", "python", 1, "secret"))


texts = st.text(alphabet=st.sampled_from(list("ab é한😀\t\r\n")), max_size=40)


@given(text=texts, data=st.data())
def test_offset_and_position_round_trip(text, data):
    doc = Document("file:///a.py", "python", 1, text)
    offset = data.draw(st.integers(min_value=0, max_value=len(text)))
    if text[offset - 1 : offset + 1] == "\r\n":  # inside a line ending: not a position
        offset -= 1
    for encoding in ENCODINGS:
        assert doc.offset_at(doc.position_at(offset, encoding), encoding) == offset


@given(text=texts, data=st.data())
def test_incremental_change_equals_editing_the_string(text, data):
    doc = Document("file:///a.py", "python", 1, text)
    a = data.draw(st.integers(min_value=0, max_value=len(text)))
    b = data.draw(st.integers(min_value=a, max_value=len(text)))
    if text[a - 1 : a + 1] == "\r\n" or text[b - 1 : b + 1] == "\r\n":
        return
    new = data.draw(texts)
    for encoding in ENCODINGS:
        start, end = doc.position_at(a, encoding), doc.position_at(b, encoding)
        edit = types.TextDocumentContentChangePartial(range=types.Range(start=start, end=end), text=new)
        changed, exact = doc.with_changes([edit], 2, encoding)
        assert exact and changed.text == text[:a] + new + text[b:]


@given(
    text=st.text(alphabet="ab\r\n", max_size=40),
    piece=st.text(alphabet="ab\r\n", max_size=8),
    data=st.data(),
)
def test_the_line_index_after_a_change_equals_a_fresh_one(text, piece, data):
    """A change updates the line index around itself; CR and LF joined or parted by the change
    (inserting "\\n" after a "\\r", deleting between them) must count as a fresh index counts."""
    doc = Document("file:///a.py", "python", 1, text)
    assert doc.line_starts  # built: the index of the old text, as a server that answered requests has it
    start = data.draw(st.integers(min_value=0, max_value=len(text)))
    end = data.draw(st.integers(min_value=start, max_value=len(text)))
    spliced = doc._spliced(start, end, piece, 2)
    fresh = Document("file:///a.py", "python", 2, spliced.text)
    assert spliced.text == text[:start] + piece + text[end:]
    assert spliced.line_starts == fresh.line_starts


def test_a_document_knows_where_its_latest_change_put_text():
    """Where a user typed, against where a cursor only went (issue 66): the span of the latest
    change in the new text; a whole-text change's is what differs; an opened document has none."""
    docs = Documents()
    assert docs.open("file:///c.py", "python", 1, "ab\ncd\n").changed is None
    typed = docs.change("file:///c.py", 2, [change((1, 1), (1, 1), "XY")], UTF16)
    assert typed.text == "ab\ncXYd\n" and typed.changed == (4, 6)
    deleted = docs.change("file:///c.py", 3, [change((1, 1), (1, 3), "")], UTF16)
    assert deleted.text == "ab\ncd\n" and deleted.changed == (4, 4)
    whole = docs.change(
        "file:///c.py", 4, [types.TextDocumentContentChangeWholeDocument(text="ab\ncQd\n")], UTF16
    )
    assert whole.changed == (4, 5)
    assert docs.change("file:///c.py", 5, [], UTF16).changed == (4, 5)  # no change: still there
