"""The rules that turn a model's middle into the text an editor shows, one small filter per rule.

A middle must join the text after it (no duplicated closers or lines), stay in the cursor's
scope, have no degenerate repetition, hold nothing the document already has, and use the
document's indentation and line endings.  Each filter takes the suggestion (LF line endings,
except after the last filter) and the request's ``FillContext`` and returns the suggestion,
possibly shorter or empty.  pipeline.py runs them; each has golden-file tests under
``tests/text/golden/<filter name>/``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from math import gcd

from difill.text import characters
from difill.text.context import FillContext
from difill.text.languages import BlockStyle, is_stub, spec_of
from difill.text.rules import (
    OPENERS,
    closers_fit,
    code_only,
    line_key,
    trim_suffix_overlap,
    unmatched_closers,
    unmatched_openers,
)
from difill.text.shape import BLOCK_LINES, ShapeKind, indent_width, only_closers, opens_block

Filter = Callable[[str, FillContext], str]

CLOSING = set("\"'`)]}>;,:")  # punctuation that ends something the suffix already ends
BANNER_CHARS = set("=-*#~_+/")  # "# =======" is a banner, not a model stuck in a loop
MAX_REPEAT_UNIT = 30
NEXT_LINES = 8  # how many of the document's next lines a suggestion is compared with
OPEN_BRACKET_LINES = 20  # prefix lines scanned for brackets still open at the cursor
NEXT_LINE_START_LINES = 4  # lines a suggestion that starts on the next line may keep
BRACKET_CLOSE = r"^[)\]}]"  # a line that ends a block, in a language without a grammar


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


def limit_to_scope(text: str, ctx: FillContext) -> str:
    """One line for one-line shapes; otherwise stop at a line that leaves the cursor's scope
    (less indented than it) and after the shape's line bound.  Where the shape allows it
    (``open_block_lines``), a block the suggestion opens is kept to its end instead.  At the end
    of a line, a suggestion that starts on the next line is kept (``_next_line_start``)."""
    lines = text.split("\n")
    block = _own_block(lines, ctx)
    if block:
        return "\n".join(block)
    if ctx.shape.single_line:
        return _next_line_start(lines, ctx) or _sibling_lines(lines, ctx) or lines[0]
    kept = [lines[0]]
    for index, line in enumerate(lines[1:], start=1):
        if index >= ctx.shape.max_lines:
            kept = _whole_statements(kept, lines, ctx)  # the bound cut here: not inside a bracket
            break
        if _leaves_scope(line, ctx):
            if _closes_unclosed_block(line, ctx):
                kept.append(line)
            break
        kept.append(line)
    return "\n".join(kept)


def _whole_statements(kept: list[str], lines: list[str], ctx: FillContext) -> list[str]:
    """``kept``, the first lines of ``lines`` that the shape's line bound let through, cut again
    so that the bound never ends the suggestion inside a bracket or a block: up to the last line
    that ends a statement (``_statement_ends``).  When not even the first statement ends within
    the bound, that statement is kept to its end, up to an empty body's bound (``BLOCK_LINES``):
    one whole multi-line call or literal.  Else the cut stays where the bound put it."""
    ends = _statement_ends(lines[:BLOCK_LINES], ctx)
    within = [end for end in ends if end < len(kept)]
    if within:
        return lines[: within[-1] + 1]
    return lines[: ends[0] + 1] if ends else kept


def _statement_ends(lines: list[str], ctx: FillContext) -> list[int]:
    """The indices of the lines after which every bracket the text opened is closed again, no
    block is left open (a ``{`` or ``do`` without its end, a Python header without its body) and
    the line does not continue (a trailing backslash).  Strings and comments are not counted
    (``rules.code_only``, one line at a time)."""
    spec = spec_of(ctx.language)
    keyword_blocks = spec is not None and spec.block_style is BlockStyle.END
    stack: list[str] = []
    depth = 0  # END-style blocks (do ... end) still open
    ends = []
    for index, line in enumerate(lines):
        code = code_only(line, ctx.language).rstrip()
        for ch in code:
            if ch in "([{":
                stack.append(ch)
            elif ch in OPENERS and stack and stack[-1] == OPENERS[ch]:
                stack.pop()
        if keyword_blocks and not code.endswith("{") and opens_block(code, spec):
            depth += 1
        elif (
            keyword_blocks
            and spec is not None
            and re.match(spec.block_close, code.strip())
            and code.strip()[:1] != "}"
        ):
            depth -= 1
        header = spec is not None and spec.block_style is BlockStyle.INDENT and opens_block(code, spec)
        if code.strip() and not stack and depth <= 0 and not header and not code.endswith("\\"):
            ends.append(index)
    return ends


def _next_line_start(lines: list[str], ctx: FillContext) -> str:
    """A suggestion that starts with a line break at the end of a line (``POSTGRES_PASSWORD:
    pass█`` -> ``\\n  POSTGRES_DB: mydb``; ``return a + b█`` -> ``\\n}``), when the cursor's line
    is complete (nothing after the cursor but closers): its next lines at the cursor line's
    indentation or deeper, up to ``NEXT_LINE_START_LINES``, and a line of closers that leaves
    the scope as its last.  "" when it is not one."""
    if ctx.shape.kind is not ShapeKind.LINE_REST or lines[0].strip() or len(lines) < 2:
        return ""
    if ctx.line_after.strip() and not only_closers(ctx.line_after) or not ctx.line_before.strip():
        return ""
    scope = indent_width(ctx.line_before)
    spec = spec_of(ctx.language)
    kept: list[str] = []
    for line in lines[1 : 1 + NEXT_LINE_START_LINES]:
        if not line.strip():
            break  # a blank line after a complete statement: the suggestion is done
        if indent_width(line) < scope:
            closes = spec is not None and spec.block_close and re.match(spec.block_close, line.strip())
            if only_closers(line) or closes:
                kept.append(line)
            break
        kept.append(line)
    return "\n" + "\n".join(kept) if kept else ""


def _sibling_lines(lines: list[str], ctx: FillContext) -> str:
    """At the end of a line in a language whose blocks have a visible end (braces, ``end``, or no
    grammar), a first line that ends a statement or an entry (``;``, ``,``) may be followed by its
    siblings: the next lines at the cursor line's indentation (``e█`` in an interface ->
    ``mail: string;`` and ``age: number;``), up to ``NEXT_LINE_START_LINES``, stopping at a blank
    or less indented line (the block's end, which the document has).  Python keeps its one line.
    "" when it does not apply."""
    spec = spec_of(ctx.language)
    if spec is not None and spec.block_style is BlockStyle.INDENT:
        return ""
    if ctx.shape.kind is not ShapeKind.LINE_REST or len(lines) < 2 or not ctx.line_before.strip():
        return ""
    if ctx.line_after.strip() and not only_closers(ctx.line_after):
        return ""
    if not lines[0].rstrip().endswith((";", ",")):
        return ""
    scope = indent_width(ctx.line_before)
    kept = [lines[0]]
    for line in lines[1:NEXT_LINE_START_LINES]:
        if not line.strip() or indent_width(line) != scope:
            break
        kept.append(line)
    return "\n".join(kept) if len(kept) > 1 else ""


def _leaves_scope(line: str, ctx: FillContext) -> bool:
    """Is ``line`` a line of code less indented than the cursor's scope?"""
    scope = ctx.shape.scope_indent
    return bool(line.strip()) and scope is not None and indent_width(line) < scope


def _closes_unclosed_block(line: str, ctx: FillContext) -> bool:
    """Is ``line`` the end (``}``, ``end``) of the block being filled (an empty body, or a blank
    line in one), in a document that does not close that block itself?  Then the fill must close
    it (``for x {█`` at the end of the typed code) and stops after it, never running on into a new
    method; where the next line closes it already, the fill stops before its own."""
    spec = spec_of(ctx.language)
    if ctx.shape.kind not in (ShapeKind.BLOCK, ShapeKind.LINES):
        return False
    if spec is not None and spec.block_style is BlockStyle.INDENT:
        return False
    close = spec.block_close if spec is not None else BRACKET_CLOSE  # no grammar: braces (CSS)
    if not re.match(close, line.strip()):
        return False
    following = [ln for ln in _next_lines(ctx) if not is_stub(ln, ctx.language)][:1]
    scope = ctx.shape.scope_indent or 0
    return not (following and indent_width(following[0]) < scope and re.match(close, following[0].strip()))


def _own_block(lines: list[str], ctx: FillContext) -> list[str]:
    """The suggestion's lines up to the end of a block it opens within the shape's line bound
    (``get█`` -> ``ter() {`` ... ``}``); [] when it opens none, or does not close it in time."""
    spec = spec_of(ctx.language)
    bound = ctx.shape.open_block_lines
    if not bound or len(lines) < 2:
        return []
    # The block opens on the suggestion's first line, or, on a blank line, on a line of the scope.
    # Without a grammar (spec None) only a "{" opens one: CSS, Vue, Solidity, C#, ... use braces.
    for start in range(min(len(lines), ctx.shape.max_lines)):
        line = (ctx.line_before if start == 0 else "") + lines[start]
        if start and _leaves_scope(line, ctx):
            return []  # past the end of the cursor's block: a block opened there is a new one
        if opens_block(line, spec) if spec is not None else line.rstrip().endswith("{"):
            break
    else:
        return []
    base = indent_width(ctx.line_before + lines[0]) if start == 0 else indent_width(lines[start])
    depth = 0
    for end in range(start, min(len(lines), start + bound)):
        line = lines[end]
        if spec is None or spec.block_style is BlockStyle.BRACES:
            code = code_only(line, ctx.language)
            depth += code.count("{") - code.count("}")
            closed = end > start and depth <= 0
        else:
            closed = (
                end > start
                and indent_width(line) <= base
                and re.match(spec.block_close, line.strip()) is not None
            )
        if closed:
            return lines[: end + 1]
    return []


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
        following = _next_lines(ctx)[:1]
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
    following = _next_lines(ctx)
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


def _next_lines(ctx: FillContext) -> list[str]:
    """The non-blank lines after the cursor line."""
    after = ctx.suffix.split("\n")[1:]
    return [ln for ln in after if ln.strip()][:NEXT_LINES]


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
