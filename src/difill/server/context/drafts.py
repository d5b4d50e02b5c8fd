"""Drafts for a cursor: what followed the same tokens elsewhere, as prompt lookup decoding does.

The tokens are the text's own (identifiers, numbers, single punctuation marks), not the model's:
the finder is torch-free and runs on plain strings.  The longest run of tokens that ends at the
cursor is looked up in each source, and the text after an earlier occurrence is a draft of what
comes next.  A longer match is a better draft, so matches are taken longest first; at one length
the sources keep the caller's order (the current document first, then open documents, then the
workspace), and in the current document the occurrence nearest the cursor comes first.

Work is bounded whatever the input: at most ``MAX_QUERY_TOKENS`` lengths are tried, each one
regex scan per source, over at most ``max_source_chars`` characters of sources in all, and at most
``MAX_MATCHES`` occurrences of one pattern in one source are looked at (the current document is
scanned whole, to find the occurrences nearest the cursor), ``MAX_REQUEST_MATCHES`` in all (and
``MAX_SCANNED_CHARS`` of sources, a length at a time), and a
source is left after ``MAX_STALE_MATCHES`` in a row that give no new draft, and for good when its
longest match gives none.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from difill.text.budget import Budget
from difill.text.languages import LanguageSpec, spec_of

TOKEN = re.compile(r"\w+|[^\w\s]")
MAX_QUERY_TOKENS = 8  # the longest match tried; prompt-lookup implementations use a few tokens
QUERY_WINDOW = 400  # characters before the cursor that the query tokens come from
MAX_MATCHES = 512  # occurrences of one pattern looked at in one source
MIN_WORD_MATCH = 3  # a one-token match must be an identifier at least this long: "(" says nothing
# Open tabs of the same line 2,000 times: every match of every length in every source gave a
# draft already seen, 30,000 matches a request (issue 62 row 10: p50 141 ms against 10 ms).  A
# source whose matches stop giving new drafts is left at that length, one whose best matches
# (the first of them, or all) repeat earlier drafts is left at every length, and all sources
# share one budget.
MAX_STALE_MATCHES = 64  # matches in a row of one source, at one length, that give nothing new
MAX_REQUEST_MATCHES = 4096
MAX_SCANNED_CHARS = 4 * 1024 * 1024  # of sources, each length scanned counted: 8 tabs of 64 KB at 8 lengths
FIND_MS = 100.0
# The document's own text read for drafts: the part before the cursor nearest it.  Its matches are
# all enumerated (the nearest are wanted first), so an 8 MB document took the whole FIND_MS under
# load and lost its drafts (test_malformed_jsonrpc's huge document).
MAX_CURRENT_CHARS = 1024 * 1024


@dataclass(frozen=True)
class Draft:
    text: str  # LF text that continues the cursor
    source: str  # "current" | "open" | a workspace path: where the continuation was found
    # Tokens before the cursor that the occurrence matched (1 to MAX_QUERY_TOKENS): a longer match
    # is likelier the same code again.  Not part of a draft's identity.
    matched: int = field(default=0, compare=False)
    # "lookup": found by ``find_drafts``; "import": a typed import line completed, "new-import": a
    # new line among the imports, with names the document uses and a workspace module defines
    # (imports.py).
    kind: str = field(default="lookup", compare=False)
    # A "symbol" the workspace's evidence cannot tell from the first one (symbols.Ranking): the
    # model's score may put it first (suggestion_path.ranked_by_model).
    undecided: bool = field(default=False, compare=False)


def find_drafts(
    before_cursor: str,
    sources: Sequence[tuple[str, str]],
    max_drafts: int = 3,
    max_chars: int = 256,
    max_source_chars: int = 8_000_000,
    language: str | None = None,
    cursor_in_prose: bool | None = None,
) -> list[Draft]:
    """Up to ``max_drafts`` distinct continuations of ``before_cursor``, best first.

    ``sources`` are (source, text) pairs searched after the current document's own text before
    the cursor (source "current"), where the occurrence at the cursor itself does not count.
    Each draft is at most ``max_chars`` characters.  When the cursor is in code (not in a
    comment or string of ``language``), a draft that starts inside a comment or a string of its
    source is passed over: prose that happens to match is not code.  ``cursor_in_prose`` says
    where the cursor is (the syntax tree knows a docstring's blank line: text/shape.py); None
    judges by the cursor's line alone.
    """
    if max_drafts <= 0:
        return []
    query = _query_at(before_cursor)
    if query is None:
        return []
    nearest = before_cursor[-MAX_CURRENT_CHARS:]
    searched = _within_budget([("current", nearest), *sources], max_source_chars)
    longest = [_longest_match(query, text, source == "current") for source, text in searched]
    spec = spec_of(language)
    if cursor_in_prose is None:
        cursor_in_prose = in_prose(before_cursor[before_cursor.rfind("\n") + 1 :], spec)
    found = _Found(max_drafts, max_chars, spec, code_only=not cursor_in_prose)
    for count in range(max(longest, default=0), query.min_count - 1, -1):
        for i, ((source, text), source_longest) in enumerate(zip(searched, longest, strict=True)):
            if source_longest < count:
                continue
            before = len(found.drafts)
            if not found.read(query.patterns[count], source, text, count, source_longest):
                return found.drafts
            if count == source_longest and len(found.drafts) == before and source != "current":
                longest[i] = 0  # its best matches repeat earlier drafts: so will its shorter ones
    return found.drafts


@dataclass(frozen=True)
class _Query:
    """The tokens that end at the cursor, and a pattern for each run of them a draft may follow."""

    tokens: list[str]
    min_count: int  # the shortest run that may match: one long identifier, else two tokens
    patterns: dict[int, re.Pattern[str]]  # run length (tokens from the cursor back) -> its pattern


def _query_at(before_cursor: str) -> _Query | None:
    """The query of a cursor; None when no token precedes it."""
    window = before_cursor[-QUERY_WINDOW:]
    tokens = list(TOKEN.finditer(window))[-MAX_QUERY_TOKENS:]
    if not tokens:
        return None
    trailing = window[tokens[-1].end() :]  # whitespace between the last token and the cursor
    query = [m.group() for m in tokens]
    min_count = 1 if _is_word(query[-1]) and len(query[-1]) >= MIN_WORD_MATCH else 2
    patterns = {
        count: re.compile(_pattern(query[-count:], trailing)) for count in range(min_count, len(query) + 1)
    }
    return _Query(query, min_count, patterns)


class _Found:
    """One request's drafts, and the budgets all its sources share."""

    def __init__(self, max_drafts: int, max_chars: int, spec: LanguageSpec | None, code_only: bool) -> None:
        self.max_drafts, self.max_chars, self.spec, self.code_only = max_drafts, max_chars, spec, code_only
        self.drafts: list[Draft] = []
        self.seen: set[str] = set()
        self.matches = Budget(FIND_MS, MAX_REQUEST_MATCHES)
        self.scanned = Budget(FIND_MS, MAX_SCANNED_CHARS)

    def read(self, pattern: re.Pattern[str], source: str, text: str, count: int, source_longest: int) -> bool:
        """Add the drafts that follow ``pattern``'s matches (``count`` tokens) in one source; False
        when the request is over: a budget is spent, or ``max_drafts`` are found."""
        # A source larger than what the budget has left is read over its end only: for the
        # document itself, the text nearest the cursor (an 8 MB file still gets its drafts).
        room = max(0, self.scanned.steps - self.scanned.spent)
        text = text[len(text) - room :] if len(text) > room else text
        if not text or not self.scanned.spend(len(text)):
            return False
        current = source == "current"
        prose, stale = ProseScan(text, self.spec), 0
        for end in _match_ends(pattern, text, exclude_end=len(text) if current else None):
            if not self.matches.spend():
                return False
            stale += 1
            if stale > MAX_STALE_MATCHES:
                break  # the rest of this source repeats what was read
            continuation = text[end : end + self.max_chars]
            if continuation in self.seen and stale == 1 and count == source_longest and not current:
                break  # its first best match repeats an earlier draft: a copy of code read
            if not continuation.strip() or continuation in self.seen:
                continue
            if self.code_only and prose.kind_at(end):
                continue
            stale = 0
            self.seen.add(continuation)
            self.drafts.append(Draft(continuation, source, count))
            if len(self.drafts) >= self.max_drafts:
                return False
        return True


def in_prose(line: str, spec: LanguageSpec | None) -> bool:
    """Whether the end of ``line`` (the text of a line up to a point) is inside a string or a line
    comment of the language (``spec``; a ``#`` or ``//`` comment and both quotes when unknown).
    One line only: a block comment or a docstring that began on an earlier line is not seen."""
    return ProseScan(line, spec).kind_at(len(line)) != ""


def in_comment(line: str, spec: LanguageSpec | None) -> bool:
    """Whether the end of ``line`` is inside a line comment (not a string), as ``in_prose`` reads it."""
    return ProseScan(line, spec).kind_at(len(line)) == "comment"


class ProseScan:
    """Where strings and line comments open and close along a text, as ``in_prose`` reads a
    line: each line is scanned once, when first asked about, and any offset in it is then a
    bisect.  Asking at every match of a 90 KB one-line literal read the line's prefix once per
    match: quadratic, minutes (issue 62 row 7)."""

    def __init__(self, text: str, spec: LanguageSpec | None) -> None:
        self.text = text
        comments = spec.line_comment if spec is not None else ("#", "//")
        quotes = spec.quotes + ("`" if spec.backquote_strings else "") if spec is not None else "\"'`"
        if spec is not None and spec.lifetimes:
            quotes = quotes.replace("'", "")  # ``'a`` is a lifetime, not an open quote
        stops = [re.escape(m) for m in sorted(comments, key=len, reverse=True) if m]
        stops += [f"[{re.escape(quotes)}]"] if quotes else []
        self.code_stop = re.compile("|".join(stops)) if stops else None
        self.quotes = quotes
        self.line = (-1, -1)  # [start, end) of the line scanned last
        self.ends: list[int] = []  # the shortest prefix (an end offset) each state holds from
        self.kinds: list[str] = []

    def kind_at(self, end: int) -> str:
        """The kind of text at ``end`` (``text[:end]`` read): "comment", "string" or "" (code)."""
        low, high = self.line
        if not low <= end <= high:
            low = self.text.rfind("\n", 0, end) + 1
            high = self.text.find("\n", end)
            self._scan(low, len(self.text) if high < 0 else high)
        k = bisect.bisect_right(self.ends, end) - 1
        return self.kinds[k] if k >= 0 else ""

    def _scan(self, low: int, high: int) -> None:
        self.line, self.ends, self.kinds = (low, high), [], []
        text, at = self.text, low
        while at < high and self.code_stop is not None:
            stop = self.code_stop.search(text, at, high)
            if stop is None:
                return
            if stop.group() not in self.quotes:
                self.ends.append(stop.end())
                self.kinds.append("comment")
                return
            quote, at = stop.group(), stop.end()
            self.ends.append(at)
            self.kinds.append("string")
            close = re.compile(rf"\\.|{re.escape(quote)}", re.S)
            while True:
                found = close.search(text, at, high)
                if found is None:
                    return  # open to the line's end
                at = found.end()
                if found.group() == quote:
                    self.ends.append(at)
                    self.kinds.append("")
                    break


def _longest_match(query: _Query, text: str, current: bool) -> int:
    """The most query tokens (from the cursor back) that occur together in ``text``; 0 for none.

    A source lacking one of the tokens cannot match past it (a substring test, fast); the rest is a
    binary search, as a run of k tokens that matches contains a matching run of k - 1.  The
    current document holds the query itself at its end: a match must also occur earlier, which a
    search that skips the end's own occurrence tests.
    """
    upper = 0
    for token in reversed(query.tokens):
        if token not in text:
            break
        upper += 1
    low, high = (
        query.min_count - 1,
        upper,
    )  # invariant: low matches (or is below min_count), high + 1 does not
    while low < high:
        middle = (low + high + 1) // 2
        if _search(query.patterns[middle], text, current):
            low = middle
        else:
            high = middle - 1
    return low if low >= query.min_count else 0


def _search(pattern: re.Pattern[str], text: str, current: bool) -> bool:
    """Whether ``pattern`` matches at a word start; in the current document, before its end."""
    starting = (m.end() for m in pattern.finditer(text) if _starts_word(text, m.start()))
    return any(end != len(text) or not current for end in itertools.islice(starting, 2))


def _within_budget(sources: Sequence[tuple[str, str]], budget: int) -> list[tuple[str, str]]:
    """The sources in order until their sizes add up to ``budget``; a larger one is cut to fit."""
    out = []
    for source, text in sources:
        if budget <= 0:
            break
        out.append((source, text[:budget]))
        budget -= len(text)
    return out


def _pattern(query: list[str], trailing: str) -> str:
    """A regex for the query tokens with any whitespace between them, then the cursor's own.

    Two identifiers had whitespace between them (else they would be one token); the last one may
    be a word still being typed (no boundary after it).  That the first one starts a word is
    tested on each match (``_starts_word``): a lookbehind in the pattern would make the scan
    several times slower (no literal-prefix search).
    """
    parts = []
    for i, token in enumerate(query):
        if i:
            parts.append(r"\s+" if _is_word(query[i - 1]) and _is_word(token) else r"\s*")
        parts.append(re.escape(token))
    if trailing.endswith("\n"):  # at column 0 of a new line: the draft keeps its indentation
        parts.append(r"[ \t]*\n(?:[ \t]*\n)*")
    elif "\n" in trailing:  # a line typed to its end: the source must end its line there too
        parts.append(r"[ \t]*\n\s*")
    elif trailing:  # the cursor stands after spaces: the draft starts at the next text
        parts.append(r"[ \t]*")
    return "".join(parts)


def _is_word(token: str) -> bool:
    return token[0].isalnum() or token[0] == "_"


def _match_ends(
    pattern: re.Pattern[str], text: str, exclude_end: int | None, limit: int = MAX_MATCHES
) -> Iterable[int]:
    """Where the matches that start a word end: the first ``limit`` ones, as they are read, or
    in the current document (``exclude_end`` set) the last ones, nearest the cursor first."""
    starting = (m for m in pattern.finditer(text) if _starts_word(text, m.start()))
    if exclude_end is None:
        return (m.end() for m in itertools.islice(starting, limit))
    last = collections.deque((m.end() for m in starting), maxlen=limit + 1)
    return [end for end in reversed(last) if end != exclude_end][:limit]


def _starts_word(text: str, start: int) -> bool:
    """A match starts at a token start: not in the middle of an identifier."""
    return start == 0 or not (_is_word(text[start]) and _is_word(text[start - 1]))
