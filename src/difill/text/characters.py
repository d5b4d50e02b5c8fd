"""Facts about characters that every text path shares: line endings, lone surrogates, and the
characters a suggestion or an edit must never carry into an editor.

* A line ends at ``\\r\\n``, ``\\r`` or ``\\n`` and nowhere else, as LSP counts lines (not at the
  form feed, NEL or U+2028 that ``str.splitlines`` also splits on).  A document whose lines end in
  a lone ``\\r`` (classic Mac) is as much a document of lines as a CRLF one: the text pipeline
  turns every ending into ``\\n`` for the model and the filters, and gives the suggestion the
  document's own ending at the end.
* A lone surrogate (half a UTF-16 pair; JSON can carry ``"\\ud800"``) is not text: UTF-8,
  tree-sitter and the tokenizer refuse it.
* Unsafe characters: C0 and C1 control characters (but tab and the line endings), DEL, the
  bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C: what a "Trojan
  Source" attack hides code behind), zero-width characters (U+200B-U+200D, U+2060, U+FEFF), the
  Unicode line and paragraph separators (U+2028, U+2029: line ends to some tools, not to LSP),
  and U+FFFD (a model wrote half a UTF-8 sequence, or a lone surrogate was replaced).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

LINE_ENDING = re.compile(r"\r\n|\r|\n")
LF, CRLF, CR = "\n", "\r\n", "\r"
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
UNSAFE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0 but \t \n \r, DEL, C1 (U+0085 NEL, U+009B CSI, ...)
    "\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff"  # bidi and zero-width
    "\u2028\u2029\ufffd]"  # line/paragraph separators; the replacement character
)


def to_lf(text: str) -> str:
    """``text`` with every line ending (CRLF, a lone CR) as ``\\n``."""
    return LINE_ENDING.sub(LF, text) if "\r" in text else text


def line_ending_of(text: str) -> str:
    """The line ending most of ``text``'s lines end with (``\\n`` when it has none)."""
    if "\r" not in text:
        return LF
    counts = Counter(m.group() for m in LINE_ENDING.finditer(text))
    return max((LF, CRLF, CR), key=lambda ending: counts[ending])  # ties: LF first


def with_line_ending(text: str, ending: str) -> str:
    """LF ``text`` with ``ending`` for each line ending."""
    return text if ending == LF else text.replace(LF, ending)


def line_start(text: str, offset: int) -> int:
    """Offset of the first character of the line that holds ``offset``."""
    lf = text.rfind("\n", 0, offset)
    cr = text.rfind("\r", lf + 1, offset)  # only after the last LF: no scan of a whole LF document
    return max(lf, cr) + 1


def without_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (the same width in UTF-16 and UTF-32)."""
    return text if text.isascii() else LONE_SURROGATE.sub("\ufffd", text)


def has_lone_surrogate(text: str) -> bool:
    return not text.isascii() and LONE_SURROGATE.search(text) is not None


def without_unsafe(text: str) -> str:
    """``text`` with every unsafe character removed (the rest kept as it is)."""
    return UNSAFE.sub("", text)


def first_unsafe(text: str) -> int | None:
    """Index of the first unsafe character in ``text`` (see the module's docstring), or None."""
    found = UNSAFE.search(text)
    return found.start() if found else None


def common_prefix(a: str | bytes | Sequence[int], b: str | bytes | Sequence[int]) -> int:
    """Length of the common prefix of two strings (or bytes, or token id lists: what a prefix
    cache holding ``b`` can keep), by bisection on slice equality (memcmp, not a Python loop: a
    keystroke in a 20 MB document must stay cheap)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low
