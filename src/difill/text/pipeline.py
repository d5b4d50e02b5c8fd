"""From a model's middles to the text an editor shows: the one pipeline every suggestion passes.

    candidates (LF, as the model wrote them)
      -> filters (filters.py, for the cursor's FillContext)
      -> rank: complete middles, then fewest syntax errors around the fill, then model score
      -> distinct, non-empty
      -> the document's line endings

The language server, ``difill fill``, ``difill eval`` and ``difill bench`` all call these
functions, so what is scored is what is shown.  Pure text and tree-sitter: no torch, no LSP.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from difill.text.context import FillContext, build_context
from difill.text.filters import (
    HOLE_PIPELINE,
    PIPELINE,
    REWRITE_PIPELINE,
    apply_filters,
    keep_line_endings,
)
from difill.text.syntax import count_errors, parser_for, syntax_errors

PARSE_WINDOW_CHARS = 2000  # context around a fill that the parser sees when ranking candidates
# Candidates one answer may rank: each is filtered and parsed on the server's event loop, so a
# remote that sends 40,000 of them must not freeze it (engine/backends/answers.py refuses more
# from a remote; this holds for every backend).  The local engine makes at most a few.
MAX_CANDIDATES = 16


class Middle(Protocol):
    """What the pipeline reads of a model's middle.  engine/api.py ``Candidate`` is one; text/ sits
    below the engine, so it names the fields it reads rather than importing the engine's type."""

    @property
    def text(self) -> str: ...

    @property
    def complete(self) -> bool: ...  # the model ended the middle before the hole ran out

    @property
    def score(self) -> float: ...  # mean log-prob of the middle's tokens


def shown_texts(candidates: Sequence[Middle], ctx: FillContext, invoked: bool = True) -> list[str]:
    """The candidates as the editor shows them: filtered, best first, distinct, non-empty.
    Only the first ``MAX_CANDIDATES`` are looked at.  Ghost text while typing (not ``invoked``)
    also stops where a blank line begins (``to_blank_line``)."""
    return [text for text, _ in shown_candidates(candidates, ctx, invoked)]


def shown_candidates(
    candidates: Sequence[Middle], ctx: FillContext, invoked: bool = True
) -> list[tuple[str, Middle]]:
    """``shown_texts`` with the middle each text came from (the show gate reads where a text
    came from and how sure the model was of it: server/show_gate.py)."""
    filtered = [(apply_filters(c.text, ctx, PIPELINE), c) for c in candidates[:MAX_CANDIDATES]]
    if not invoked:
        filtered = [(to_blank_line(text), c) for text, c in filtered]
    kept = [(text, c) for text, c in filtered if text]
    if len(kept) > 1:  # typing asks for one candidate: no parse to rank it against nothing
        kept.sort(key=lambda tc: (not tc[1].complete, errors_around(ctx, tc[0]) or 0, -tc[1].score))
    shown: dict[str, Middle] = {}
    for text, c in kept:
        shown.setdefault(keep_line_endings(text, ctx), c)
    return list(shown.items())


