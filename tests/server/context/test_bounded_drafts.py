"""The draft finder's work is bounded by what its sources add (issue 62 row 10): open tabs of the
same code are read once at their best match, not at every length of the query."""

from __future__ import annotations

from difill.server.context import drafts
from difill.server.context.drafts import find_drafts

LINE = "    value_7_12 = compute_40(item_9, other_3)\n"
TAB = "def run(item_9, other_3):\n" + LINE * 2000
SMALL = "def total(item_9, other_3):\n" + LINE + "    return value_7_12\n\n\ndef again(item_9, other_3):\n    value_7_12 = comp"


def test_tabs_of_repeated_code_are_read_at_their_best_match(monkeypatch):
    looked_at = []
    match_ends = drafts._match_ends

    def counted(*args, **kwargs):
        for end in match_ends(*args, **kwargs):
            looked_at.append(end)
            yield end

    monkeypatch.setattr(drafts, "_match_ends", counted)
    found = find_drafts(SMALL, [(f"tab_{k}", TAB) for k in range(8)], language="python")
    assert [d.source for d in found] == ["current", "tab_0"]  # the file's own, then the tabs' one
    assert found[0].text.startswith("ute_40(item_9, other_3)\n    return value_7_12")
    assert len(looked_at) < 1000  # f7ad0f7: 12,000 matches, every length of every tab

