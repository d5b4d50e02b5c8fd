"""Edit proposals without LSP: where a change lands, which proposals it expires, and the 50 ms
spacing of previews (issue 24)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types

from difill.server.documents import Documents
from difill.server.engine_host import Job
from difill.server.features.edits.proposals import Proposal, Proposals
from difill.server.features.edits.service import PREVIEW_INTERVAL_S, Previews
from difill.text.spans import changed_span

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

URI = "file:///tmp/p.py"
TEXT = "a = 1\nb = 2\nc = 3\n"


@given(old=st.text("ab\n", max_size=30), new=st.text("ab\n", max_size=30), leftmost=st.booleans())
def test_changed_span_is_the_whole_difference(old, new, leftmost):
    start, old_end, new_end = changed_span(old, new, leftmost)
    assert old[:start] == new[:start] and old[old_end:] == new[new_end:]
    assert start <= old_end and start <= new_end
    assert old_end - start == len(old) - len(new) + new_end - start  # one span, lengths agree


def test_a_long_common_head_is_found_past_the_block_size():
    old = "x" * 10_000 + "a" + "y" * 5_000
    assert changed_span(old, old.replace("a", "bb")) == (10_000, 10_001, 10_002)


def proposals_with(start: int, end: int) -> tuple[Documents, Proposals, Proposal]:
    documents = Documents()
    documents.open(URI, "python", 1, TEXT)
    proposals = Proposals(documents)
    proposal = Proposal("p1", URI, 1, start, end, "B = 2\n", [], "difill: rewrite selection", TEXT)
    proposals.add(proposal)
    return documents, proposals, proposal


def change(documents: Documents, version: int, offset: int, old_len: int, text: str) -> None:
    doc = documents.get(URI)
    rng = doc.range_of(offset, offset + old_len, "utf-16")
    documents.change(URI, version, [types.TextDocumentContentChangePartial(range=rng, text=text)], "utf-16")


@pytest.mark.parametrize(
    ("offset", "old_len", "text", "expires"),
    [
        (7, 1, "X", True),  # inside the range
        (6, 0, "#", True),  # at its start
        (12, 0, "#", True),  # at its end
        (0, 0, "# hi\n", False),  # before it: it moves
        (14, 1, "9", False),  # after it
    ],
)
def test_a_change_in_the_range_expires_it_and_one_elsewhere_does_not(offset, old_len, text, expires):
    _check_change(TEXT, 6, 12, offset, old_len, text, expires)


def test_deleting_one_of_several_blank_lines_above_keeps_it():
    # "\n\n\n" -> "\n\n": the deleted newline could be the one that touches the range; it need not.
    text = "a = 1\n\n\n\nb = 2\n"
    _check_change(text, 9, 15, 6, 1, "", False)


def _check_change(text, start, end, offset, old_len, new_text, expires):
    documents = Documents()
    documents.open(URI, "python", 1, text)
    proposals = Proposals(documents)
    proposal = Proposal("p1", URI, 1, start, end, "B = 2\n", [], "difill: rewrite selection", text)
    proposals.add(proposal)
    replaced = text[start:end]
    change(documents, 2, offset, old_len, new_text)
    proposals.document_changed(URI)
    assert (proposals.take("p1") is None) == expires
    if not expires:
        assert documents.get(URI).text[proposal.start : proposal.end] == replaced  # it moved with the text
        assert proposal.version == 1  # still pinned to the version it was computed for


def test_a_new_proposal_for_the_same_range_replaces_the_old_one():
    documents, proposals, _ = proposals_with(6, 12)
    again = Proposal("p2", URI, 1, 6, 12, "B = 3\n", [], "difill: add type hints", TEXT)
    assert proposals.add(again) == ["p1"]
    assert proposals.take("p1") is None and proposals.count(URI) == 1
    elsewhere = Proposal("p3", URI, 1, 0, 6, "A = 1\n", [], "difill: rewrite selection", TEXT)
    assert proposals.add(elsewhere) == []  # another range: both stay
    assert proposals.count(URI) == 2


def test_the_label_says_what_the_edit_is():
    from difill.server.features.edits.commands import _label

    assert _label("rewrite", "add type hints") == "difill: add type hints"
    assert _label("rewrite") == "difill: rewrite selection"
    assert _label("fillHoles") == "difill: fill holes in selection"
    long = _label("rewrite", "use\nthe sum builtin " * 10)
    assert "\n" not in long and len(long) <= len("difill: ") + 60 and long.endswith("…")


def test_close_expires_and_the_count_includes_running_edits():
    documents, proposals, _ = proposals_with(6, 12)
    assert proposals.count(URI) == 1
    proposals.document_closed(URI)
    assert proposals.count(URI) == 0 and proposals.take("p1") is None


async def test_previews_are_at_least_50_ms_apart_and_the_newest_wins():
    sent: list[tuple[float, dict]] = []
    loop = asyncio.get_running_loop()
    drafts = Previews(lambda _method, params: sent.append((loop.time(), params)), Job(URI), "t", {"id": "p1"})
    for step in range(20):  # steps close together and ones just past the interval, mixed
        drafts._offer(f"text {step}", step)
        await asyncio.sleep(0.005 if step % 3 else PREVIEW_INTERVAL_S)
    await asyncio.sleep(PREVIEW_INTERVAL_S * 2)
    drafts.close(cancelled=False)
    times = [t for t, p in sent if not p.get("done")]
    assert len(times) < 20
    assert all(b - a >= PREVIEW_INTERVAL_S * 0.99 for a, b in zip(times, times[1:], strict=False))
    shown = [p for _, p in sent if not p.get("done")]
    assert [p["step"] for p in shown] == sorted({p["step"] for p in shown})  # in order, no repeats
    assert shown[0]["step"] == 0 and shown[-1]["step"] == 19  # the last step is not lost
    assert all(p["id"] == "p1" for _, p in sent) and sent[-1][1]["done"]


async def test_a_draft_due_before_the_waiting_one_is_sent_does_not_overtake_it():
    sent: list[int] = []
    drafts = Previews(lambda _method, params: sent.append(params["step"]), Job(URI), "t")
    drafts._offer("a", 0)  # sent at once
    drafts._offer("b", 1)  # held back: the timer will send it
    drafts.last_sent -= 1.0  # the interval is over, but the timer has not run yet
    drafts._offer("c", 2)
    await asyncio.sleep(PREVIEW_INTERVAL_S * 2)
    assert sent == [0, 2]  # the newest replaced the waiting one; nothing out of order
