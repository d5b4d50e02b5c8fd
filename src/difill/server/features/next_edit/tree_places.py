"""Generalised next edits end to end (issue 63): the user's last edit parsed, its example
anti-unified (generalise.py; a statement added or removed: statements.py), its places matched
and weighed by the gate (gate.py).  Runs on the request's worker thread, within a ``Budget``: a
file over ``MAX_PARSE_BYTES`` or an edit on a line over ``MAX_LINE_BYTES`` gets nothing, a
transformation that matches thousands of nodes matches at most ``MAX_CANDIDATES`` of them,
nearest first, and a cancelled request stops between two of them.
"""

from __future__ import annotations

import re
import threading

from tree_sitter import Tree

from difill.server.features.next_edit.gate import MAX_LINES, Features, shown
from difill.server.features.next_edit.generalise import BLOCKS, Transformation, example, leaves
from difill.server.features.next_edit.matching import MAX_LINE_BYTES, matches
from difill.server.features.next_edit.patterns import MAX_PLACES, Place, finished, line_being_written
from difill.server.features.next_edit.statements import statement_matches
from difill.server.trees import byte_edit
from difill.text.spans import changed_span
from difill.text.syntax import parser_for

MAX_PARSE_BYTES = 256 * 1024  # both texts are parsed: a larger file gets no generalised edit


def tree_places(
    before: str, after: str, cursor: int, language: str | None, cancel: threading.Event | None = None
) -> list[Place]:
    """The places of the edit ``before`` -> ``after`` (whole documents) generalised on the tree
    that pass the gate (gate.py), best first."""
    return [place for place, features in weighed(before, after, cursor, language, cancel) if shown(features)][
        :MAX_PLACES
    ]


def weighed(
    before: str, after: str, cursor: int, language: str | None, cancel: threading.Event | None = None
) -> list[tuple[Place, Features]]:
    """Every place of the edit generalised on the tree, with what the gate weighs: in the
    edit's scope first, then the places most like the example, then the nearest ``cursor``
    (characters in ``after``).  (Apart from tree_places so that the gate can be chosen on them.)"""
    parser = parser_for(language)
    old, new = before.encode("utf-8"), after.encode("utf-8")
    if parser is None or language is None or len(new) > MAX_PARSE_BYTES or len(old) > MAX_PARSE_BYTES:
        return []
    start, old_end, new_end = changed_span(old, new)
    line_start = new.rfind(b"\n", 0, start) + 1
    line_end = new.find(b"\n", new_end)
    if (len(new) if line_end < 0 else line_end) - line_start > MAX_LINE_BYTES:
        return []  # a minified or data line: no place, and no scan
    low, old_high, new_high = _chars(old, start), _chars(old, old_end), _chars(new, new_end)
    if line_being_written(before, after, low, old_high, new_high):
        return []  # a line cleared to write another is no statement removed
    if low == new_high and re.fullmatch(r"\w+", before[low:old_high].strip()):
        return []  # a word deleted alone is being retyped (the first keystroke of a rename)
    before_tree, tree = _parsed(language, old, new)
    t = example(before_tree, tree, start, old_end, new_end)
    if t is None:
        return []
    # Finished: the example's subtrees, and the change itself (``f(a, 2,)`` waits for an argument)
    # unless it is a qualifier put before a name (``const.`` in ``const.MONTH_NAMES``) or text in a
    # string (``"x %q: %w"``).
    done = finished(t.before.text.decode("utf-8", "replace"), t.after.text.decode("utf-8", "replace"))
    own = finished(before[low:old_high], after[low:new_high]) or _qualifier(after, new_high) or bool(t.edits)
    if not (done and own) or (not t.edits and _word_being_typed(t, new, start, new_end)):
        return []
    at = len(after[:cursor].encode("utf-8"))
    found = statement_matches(t, tree, new, language, at, cancel) if t.before.type in BLOCKS else None
    if found is None:
        found = [] if t.before.type in BLOCKS else matches(t, tree, new, language, at, cancel, MAX_LINES)
    row = after.count("\n", 0, cursor)
    kept = []
    for match in found:
        likeness = match.same / max(1, t.leaves)
        features = Features(
            leaves=t.leaves, fixed=t.constants > 0, likeness=likeness, places=len(found),
            lines=abs(match.line - row), in_scope=match.in_scope, finished=done,
        )  # fmt: skip
        place = Place(_chars(new, match.start), _chars(new, match.end), match.text.decode("utf-8", "replace"))
        kept.append((not match.in_scope, -round(likeness, 1), features.lines, place, features))
    kept.sort(key=lambda k: k[:3])
    return [(place, features) for *_, place, features in kept]


_cache: dict[str, tuple[bytes, Tree, bytes, Tree]] = {}  # language -> the last texts and trees
_cache_lock = threading.Lock()


def tree_after(before: str, after: str, language: str | None) -> Tree | None:
    """The tree of ``after`` (the document after the user's last edit ``before`` -> ``after``),
    from the same kept pair as the generalised edits: while a rename is typed, its scope
    (scope.py) is read from an incremental re-parse, not a parse of the whole file per ask."""
    if parser_for(language) is None or language is None:
        return None
    return _parsed(language, before.encode("utf-8"), after.encode("utf-8"))[1]


def _parsed(language: str, old: bytes, new: bytes) -> tuple[Tree, Tree]:
    """The trees of the texts before and after the edit.  While an edit is typed its text before
    stays the same: the last pair is kept, the tree before is reused as it is, and the tree after
    is re-parsed incrementally from it, the edit being the one change between them (a 2,000-line
    file takes tens of milliseconds to parse whole on a loaded machine, the edit's re-parse one)."""
    parser = parser_for(language)
    with _cache_lock:
        last = _cache.get(language)
    before_tree = last[1] if last is not None and last[0] == old else parser.parse(old)
    if last is not None and last[0] == old and last[2] == new:
        tree = last[3]
    else:  # re-parsed from the tree before: the change between the two is the user's edit alone
        edited = before_tree.copy()  # the kept trees are never edited: another thread may read them
        change = byte_edit(old, new)
        if change is not None:
            edited.edit(**change)
        tree = parser.parse(new, edited)
    with _cache_lock:
        _cache[language] = (old, before_tree, new, tree)
    return before_tree, tree


def _chars(source: bytes, byte: int) -> int:
    return byte if source.isascii() else len(source[:byte].decode("utf-8", errors="ignore"))


def _word_being_typed(t: Transformation, source: bytes, low: int, high: int) -> bool:
    """A name the edit typed (a name of the tree: no keyword) that stands nowhere else in the
    document but begins a longer one that does (``self._curren`` on its way to
    ``self._current_token``): it is still being typed."""
    typed = {leaf.text for leaf in leaves(t.after) if leaf.end_byte > low and leaf.start_byte < high}
    typed -= {leaf.text for leaf in leaves(t.before)}  # copied, not typed
    elsewhere = source[:low] + b" " + source[high:]
    for name in typed:
        if name not in elsewhere:
            continue  # neither search below can match (a plain find: a 2,000-line file is read once)
        if not name[:1].isalpha() and name[:1] != b"_" or re.search(rb"(?<!\w)" + re.escape(name) + rb"(?!\w)", elsewhere):
            continue
        if re.search(rb"(?<!\w)" + re.escape(name) + rb"\w", elsewhere):
            return True
    return False


def _qualifier(after: str, end: int) -> bool:
    return after[end - 1 : end] == "." and (after[end : end + 1].isalnum() or after[end : end + 1] == "_")
