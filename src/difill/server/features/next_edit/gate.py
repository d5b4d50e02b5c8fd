"""The precision gate on generalised next edits (issue 63: "below the gate, nothing is shown").

A transformation learned from one example can match far more than the user meant: ``x or y``
rewritten matches every ``or`` of the file.  Each place is weighed on what the example and the
place say, and is shown only when every rule holds:

* **the edit is finished**: the example parses without errors, its brackets and quotes balance,
  and it does not end on an operator or an opening bracket (generalise.py, patterns.finished);
* **the transformation's size**: an example with at most ``MAX_LEAVES`` named leaves (a larger
  one is a rewrite, not an edit to repeat);
* **anchored, or few**: a place is anchored when it shares at least ``LIKENESS`` of the
  example's names (a name of the same kind counts for a name alone: ``DAY_NAMES`` for
  ``MONTH_NAMES``), or when the example has a part that must read the same at every place
  (``cls`` in ``cls._PATTERN``); a loose transformation (every part a hole: ``limit or
  default_limit()``) is shown only where it matches at most ``LOOSE_PLACES`` places (a unique
  place among them);
* **near, or in scope**: a place in the edit's own function or class, or within ``MAX_LINES``
  lines of the cursor (matching.py stops looking farther).

The constants were chosen on the tuning cases only (docs/next_edit.md, "Edits generalised from
one example").
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_LEAVES = 12
LIKENESS = 0.75  # the share of the example's names a place must share to be anchored by them
LOOSE_PLACES = 3
MAX_LINES = 20


@dataclass(frozen=True)
class Features:
    leaves: int  # the example's named leaves
    fixed: bool  # the example has a part that must read the same at every place (``cls``)
    likeness: float  # the share of the example's names that read the same at this place
    places: int  # how many places the transformation matched (bounded)
    lines: int  # the place's distance from the cursor, in lines
    in_scope: bool  # in the edit's function or class
    finished: bool


def shown(f: Features) -> bool:
    if not f.finished or f.leaves > MAX_LEAVES or f.places == 0:
        return False
    if not (f.fixed or f.likeness >= LIKENESS) and f.places > LOOSE_PLACES:
        return False
    return f.in_scope or f.lines <= MAX_LINES
