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

from difill.server.context.drafts import in_prose
from difill.server.features.edits.proposals import changed_span

TOKEN = re.compile(r"\w+|[^\w\s]")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
WINDOW_LINES = 30  # a pattern that is not a rename applies within this many lines of the edit
ANCHOR_TOKENS = 2  # tokens before the change that must stand before it elsewhere too
MAX_CHANGE_CHARS = 400  # a longer change (a paste, a reformat) is not a pattern
MAX_PLACES = 32


@dataclass(frozen=True)
class Pattern:
    old: str  # the changed text as it was (whole tokens)
    new: str  # as it is now
    before: tuple[str, ...]  # the anchor: the tokens right before the change (() for a rename)
    after: str  # the token right after the change ("" for a rename)
    at: int  # where the changed text starts in the text after the edit
    rename: bool
    attribute: bool = False  # a renamed attribute (``log.warn``): only attributes are its places


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
    old, new = before[start:old_end], after[start:new_end]
    if old.strip() == new.strip() or (not old and _new_code(new)):
        return None
    if IDENTIFIER.fullmatch(old) and IDENTIFIER.fullmatch(new):
        return Pattern(old, new, (), "", start, rename=True, attribute=before[start - 1 : start] == ".")
    anchor = [m.group() for m in TOKEN.finditer(before[max(0, start - 200) : start])][-ANCHOR_TOKENS:]
    following = TOKEN.match(before[old_end : old_end + 200].lstrip(" \t"))
    if not anchor:
        return None
    return Pattern(old, new, tuple(anchor), following.group() if following else "", start, rename=False)


def places(pattern: Pattern, text: str, cursor: int) -> list[Place]:
    """Where ``pattern`` applies in ``text`` (the document after the edit), nearest the cursor
    first; never the edit's own place, never a place that already reads the new text."""
    found: list[Place] = []
    if pattern.rename:
        guard = r"(?<=\.)" if pattern.attribute else r"(?<![\w.])"  # ``self.count`` is no parameter
        for match in re.finditer(rf"{guard}{re.escape(pattern.old)}\b", text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            if in_prose(text[line_start : match.start()], None):
                continue
            found.append(Place(match.start(), match.end(), pattern.new))
    else:
        low, high = _window(text, pattern.at)
        # The longest anchor that finds a place: "f(a, b" -> "f(c, b" needs both tokens, an
        # operator changed after different names ("a == 1" -> "a is 1", then "b == 1") needs none.
        for size in range(len(pattern.before), -1 if pattern.old.strip() else 0, -1):
            found = _anchored(pattern, pattern.before[len(pattern.before) - size :], text, low, high)
            if any(not _overlaps_edit(p, pattern) for p in found):
                break
    found = [p for p in found if not _overlaps_edit(p, pattern)]
    found.sort(key=lambda p: (abs(p.start - cursor), p.start))
    return found[:MAX_PLACES]


def _anchored(pattern: Pattern, anchor: tuple[str, ...], text: str, low: int, high: int) -> list[Place]:
    """The places within [low, high) where ``anchor`` then the old text stand, before the token
    that followed the change."""
    parts = [r"\s*".join(re.escape(t) for t in anchor)] if anchor else []
    old = r"\s*".join(re.escape(t) for t in TOKEN.findall(pattern.old))
    head = anchor[0] if anchor else (TOKEN.findall(pattern.old) or [""])[0]
    guard = r"(?<!\w)" if head and _word(head[0]) else ""
    after = rf"(?=\s*{re.escape(pattern.after)})" if pattern.after else ""
    tail = r"(?!\w)" if old and _word(pattern.old.rstrip()[-1:] or " ") else ""
    regex = re.compile(guard + "".join(f"(?:{p})" for p in parts) + r"\s*" + f"({old}){tail}{after}")
    found = []
    for match in regex.finditer(text, low, high):
        start, end = match.start(1), match.end(1)
        if not pattern.old and text.startswith(pattern.new.lstrip(), start):
            continue  # an insertion already there
        found.append(Place(start, end, pattern.new))
    return found


BRACKETS = {"(": ")", "[": "]", "{": "}"}


def _new_code(inserted: str) -> bool:
    """An insertion that is code being written, not an edit to repeat: its brackets do not
    balance (the user is inside it).  Repeated elsewhere it is noise: ``values)`` followed by a
    new ``return sum((v - m`` is no pattern.  Whole lines inserted may be one (a decorator, a
    guard): ruling out every insertion with a line break cost one repeat case of
    ``difill eval --next-edit`` and halved the noise on "none" (docs/next_edit.md)."""
    depth: list[str] = []
    for char in inserted:
        if char in BRACKETS:
            depth.append(BRACKETS[char])
        elif char in BRACKETS.values() and (not depth or depth.pop() != char):
            return True
    return bool(depth)


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
