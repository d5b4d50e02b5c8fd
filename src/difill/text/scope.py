"""How far a suggestion may run: the cursor's scope, the shape's line bound, the block it opens.

``limit_to_scope`` is the filter (text/filters.py runs it in the pipeline; golden files under
``tests/text/golden/limit_to_scope/``): one line for one-line shapes, unless the suggestion starts
on the next line or continues with sibling lines; otherwise it stops at a line that leaves the
cursor's scope, at the end of the cursor's block, or at the shape's line bound - and then never
inside a bracket or block, but after the last complete statement.
"""

from __future__ import annotations

import re

from difill.text.context import FillContext
from difill.text.languages import BlockStyle, is_stub, spec_of
from difill.text.rules import OPENERS, code_only
from difill.text.shape import BLOCK_LINES, ShapeKind, indent_width, only_closers, opens_block

NEXT_LINES = 8  # how many of the document's next lines a suggestion is compared with
NEXT_LINE_START_LINES = 4  # lines a suggestion that starts on the next line may keep
BRACKET_CLOSE = r"^[)\]}]"  # a line that ends a block, in a language without a grammar


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
    following = [ln for ln in next_lines(ctx) if not is_stub(ln, ctx.language)][:1]
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


def next_lines(ctx: FillContext) -> list[str]:
    """The non-blank lines after the cursor line."""
    after = ctx.suffix.split("\n")[1:]
    return [ln for ln in after if ln.strip()][:NEXT_LINES]
