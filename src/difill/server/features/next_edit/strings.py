"""A string literal's change as a transformation (issue 63: "strings and docstrings when the edit
itself is in one"): its quotes changed with its text kept (three single quotes to three double
quotes), or a little punctuation put in or taken out right after its opening quote or right before its
closing one (``"x %q"`` -> ``"x %q: %w"``).  A changed word or number inside it (a version bumped)
is its content, not its form, and no transformation; so is prose added to a docstring.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from difill.text.characters import common_prefix

DELIMITED = re.compile(rb"(?s)([A-Za-z]*('''|\"\"\"|'|\"|`))(.*)(\2)")
MAX_STRING_EDIT = 12  # text put in or taken out at a string's end: ``: %w``, not a sentence


@dataclass(frozen=True)
class StringEdit:
    """A string's change at one end: its delimiters (``open``/``close`` -> the new ones, the
    content kept), or text right after its opening quote or right before its closing one."""

    open: bytes
    close: bytes
    new_open: bytes
    new_close: bytes
    old_text: bytes = b""  # the text replaced next to a delimiter (empty: an insertion)
    new_text: bytes = b""
    at_end: bool = True  # beside the closing delimiter (else the opening one)

    def apply(self, text: bytes) -> bytes | None:
        parts = DELIMITED.fullmatch(text)
        if parts is None or parts.group(1) != self.open or parts.group(4) != self.close:
            return None
        content = parts.group(3)
        if self.at_end and content.endswith(self.old_text):
            content = content[: len(content) - len(self.old_text)] + self.new_text
        elif not self.at_end and content.startswith(self.old_text):
            content = self.new_text + content[len(self.old_text) :]
        else:
            return None
        return self.new_open + content + self.new_close


def string_edit(old: bytes, new: bytes) -> StringEdit | None:
    """``old`` -> ``new`` (two string literals) as a change at one end, or None."""
    a, b = DELIMITED.fullmatch(old), DELIMITED.fullmatch(new)
    if a is None or b is None or old == new:
        return None
    (open_a, _, text_a, close_a), (open_b, _, text_b, close_b) = a.groups(), b.groups()
    if text_a == text_b:
        return StringEdit(open_a, close_a, open_b, close_b)  # quote style
    if (open_a, close_a) != (open_b, close_b):
        return None
    head = common_prefix(text_a, text_b)
    tail = min(common_prefix(text_a[::-1], text_b[::-1]), min(len(text_a), len(text_b)) - head)
    old_cut, new_cut = text_a[head : len(text_a) - tail], text_b[head : len(text_b) - tail]
    # Only punctuation put in or taken out at one end (``"x %q"`` -> ``"x %q: %w"``): a changed
    # word or number (a version bumped) is the string's content, not its form.
    if (old_cut and new_cut) or not re.search(rb"[^\w.]", old_cut + new_cut) or (head and tail):
        return None
    if b"\n" in old + new or len(old_cut + new_cut) > MAX_STRING_EDIT:
        return None  # prose added to a docstring is being written
    if tail == 0:
        return StringEdit(open_a, close_a, open_b, close_b, old_cut, new_cut, True)
    return StringEdit(open_a, close_a, open_b, close_b, old_cut, new_cut, False)

