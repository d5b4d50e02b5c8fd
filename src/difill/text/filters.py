"""The rules that turn a model's middle into the text an editor shows, one small filter per rule.

A middle must join the text after it (no duplicated closers or lines), stay in the cursor's
scope, have no degenerate repetition, hold nothing the document already has, and use the
document's indentation and line endings.  Each filter takes the suggestion (LF line endings,
except after the last filter) and the request's ``FillContext`` and returns the suggestion,
possibly shorter or empty.  pipeline.py runs them; each has golden-file tests under
``tests/text/golden/<filter name>/``.  How far a suggestion may run (``limit_to_scope``) has its
own module, scope.py.
"""

from __future__ import annotations

from collections.abc import Callable
from math import gcd

from difill.text import characters
from difill.text.context import FillContext
from difill.text.languages import BlockStyle, spec_of
from difill.text.rules import (
    OPENERS,
    closers_fit,
    code_only,
    line_key,
    trim_suffix_overlap,
    unmatched_closers,
    unmatched_openers,
)
from difill.text.scope import limit_to_scope, next_lines
from difill.text.shape import indent_width, only_closers

Filter = Callable[[str, FillContext], str]

CLOSING = set("\"'`)]}>;,:")  # punctuation that ends something the suffix already ends
BANNER_CHARS = set("=-*#~_+/")  # "# =======" is a banner, not a model stuck in a loop
MAX_REPEAT_UNIT = 30
OPEN_BRACKET_LINES = 20  # prefix lines scanned for brackets still open at the cursor


def apply_filters(text: str, ctx: FillContext, pipeline: list[Filter]) -> str:
    """``text`` through each filter in turn, in LF; "" as soon as one leaves nothing."""
    for step in pipeline:
        text = step(text, ctx)
        if not text:
            return ""
    return text


def middle_to_lf(text: str, ctx: FillContext) -> str:
    """The middle in LF, like the context (a remote model may answer in CRLF or lone CRs);
    ``keep_line_endings`` gives the suggestion the document's endings at the end."""
    return characters.to_lf(text)


def drop_control_characters(text: str, ctx: FillContext) -> str:
    """Cut at the first unsafe character (text/characters.py): a C0 or C1 control (NUL,
    escape, CSI, NEL), a bidirectional control or a zero-width character (which can make code
    read differently from what it does: "Trojan Source"), U+2028/U+2029, or U+FFFD (half a UTF-8
    sequence decoded).  An editor shows none of them usefully."""
    found = characters.first_unsafe(text)
    return text if found is None else text[:found]


def no_doubled_space(text: str, ctx: FillContext) -> str:
    """After a space typed mid-line (``return █``), a suggestion's own leading space would make
    two (``return  this;``): it goes.  At a line's indentation it is indentation, and stays."""
    if ctx.line_before.strip() and ctx.line_before.endswith((" ", "\t")) and ctx.string_quote is None:
        return text.lstrip(" \t")
    return text


BLOCK_FOLLOWERS = ("else", "catch", "finally", "while")  # words that go on after ``}`` on its line


def after_block_next_line(text: str, ctx: FillContext) -> str:
    """After a block's closing ``}`` at the end of a line, the next statement starts on the next
    line at the ``}``'s indentation: in Go, ``}`` then ``return (*stringValue)(p)`` was offered on
    the same line (issue 52).  ``} else {``, ``} catch``, ``});``, ``},`` stay on it."""
    spec = spec_of(ctx.language)
    if spec is None or spec.block_style is not BlockStyle.BRACES or ctx.line_after.strip():
        return text
    if not ctx.line_before.rstrip().endswith("}") or text.startswith(("\n", "\r")):
        return text
    first = text.lstrip(" \t")
    word = first.split(None, 1)[0] if first.strip() else ""
    if not first[:1].isalpha() and first[:1] != "_" or word.startswith(BLOCK_FOLLOWERS):
        return text
    return "\n" + _indent_text(ctx.line_before) + first


def stay_inside_string(text: str, ctx: FillContext) -> str:
    """Inside a string, never escape its end: cut at a backslash (an escape the model half-wrote
    can make the whole file invalid).  Where the rest of the line already closes the string, cut
    at its quote too; where it does not (``print("Hello, █`` at the end of the line), the quote
    and what closes after it stay (``world!")``): the string was open, and so was the call."""
    if ctx.string_quote is None:
        return text
    backslash = text.find("\\")
    text = text if backslash < 0 else text[:backslash]
    if ctx.string_quote in ctx.line_after:
        quote = text.find(ctx.string_quote)
        return text if quote < 0 else text[:quote]
    return text.split("\n", 1)[0]


