"""A word still being typed gets no next edit (issue 63).

Typed over ``requirement`` a keystroke at a time, ``req`` is on its way to another name: a next
edit asked at ``re`` or ``req`` offers the half-typed name as a rename elsewhere, while ghost text
at the cursor (``uire``) waits for the same Tab.  So an automatic ask is answered with nothing
while the document's last edit (history.py) is a word being typed at the cursor:

* the ask is at the end of the span the edit's keystrokes touched, right after a word character;
* the edit typed there, or deleted only word characters there (``requirement`` backspaced to
  ``requ``; not ``, b`` deleted after ``a``);
* its last keystroke came less than ``PAUSE_S`` before the ask.

The edit is finished once the user pauses, leaves the word (the cursor elsewhere, or a space or a
bracket typed after it), or asks explicitly (``triggerKind`` Invoked: a key, or the clients' ask
after Esc).  An edit the server answered and the client applied (Tab on a next edit) is no
keystroke: its walk goes on at once (``Applied``).
"""

from __future__ import annotations

from difill.server.features.next_edit.history import Edit

# Under the clients' pause before a mid-word ask (FINISHED_PAUSE_MS, 1000 ms, in both clients),
# so their ask after a pause is answered; over the gap between a typist's keystrokes (~170 ms at
# 6 keys a second) and the clients' 250 ms debounce, so an ask between them is not.
PAUSE_S = 0.75
INVOKED = 1  # InlineCompletionTriggerKind.Invoked: the user asked (a key, Esc ending the word)

Span = tuple[int, int, str]  # (start, end, new text) in the document


def half_typed(edit: Edit, offset: int, now: float) -> bool:
    """``edit`` (the document's last, ``edit.after`` its text) is a word still being typed at
    ``offset``, the ask's cursor, ``now`` on the history's clock."""
    if now - edit.last_at >= PAUSE_S or offset != edit.high or not 0 < offset <= len(edit.after):
        return False
    if not _word_char(edit.after[offset - 1]):
        return False  # a space, a bracket, a dot after the word: the user left it
    typed = edit.high > edit.low
    old = edit.before[edit.low : len(edit.before) - (len(edit.after) - edit.high)]
    return typed or (bool(old) and all(_word_char(c) for c in old))


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


class Applied:
    """The next edits answered for each document's version, so that applying one (the client's
    Tab) is known for what it is: a finished edit, not a word being typed."""

    def __init__(self) -> None:
        self._answered: dict[str, tuple[int, list[Span]]] = {}  # uri -> (version, edits answered)
        self._applied: dict[str, int] = {}  # uri -> the version an answered edit made

    def answered(self, uri: str, version: int, spans: list[Span]) -> None:
        if spans:
            self._answered[uri] = (version, spans)

    def changed(self, uri: str, before: tuple[int, str], after: tuple[int, str]) -> None:
        """A didChange of ``uri``: (version, text) ``before`` -> ``after``."""
        self._applied.pop(uri, None)
        answered = self._answered.pop(uri, None)
        if answered is None or answered[0] != before[0]:
            return
        text, now = before[1], after[1]
        for start, end, new in answered[1]:
            if len(now) == len(text) - (end - start) + len(new) and now == text[:start] + new + text[end:]:
                self._applied[uri] = after[0]
                return

    def applied(self, uri: str, version: int) -> bool:
        return self._applied.get(uri) == version

    def forget(self, uri: str) -> None:
        self._answered.pop(uri, None)
        self._applied.pop(uri, None)
