"""Brackets and overlaps: where a middle must end so that it joins the text after it.

The filters (filters.py) use these, and so does a backend that fills several holes one after
another (the next hole's prefix must hold the previous middle as it will be shown).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from difill.text.languages import spec_of

OPENERS = {")": "(", "]": "[", "}": "{"}
CLOSERS = set(OPENERS)


def code_only(text: str, language: str | None) -> str:
    """``text`` with its one-line strings and line comments blanked out, so that a bracket in
    ``"("`` or ``// )`` is not counted.  The language says what a quote is: a Rust lifetime
    ``'a`` is none, a Go or JavaScript backquote is one; unknown languages use ``"`` and ``'``."""
    spec = spec_of(language)
    quotes = "\"'" if spec is None else spec.quotes + ("`" if spec.backquote_strings else "")
    comments = ("#",) if spec is None else spec.line_comment
    text = re.sub(r"\\.", "", text)
    if spec is not None and spec.lifetimes:
        text = re.sub(r"'(?:\w+)(?!')", "", text)
    strings = re.compile("|".join(f"{re.escape(q)}[^{re.escape(q)}\n]*{re.escape(q)}" for q in quotes))
    lines = []
    for line in strings.sub('""', text).split("\n"):
        cut = min((i for i in (line.find(c) for c in comments) if i >= 0), default=len(line))
        lines.append(line[:cut])
    return "\n".join(lines)


def closers_fit(closers: Sequence[str], stack: Sequence[str]) -> bool:
    """Do ``closers``, in order, close the top of ``stack`` (open brackets, innermost last)?
    Openers beyond the stack (outside the text scanned) are assumed to fit."""
    depth = len(stack)
    for ch in closers:
        depth -= 1
        if depth >= 0 and stack[depth] != OPENERS[ch]:
            return False
    return True


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
    suffix_lines = [line_key(ln) for ln in suffix.split("\n") if ln.strip()][:4]
    for count in range(min(len(middle_lines) - 1, len(suffix_lines)), 0, -1):
        tail = [line_key(ln) for ln in middle_lines[-count:]]
        if all(tail) and tail == suffix_lines[:count]:
            middle = "\n".join(middle_lines[:-count]) + "\n"
            break
    return middle


def line_key(line: str) -> str:
    """A line as compared with the suffix's: its text, and for a line of only closers its
    indentation too (a ``}`` closing an inner block is not the outer ``}`` after it)."""
    stripped = line.strip()
    closer_only = bool(stripped) and (
        set(stripped) <= set(")]};,") or stripped in ("end", "fi", "done", "esac")
    )
    return line.rstrip() if closer_only else stripped


def trim_to_hole(middle: str, after: str) -> str:
    """A hole's middle, cut where the text after it begins (no duplicated closers)."""
    return trim_suffix_overlap(middle, after) if middle.strip() else ""


def fill_each_hole(text: str, marker: str, fill: Callable[[str, str], str]) -> tuple[list[str], str]:
    """(middles, filled text): one ``fill(before, after)`` per hole, left to right, for a model that
    takes one hole at a time.  Later holes' markers are left out of the text after a hole, and the
    next hole's text before it holds this middle cut where the text after it begins."""
    parts = text.split(marker)
    done, middles = parts[0], []
    for i in range(1, len(parts)):
        middle = fill(done, "".join(parts[i:]))
        middles.append(middle)
        done += trim_to_hole(middle, parts[i]) + parts[i]
    return middles, with_middles(text, marker, middles)


def with_middles(text: str, marker: str, middles: Sequence[str]) -> str:
    """``text`` with its markers replaced by ``middles``, in order."""
    parts = text.split(marker)
    return parts[0] + "".join(m + p for m, p in zip(middles, parts[1:], strict=True))
