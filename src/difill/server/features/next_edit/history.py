"""Each open document's recent edits, from its didChange events (issue 35).

Keystrokes are coalesced into edits: a change that touches the span of the edit being made
(typing on at its end, a backspace in it), less than ``BURST_GAP_S`` after its last keystroke,
extends it, unless the edit is already too big to be a pattern (a block of text set or pasted);
any other change ends it and starts the next - an accepted next edit elsewhere is an edit of its
own, with the same pattern.  An edit is kept as the document's text before it (its *anchor*) and the
text after it, so its pattern is one diff of the two (patterns.py).

Bounds: the last ``MAX_EDITS`` edits of a document are kept (the texts of the older ones are
dropped: only the newest is a pattern), a document over ``MAX_DOCUMENT_CHARS`` keeps none, and
a change of more than ``MAX_CHANGE_CHARS`` (a paste, a whole-file replace) is no pattern: it
ends the edit and leaves nothing to repeat, with no diff computed on the event loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from difill.server.features.next_edit.patterns import MAX_CHANGE_CHARS as MAX_PATTERN_CHARS
from difill.text.spans import changed_span

BURST_GAP_S = 2.0
MAX_EDITS = 8
MAX_DOCUMENT_CHARS = 1024 * 1024
MAX_CHANGE_CHARS = 4096


@dataclass
class Edit:
    before: str  # the document's text before the edit
    after: str  # and after it (the document now, for the newest edit)
    low: int  # the span the edit's keystrokes touched, in ``after``
    high: int
    last_at: float  # the time of its last keystroke
    version: int  # the document version after it
    undoes: bool = False  # it put the document back as it was before the edit before it (an undo)


class EditHistory:
    def __init__(self, clock=time.monotonic) -> None:
        self.clock = clock
        self._edits: dict[str, list[Edit]] = {}  # uri -> its edits, oldest first

    def changed(self, uri: str, before: str, after: str, version: int) -> None:
        """A didChange of ``uri``: ``before`` -> ``after``."""
        if len(after) > MAX_DOCUMENT_CHARS or abs(len(after) - len(before)) > MAX_CHANGE_CHARS:
            self._edits.pop(uri, None)  # a paste or a whole-file replace: no diff on the loop
            return
        start, old_end, new_end = changed_span(before, after)
        if max(old_end, new_end) - start > MAX_CHANGE_CHARS:
            self._edits.pop(uri, None)  # not a pattern, and what came before it no longer applies
            return
        edits = self._edits.setdefault(uri, [])
        now = self.clock()
        last = edits[-1] if edits else None
        if (
            last is not None
            and last.after == before
            and now - last.last_at < BURST_GAP_S
            # An edit already too big to be a pattern (text set or pasted) takes no keystrokes: a
            # rename inside it just after is an edit of its own, and one to repeat.
            and last.high - last.low <= MAX_PATTERN_CHARS
            and start <= last.high
            and old_end >= last.low  # it touches the edit's span: typing on, or a backspace into it
        ):
            last.after = after
            last.low = min(last.low, start)
            last.high = max(last.high + new_end - old_end if last.high >= old_end else last.high, new_end)
            last.last_at = now
            last.version = version
            return
        # An undo (``u``, Ctrl+Z) is one change back to the text before the last edit: it is not
        # an edit to repeat, or the reverse of an accepted rename is offered next.
        undoes = last is not None and last.after == before and after == last.before
        for old in edits:  # only the newest is diffed: the older ones keep no text
            old.before = old.after = ""
        self._edits[uri] = [*edits, Edit(before, after, start, new_end, now, version, undoes)][-MAX_EDITS:]

    def last(self, uri: str) -> Edit | None:
        edits = self._edits.get(uri)
        return edits[-1] if edits else None

    def forget(self, uri: str) -> None:
        self._edits.pop(uri, None)
