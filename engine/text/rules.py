"""Brackets and overlaps: where a middle must end so that it joins the text after it.

The filters (filters.py) use these, and so does a backend that fills several holes one after
another (the next hole's prefix must hold the previous middle as it will be shown).
"""

from __future__ import annotations

from collections.abc import Sequence

OPENERS = {")": "(", "]": "[", "}": "{"}
CLOSERS = set(OPENERS)


def unmatched_closers(text: str) -> list[str]:
    """Closing brackets in ``text`` that no opening bracket inside ``text`` matches, in order."""
    stack: list[str] = []
    unmatched: list[str] = []
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in CLOSERS:
            if stack and stack[-1] == OPENERS[ch]:
                stack.pop()
            else:
                unmatched.append(ch)
    return unmatched


def unmatched_openers(text: str) -> list[str]:
    """Opening brackets in ``text`` still open at its end, in order."""
    stack: list[str] = []
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in CLOSERS and stack and stack[-1] == OPENERS[ch]:
            stack.pop()
    return stack


def trim_suffix_overlap(middle: str, suffix: str) -> str:
    """Drop the end of ``middle`` that the suffix already has.

    * closing brackets: when the middle ends with closers the suffix starts with, and those closers
      match nothing inside the middle, they are the suffix's (``foo(x))`` + ``)`` -> ``foo(x)``);
    * lines: when the middle's last lines repeat the suffix's first lines, they are dropped.
    """
    head = suffix.lstrip(" \t")
    closers = len(head) - len(head.lstrip("".join(CLOSERS)))
    body = middle.rstrip(" \t")
    for k in range(min(closers, len(body)), 0, -1):
        if body.endswith(head[:k]) and len(unmatched_closers(body[:-k])) == len(unmatched_closers(body)) - k:
            middle = body[:-k]
            break
    middle_lines = middle.rstrip("\n").split("\n")
    suffix_lines = [ln.strip() for ln in suffix.split("\n") if ln.strip()][:4]
    for count in range(min(len(middle_lines) - 1, len(suffix_lines)), 0, -1):
        tail = [ln.strip() for ln in middle_lines[-count:]]
        if all(tail) and tail == suffix_lines[:count]:
            middle = "\n".join(middle_lines[:-count]) + "\n"
            break
    return middle


def trim_to_hole(middle: str, after: str) -> str:
    """A hole's middle, cut where the text after it begins (no duplicated closers)."""
    return trim_suffix_overlap(middle, after) if middle.strip() else ""


def with_middles(text: str, marker: str, middles: Sequence[str]) -> str:
    """``text`` with its markers replaced by ``middles``, in order."""
    parts = text.split(marker)
    return parts[0] + "".join(m + p for m, p in zip(middles, parts[1:], strict=True))