def drop_repetition(text: str, ctx: FillContext) -> str:
    """Cut at a line that ends in a repeated pattern (``))))))))``, ``foo foo foo``), and
    after the first copy of a block of lines that repeats right away."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if ends_in_repetition(line):
            lines = lines[:i]
            break
    for i in range(len(lines)):
        for size in (1, 2, 3):
            block = lines[i : i + size]
            block = [ln.strip() for ln in block]
            again = [ln.strip() for ln in lines[i + size : i + 2 * size]]
            if len(block) == size and any(block) and again == block:
                return "\n".join(lines[: i + size])
    return "\n".join(lines)


def ends_in_repetition(line: str) -> bool:
    """The line ends with one short unit repeated: 8 times for one character, 5 for two or
    three, 3 for longer units (up to 30 characters).  Banner characters do not count."""
    body = line.rstrip()
    for size in range(1, MAX_REPEAT_UNIT + 1):
        unit = body[-size:]
        if len(unit) < size or set(unit) <= BANNER_CHARS or not unit.strip():
            continue
        needed = 8 if size == 1 else 5 if size <= 3 else 3
        if len(body) >= size * needed and body.endswith(unit * needed):
            return True
    return False


def drop_existing_closers(text: str, ctx: FillContext) -> str:
    """Never emit a closing bracket the code after the cursor already has.

    Brackets open before the cursor get closed by the suggestion's unmatched closers and then by
    the closers after the cursor (on the rest of the line, or leading the next line for a
    multi-line suggestion).  A suggestion's closer beyond what is open is a duplicate: cut there.
    """
    pending = unmatched_closers(code_only(ctx.line_after, ctx.language))
    if not ctx.shape.single_line:
        following = next_lines(ctx)[:1]
        if following:
            head = following[0].lstrip()
            pending += list(head[: len(head) - len(head.lstrip(")]}"))])
    if not pending:
        return text
    tail = "\n".join(ctx.prefix.split("\n")[-OPEN_BRACKET_LINES:])
    open_brackets = unmatched_openers(code_only(tail, ctx.language))
    # Bracket kinds count: the suggestion may close an open bracket only if the closers after the
    # cursor still close what is left open (an open "{" around "foo(█)" lends no ")").  Where the
    # document is unbalanced already, only the counts are compared, as before.
    kinds_known = closers_fit(pending, open_brackets)
    allowed = len(open_brackets) - len(pending)
    stack: list[str] = []
    outer = list(open_brackets)
    for index, ch in enumerate(text):
        if ch in "([{":
            stack.append(ch)
        elif ch in OPENERS:
            if stack and stack[-1] == OPENERS[ch]:
                stack.pop()
                continue
            fits = allowed > 0
            if kinds_known:
                fits = fits and bool(outer) and outer[-1] == OPENERS[ch] and closers_fit(pending, outer[:-1])
            if not fits:
                return text[:index]
            allowed -= 1
            if outer:
                outer.pop()
    return text


def end_where_suffix_begins(text: str, ctx: FillContext) -> str:
    """Drop closing brackets and whole lines at the end that the suffix already starts with."""
    return trim_suffix_overlap(text, ctx.suffix)


def trim_suffix_duplicate(text: str, ctx: FillContext) -> str:
    """Drop the end of the suggestion that the text after the cursor already starts with: the
    engine's rule (closing brackets, repeated lines) and, on one line, an overlap with the rest of
    the line that is three characters or more, the whole rest, or only closing punctuation
    (a string's closing quote, ``")``).  A space the text around already has is not doubled
    (``foo(a,█ b)`` + `` c, `` -> ``foo(a, c, b)``)."""
    text = end_where_suffix_begins(text, ctx)
    rest = ctx.line_after
    if "\n" in text or not rest.strip():
        return text
    if rest[:1] in (" ", "\t"):
        text = text.rstrip(" \t")
    if ctx.line_before.strip() and ctx.line_before[-1:] in (" ", "\t"):
        text = text.lstrip(" \t")
    # The model's space before what the line already has goes too (``a < b; `` + ``; });``).
    for body in dict.fromkeys((text, text.rstrip(" \t"))):
        for size in range(min(len(body), len(rest)), 0, -1):
            overlap = rest[:size]
            if (size >= 3 or size == len(rest) or set(overlap) <= CLOSING) and body.endswith(overlap):
                return body[:-size]
    return text


def drop_next_lines_duplicate(text: str, ctx: FillContext) -> str:
    """Cut the suggestion at a line that is the document's next non-blank line: the model is
    writing code that is already there.  If that is the first line, nothing is left."""
    following = next_lines(ctx)
    if not following:
        return text
    target = line_key(following[0])
    lines = text.split("\n")
    for i, line in enumerate(lines):
        # The first line completes the cursor line (and, alone, the rest of it).
        whole = ctx.line_before + line + (ctx.line_after if len(lines) == 1 else "") if i == 0 else line
        if whole.strip() and line_key(whole) == target:
            return "\n".join(lines[:i])
    return text


def normalise_indentation(text: str, ctx: FillContext) -> str:
    """Indent the suggestion's later lines in the document's style: tabs or spaces, and the
    document's width per level, relative to where its first line stands.  When the cursor line
    is already indented, the suggestion's first line does not add more.  At column 0 of a blank
    line the first line's own indentation places the suggestion (inside an ``else {`` indented
    12, a statement at 16): it is the base the levels count from, never rescaled itself."""
    lines = text.split("\n")
    if ctx.line_before and not ctx.line_before.strip():
        lines[0] = lines[0].lstrip(" \t")
    unit = ctx.indent_unit
    # At column 0 the first line carries its own indentation: it takes the document's style too.
    owns_indent = not ctx.line_before and bool(lines[0].strip())
    if (len(lines) == 1 and not owns_indent) or not unit:
        return "\n".join(lines)  # without a unit: neither the document nor the language decides
    base = _indent_text(ctx.line_before + lines[0])
    rest = lines[1:]
    if unit == "\t":
        own = _space_step([len(base.expandtabs(4))] + [indent_width(ln) for ln in rest if ln.strip()]) or 4
        if owns_indent:
            lines[0] = _retab(lines[0], own)
        rest = [_retab(ln, own) for ln in rest]
    else:
        if owns_indent:
            lines[0] = (" " * len(unit)).join(base.split("\t")) + lines[0][len(base) :]
            base = _indent_text(lines[0])
        rest = [
            (" " * len(unit)).join(ln[: indent_width(ln)].split("\t")) + ln[indent_width(ln) :] for ln in rest
        ]
        widths = [len(base.expandtabs(len(unit)))] + [indent_width(ln) for ln in rest if ln.strip()]
        own = _space_step(widths)
        if own and own != len(unit) and all((w - widths[0]) % own == 0 for w in widths[1:]):
            rest = [_rescale(ln, widths[0], own, len(unit)) for ln in rest]
    return "\n".join([lines[0], *rest])


def tidy_end(text: str, ctx: FillContext) -> str:
    """No trailing blank lines; no trailing spaces at the end of a line; and a whole new line
    (ending in a newline) when the cursor is at the start of a non-empty line."""
    lines = text.split("\n")
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    text = "\n".join(lines)
    if not ctx.line_after:
        text = text.rstrip(" \t")
    if ctx.line_before == "" and ctx.line_after.strip() and text.strip():
        text += "\n"
    elif "\n" in text.rstrip("\n") and only_closers(ctx.line_after) and not text.endswith("\n"):
        # Editors auto-close brackets: a block filled before ``})`` leaves them on a line of
        # their own, at the cursor line's indentation (the LSP item replaces them, see
        # server/features/suggestions/inline_completion.py).
        text = text.rstrip(" \t") + "\n" + _indent_text(ctx.line_before)
    return text


def drop_empty(text: str, ctx: FillContext) -> str:
    """A suggestion of only whitespace is no suggestion."""
    return text if text.strip() else ""


def keep_line_endings(text: str, ctx: FillContext) -> str:
    """The suggestion in the document's line endings: the last step of every pipeline
    (pipeline.py), after the suggestion is chosen."""
    return characters.with_line_ending(text, ctx.line_ending)


PIPELINE: list[Filter] = [
    middle_to_lf,
    drop_control_characters,
    no_doubled_space,
    after_block_next_line,
    stay_inside_string,
    limit_to_scope,
    drop_repetition,
    drop_existing_closers,
    trim_suffix_duplicate,
    drop_next_lines_duplicate,
    normalise_indentation,
    tidy_end,
    drop_empty,
]

# ---------------------------------------------------------------------------- helpers


def _indent_text(line: str) -> str:
    return line[: indent_width(line)]


def _space_step(widths: list[int]) -> int:
    """The indentation step of a run of lines: the gcd of the changes in width (0 if none)."""
    step = 0
    for a, b in zip(widths, widths[1:], strict=False):
        step = gcd(step, abs(a - b))
    return step


def _rescale(line: str, base: int, own: int, unit: int) -> str:
    """Re-indent ``line`` from steps of ``own`` spaces to steps of ``unit``, relative to ``base``."""
    width = indent_width(line)
    if not line.strip():
        return line
    levels = (width - base) // own
    return " " * max(0, base + levels * unit) + line[width:]


def _retab(line: str, own: int) -> str:
    """Leading spaces in steps of ``own`` become tabs (a document indented with tabs)."""
    width = indent_width(line)
    leading = line[:width]
    if not own or "\t" in leading:
        return line
    return "\t" * (width // own) + " " * (width % own) + line[width:]


# For a marked hole: the text after the hole is fixed, so no trailing newline is added
# (``tidy_end``) and the next lines are the hole's own context, not code to avoid repeating.
HOLE_PIPELINE: list[Filter] = [f for f in PIPELINE if f not in (drop_next_lines_duplicate, tidy_end)]

# A rewrite replaces exactly the selection (its context is the document without it): only the
# model's junk and what the text after the selection already has are cut.
REWRITE_PIPELINE: list[Filter] = [middle_to_lf, drop_control_characters, end_where_suffix_begins, drop_empty]
