"""Edit patterns: what the user's last edit did, and where else in the document it applies
(issue 35, "edit drafts": the common case of a next edit needs no model).

An edit is the text before it and after it.  Its pattern is the change at token level, widened
to whole tokens and anchored on the tokens around it:

* **rename**: one identifier became another (``count`` -> ``total``): every other ``count`` of the
  document, outside comments and strings, is a place for it;
* **substitution / insertion / deletion** of any run of tokens, with the tokens right before
  and after it as its anchor (``f(a, b)`` -> ``f(a, b, c)``: after ``b``, before ``)``, insert
  ``, c``): the other places within ``WINDOW_LINES`` of the edit where the anchor and the old
  text stand together.

A place that already reads the new text is not a place (it was changed already).  Pure text:
no LSP, no model; the caller checks that the result parses no worse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from difill.server.context.drafts import ProseScan, in_comment
from difill.text.budget import Budget
from difill.text.spans import changed_span

TOKEN = re.compile(r"\w+|[^\w\s]")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
WINDOW_LINES = 30  # a pattern that is not a rename applies within this many lines of the edit
ANCHOR_TOKENS = 2  # tokens before the change that must stand before it elsewhere too
MAX_CHANGE_CHARS = 400  # a longer change (a paste, a reformat) is not a pattern
MAX_PLACES = 32
# A rename's matches looked at, and for how long: a 90 KB data literal of the renamed name is
# 10,000 matches, and the nearest 32 are answered (issue 62 row 7).
MAX_RENAME_MATCHES = 4096
RENAME_MS = 500.0
MAX_PLACE_LINE = 4000  # a rename's place stands on a line of code, not in a data literal this long


@dataclass(frozen=True)
class Pattern:
    old: str  # the changed text as it was (whole tokens)
    new: str  # as it is now
    before: tuple[str, ...]  # the anchor: the tokens right before the change (() for a rename)
    after: str  # the token right after the change ("" for a rename)
    at: int  # where the changed text starts in the text after the edit
    rename: bool
    attribute: bool = False  # a renamed attribute (``log.warn``): only attributes are its places
    qualifies: str = ""  # a renamed qualifier (``typing.Pattern``): the ``.Pattern`` its places need


@dataclass(frozen=True)
class Place:
    start: int  # the replaced span in the current text
    end: int
    text: str  # its new text


def pattern_of(before: str, after: str) -> Pattern | None:
    """The pattern of the edit ``before`` -> ``after`` (whole documents), or None when there is
    none: no change, a change too big to be a pattern, or one that is only whitespace."""
    start, old_end, new_end = changed_span(before, after)
    if old_end - start > MAX_CHANGE_CHARS or new_end - start > MAX_CHANGE_CHARS:
        return None
    # Whole tokens: a change inside an identifier takes the identifier.
    while start > 0 and _word(before[start - 1]) and (
        (start < old_end and _word(before[start])) or (start < new_end and _word(after[start]))
        or (start == old_end and old_end < len(before) and _word(before[old_end]))
    ):  # fmt: skip
        start -= 1
    while old_end < len(before) and new_end < len(after) and _word(before[old_end]) and (
        (old_end > start and _word(before[old_end - 1])) or (new_end > start and _word(after[new_end - 1]))
    ):  # fmt: skip
        old_end += 1
        new_end += 1
    # And a change inside an operator takes the operator (``=`` -> ``==``).
    while start > 0 and before[start - 1] in OPERATOR and (
        before[start : start + 1] in OPERATOR or after[start : start + 1] in OPERATOR
    ):  # fmt: skip
        start -= 1
    old, new = before[start:old_end], after[start:new_end]
    if old.strip() == new.strip() or not _complete(old, new) or _in_comment(after, start, old + new):
        return None
    if line_being_written(before, after, start, old_end, new_end):
        return None
    if IDENTIFIER.fullmatch(old) and IDENTIFIER.fullmatch(new):
        # ``typing.Pattern`` -> ``re.Pattern`` swaps a module for one attribute, not every use of it.
        qualifies = re.match(r"\.\s*[A-Za-z_]\w*", before[old_end : old_end + 200])
        return Pattern(
            old, new, (), "", start, rename=True, attribute=before[start - 1 : start] == ".",
            qualifies=re.sub(r"\s", "", qualifies.group()) if qualifies else "",
        )  # fmt: skip
    anchor = [m.group() for m in TOKEN.finditer(before[max(0, start - 200) : start])][-ANCHOR_TOKENS:]
    # The token after the change on its line; "\n" when the change ends its line (``return``
    # -> ``return None`` is no place for `` None`` in ``return value``).
    following = TOKEN.match(before[old_end : old_end + 200].lstrip(" \t")) or re.match(r"\n|$", before[old_end:].lstrip(" \t"))
    if not anchor:
        return None
    return Pattern(old, new, tuple(anchor), following.group() if following else "", start, rename=False)


def places(
    pattern: Pattern, text: str, cursor: int, scope: tuple[int, int] | None = None, budget: Budget | None = None
) -> list[Place]:
    """Where ``pattern`` applies in ``text`` (the document after the edit), nearest the cursor
    first; never the edit's own place, never a place that already reads the new text.  A rename
    applies within ``scope`` ([start, end) in ``text``; None: the whole text, scope.py).  A
    rename looks at most at ``budget``'s steps of matches (``MAX_RENAME_MATCHES``), none on a
    line longer than ``MAX_PLACE_LINE``, and stops with what it found when the budget's clock
    runs out or its request is cancelled."""
    found: list[Place] = []
    budget = budget or Budget(RENAME_MS, MAX_RENAME_MATCHES)
    if pattern.rename:
        guard = r"(?<=\.)" if pattern.attribute else r"(?<![\w.])"  # ``self.count`` is no parameter
        qualified = r"\s*\.\s*".join(map(re.escape, ["", pattern.qualifies[1:]])) if pattern.qualifies else ""
        low, high = scope or (0, len(text))
        prose, at = ProseScan(text, None), low
        regex = re.compile(rf"{guard}{re.escape(pattern.old)}\b(?={qualified}\b)")
        while budget.spend() and (match := regex.search(text, at, high)):
            at = match.end()
            line_end = text.find("\n", at, high)
            line_end = high if line_end < 0 else line_end
            if line_end - text.rfind("\n", 0, match.start()) > MAX_PLACE_LINE:
                at = line_end  # a data literal or minified code: no place, and not read again
            elif not prose.kind_at(match.start()):
                found.append(Place(match.start(), match.end(), pattern.new))
    else:
        low, high = _window(text, pattern.at)
        # The longest anchor that finds a place: "f(a, b" -> "f(c, b" needs both tokens, an
        # operator changed after different names ("a == 1" -> "a is 1", then "b == 1") needs none.
        # The longest anchor first.  With no anchor, only an old text with a name in it
        # (``.copy()`` -> ``[:]``) or a comparison: any ``()`` or ``1`` of the window is no place.  The whole anchor
        # may stand before another token than the edit's (``x is 1`` -> ``x == 1``, ``x is 2``).
        bare = bool(IDENTIFIER.search(pattern.old)) or (
            pattern.old.strip() in COMPARISONS and pattern.after not in ("", "\n")
        )  # ``== None`` -> ``is None``: the operator and its operand are the anchor
        tries = [(pattern.before[len(pattern.before) - size :], True) for size in range(len(pattern.before), -1 if bare else 0, -1)]
        tries += [(pattern.before, False)] if len(pattern.before) == ANCHOR_TOKENS and pattern.old else []
        for anchor, after in tries:
            found = _anchored(pattern, anchor, text, low, high, after)
            if any(not _overlaps_edit(p, pattern) for p in found):
                break
    found = [p for p in found if not _overlaps_edit(p, pattern)]
    found.sort(key=lambda p: (abs(p.start - cursor), p.start))
    return found[:MAX_PLACES]


def _anchored(
    pattern: Pattern, anchor: tuple[str, ...], text: str, low: int, high: int, after_token: bool = True
) -> list[Place]:
    """The places within [low, high) where ``anchor`` then the old text stand (before the token
    that followed the change, with ``after_token``)."""
    parts = [r"\s*".join(re.escape(t) for t in anchor)] if anchor else []
    old = r"\s*".join(re.escape(t) for t in TOKEN.findall(pattern.old))
    # The old text's own spaces go with it (``int | float`` -> ``float`` leaves one space); the
    # quantifiers are possessive, so a long run of spaces is read once, never backtracked.
    lead = pattern.old[:1] in " \t" and bool(old)
    if lead:
        old = r"\s*+" + old
    if old and pattern.old[-1:] in " \t":
        old += r"[ \t]*+"
    head = anchor[0] if anchor else (TOKEN.findall(pattern.old) or [""])[0]
    guard = r"(?<!\w)" if head and _word(head[0]) else ""
    if pattern.after == "\n" and after_token:
        after = r"(?=[ \t]*+(?:\n|$))"
    else:
        after = rf"(?=\s*{re.escape(pattern.after)})" if pattern.after and after_token else ""
    tail = r"(?!\w)" if old and _word(pattern.old.rstrip()[-1:] or " ") else ""
    # An insertion goes right after its anchor (its text carries its own spaces: `` None``).
    skip = "" if lead or not old else r"\s*+"
    regex = re.compile(guard + "".join(f"(?:{p})" for p in parts) + skip + f"({old}){tail}{after}")
    found = []
    for match in regex.finditer(text, low, high):
        start, end = match.start(1), match.end(1)
        if not pattern.old and text.startswith(pattern.new.lstrip(), start):
            continue  # an insertion already there
        found.append(Place(start, end, pattern.new))
    return found


BRACKETS = {"(": ")", "[": "]", "{": "}"}
OPERATOR = "=<>!+-*/%|&^~@:"
COMPARISONS = frozenset({"==", "!=", "is", "is not", "<", "<=", ">", ">=", "in", "not in"})
# A change that ends on one of these is half made: the next keystroke finishes it.
OPEN_ENDS = tuple("([{.,=+-*/%|&^<>:!~@") + ("->",)


def _complete(old: str, new: str) -> bool:
    """Whether ``old`` -> ``new`` is a finished edit rather than code being written (issue 46:
    "the first edit is complete"; the half-typed states of `difill eval --next-edit`):

    * no lines added: new lines are code being written, not a pattern (a decorator added above
      two functions is the rare exception, and was one repeat case against many noisy ones);
    * its brackets and quotes balance as the old text's did (the user is not inside them);
    * it does not end on an operator, a dot, a comma or an opening bracket that the old text
      did not end on (``f(a, b,`` waits for its argument);
    * it does not delete a word alone (the first keystroke of a rename typed over it)."""
    if new.count("\n") > old.count("\n"):
        return False
    if not new and re.fullmatch(r"\w+", old.strip()):
        return False  # a word deleted alone is being retyped (a rename's first keystroke, ``6`` -> ``7``)
    return finished(old, new)


def finished(old: str, new: str) -> bool:
    """Whether ``old`` -> ``new`` is no longer being typed: its brackets and quotes balance as the
    old text's did, and it does not end on what waits for more (``_open``) unless the old text
    did (``is`` -> ``==`` swaps one operator for another)."""
    if _depth(old) != _depth(new) or any(old.count(q) % 2 != new.count(q) % 2 for q in "\"'`"):
        return False
    return not _open(new) or _open(old)


def _open(text: str) -> bool:
    """Whether ``text`` ends on something that waits for what follows: an operator, a dot, a
    comma, an opening bracket."""
    tail = text.rstrip()
    return tail.endswith(OPEN_ENDS) or bool(re.search(r"(?<!\w)(?:is|in|and|or|not)$", tail))


def line_being_written(before: str, after: str, start: int, old_end: int, new_end: int) -> bool:
    """A line the edit cleared (what was on it deleted, to write something else) or whose
    whole text it is (a word typed on a new line): code being written, not an edit to repeat."""
    low, high = after.rfind("\n", 0, start) + 1, after.find("\n", new_end)
    line = after[low : len(after) if high < 0 else high]
    if not line.strip():
        old_high = before.find("\n", old_end)
        return bool(before[low : len(before) if old_high < 0 else old_high].strip())
    return old_end == start and line.strip() == after[start:new_end].strip()


def _depth(text: str) -> tuple[int, ...]:
    """How far ``text`` opens each kind of bracket (negative: closes more than it opens)."""
    return tuple(text.count(o) - text.count(c) for o, c in BRACKETS.items())


def _in_comment(text: str, at: int, changed: str) -> bool:
    """An edit in a comment, or of one, is no pattern: the same words elsewhere are other prose.
    (Strings are kept: a version bumped in ``version=`` and ``download_url=`` is a repeat, and
    on the tuning cases they were 5 repeats against 2 noisy single edits.)"""
    return in_comment(text[text.rfind("\n", 0, at) + 1 : at], None) or "#" in changed or "//" in changed


def _overlaps_edit(place: Place, pattern: Pattern) -> bool:
    return place.start <= pattern.at + len(pattern.new) and pattern.at <= place.end


def _window(text: str, at: int) -> tuple[int, int]:
    low = at
    for _ in range(WINDOW_LINES):
        low = text.rfind("\n", 0, max(0, low - 1)) + 1 if low > 0 else 0
    high = at
    for _ in range(WINDOW_LINES):
        found = text.find("\n", high + 1)
        high = len(text) if found < 0 else found
    return low, high


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"