def to_blank_line(text: str) -> str:
    """``text`` up to its first blank line after a line with code: a suggestion that runs on past
    a blank line is the next paragraph (a copy of the next class, issue 52), which a typist did
    not ask for.  Asked for explicitly, the whole text is shown."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if i > 0 and not line.strip() and any(earlier.strip() for earlier in lines[:i]):
            return "\n".join(lines[:i])
    return text


def shown_rewrite(text: str, ctx: FillContext) -> str:
    """A rewritten selection as it replaces the old one ("" when nothing usable is left)."""
    return keep_line_endings(apply_filters(text, ctx, REWRITE_PIPELINE), ctx)


def shown_middles(
    text: str, marker: str, middles: Sequence[str], language: str | None, context_tokens: int, max_tokens: int
) -> list[str]:
    """Each ``marker``'s middle in ``text``, filtered for where it sits (earlier holes filled).

    A hole in the middle of a line gets one line; a hole on its own line gets the lines its scope
    allows.  Raises ValueError when the counts of markers and middles differ.
    """
    parts = text.split(marker)
    if len(middles) != len(parts) - 1:
        raise ValueError(f"the model filled {len(middles)} holes of {len(parts) - 1}")
    parser = parser_for(language)
    filled, shown = parts[0], []
    for i, middle in enumerate(middles):
        around = filled + "".join(parts[i + 1 :])
        tree = parser.parse(around.encode("utf-8")) if parser is not None else None
        ctx = build_context(around, len(filled), language, context_tokens, max_tokens, tree)
        shown.append(keep_line_endings(apply_filters(middle, ctx, HOLE_PIPELINE), ctx))
        filled += shown[-1] + parts[i + 1]
    return shown


def errors_around(ctx: FillContext, text: str) -> int | None:
    """Syntax errors in the code around a fill of ``text`` (LF); None without a grammar."""
    if ctx.language is None:
        return None
    return _window_errors(ctx.prefix, len(ctx.prefix), text, ctx.suffix, 0, ctx.language)


def errors_with_replacement(text: str, start: int, end: int, new: str, language: str | None) -> int | None:
    """Syntax errors in the code around ``text[start:end]`` replaced by ``new``, read in the same
    window as ``errors_around`` (a next edit's check: one small parse, however long the document);
    None without a grammar.  Compare with ``new = text[start:end]`` for the count before."""
    if language is None:
        return None
    return _window_errors(text, start, new, text, end, language)


def errors_unless_clean(
    text: str, start: int, end: int, first: str, second: str, language: str | None
) -> tuple[int | None, int | None]:
    """``errors_with_replacement`` of ``first`` and of ``second`` at ``text[start:end]``, the second
    (None) not parsed when the first has no error or no grammar; when it is, it is re-parsed from
    the first's tree (the two windows differ in the middle alone, so tree-sitter re-reads little
    more than it: a next edit's parse check costs one window's parse, not two)."""
    parser = parser_for(language)
    if parser is None:
        return None, None
    head, tail = _window(text, start, text, end)
    one = (head + first + tail).encode("utf-8")
    tree = parser.parse(one)
    errors = count_errors(tree.root_node)
    if not errors:
        return errors, None
    at, old_end, new_end = (len(head.encode("utf-8")) + len(m.encode("utf-8")) for m in ("", first, second))
    two = (head + second + tail).encode("utf-8")
    tree.edit(
        start_byte=at, old_end_byte=old_end, new_end_byte=new_end,
        start_point=_point(one, at), old_end_point=_point(one, old_end), new_end_point=_point(two, new_end),
    )  # fmt: skip
    return errors, count_errors(parser.parse(two, tree).root_node)


def _point(source: bytes, byte: int) -> tuple[int, int]:
    return source.count(b"\n", 0, byte), byte - (source.rfind(b"\n", 0, byte) + 1)


def _window(before: str, start: int, after: str, end: int) -> tuple[str, str]:
    """The head and tail ``_window_errors`` reads around a middle."""
    low = max(0, start - PARSE_WINDOW_CHARS)
    head = before[low:start]
    cut = head.find("\n")
    if low > 0 and cut >= 0:
        head = head[cut + 1 :]
    return head, after[end : end + PARSE_WINDOW_CHARS]


def _window_errors(before: str, start: int, middle: str, after: str, end: int, language: str) -> int | None:
    """The parse of ``before[:start] + middle + after[end:]``, at most PARSE_WINDOW_CHARS of each
    side (the head cut at a line start so that it begins with whole code)."""
    low = max(0, start - PARSE_WINDOW_CHARS)
    head = before[low:start]
    cut = head.find("\n")
    if low > 0 and cut >= 0:
        head = head[cut + 1 :]
    return syntax_errors(head + middle + after[end : end + PARSE_WINDOW_CHARS], language)


def distinct(texts: Iterable[str]) -> list[str]:
    """The non-empty texts, each once, in their order."""
    return [text for text in dict.fromkeys(texts) if text]
