"""The edit gate: is a selection edit worth showing, or is it noise?  (issue 60, item 2)

An edit (rewrite, instruction, fill holes, complete block) is shown only when ``held_back``
finds no reason to hold it back.  Each rule compares the edit with the selection it replaces, so
a selection that was already broken does not block its own edit:

* **parse**: the document with the edit has at most as many syntax errors (tree-sitter's ERROR
  and MISSING nodes) as the document without it (with holes: the fewest of the document as it is
  and with every marker read as a name or, in Python, a common keyword, as a marker is itself an
  error a noisy fill hides behind); for Python, a document that compiled (``compile``: it also
  refuses ``return`` outside a function, which tree-sitter reads without an error) still
  compiles.  A language without a grammar, and a document past ``MAX_PARSE_CHARS`` (past
  ``MAX_COMPILE_CHARS`` for ``compile``), get no parse rule.
* **repeats**: no more stutters than the selection had: a name written twice with only spaces
  or a dot between (``path path``, ``self.self.x``, ``f.f``; ``datetime.datetime`` is fine where
  the file imports ``datetime``), or a line (with a letter or digit in it) written twice in a
  row; and no name found nowhere in the document with a piece repeated inside it
  (``ulululer``, ``queuequeue``, ``_jo_____``).
* **renames**: the edit may not drop a name the selection shares with the rest of the document
  (a name used both inside and outside the selection: a parameter, a variable set above, an
  attribute) *and* bring in a name the selection did not have (Python's keywords are neither;
  its builtins may be brought in, not dropped: ``other.id`` -> ``other.max`` is a rename).  Dropping a shared name alone (deleting a use) or
  bringing in a new one alone (a new local, a call of ``sum``) passes; one name out and another
  in is what a rename looks like, mangled (``subtotal`` -> ``subcount``) or not (``self.width``
  -> ``self.style``).  Names are identifier-shaped words, in code, strings and comments alike:
  cheap, and wrong in the safe direction.  A rename the user asks for is held back too:
  ``editGate: false`` shows it.
* **indentation**: the first non-blank line keeps its indentation, and no line of the edit sits
  left of the selection's leftmost line (the block's base).
* **changes something**: with an instruction, the edit differs from the selection in more than
  whitespace.

No torch, no LSP: the server (server/features/edits/service.py) runs it on each edit before it
becomes an applyEdit, a resolved code action or a proposal, and says why when it holds one back;
the edit-gate eval (lab/edit_gate_eval.py) runs the same function.
"""

from __future__ import annotations

import builtins
import functools
import keyword
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Tree

from difill.text.characters import line_start, to_lf
from difill.text.syntax import count_errors, parser_for

# The parse rule reads documents up to this size, as the server keeps trees (server/trees.py):
# the tree of the document is the server's, the edit's an incremental parse from it (a few ms).
# Python's ``compile`` reads the whole text each time (25 ms on 100 KB): a smaller cap.
MAX_PARSE_CHARS = 1024 * 1024
MAX_COMPILE_CHARS = 100_000
NAME = re.compile(r"[^\W\d]\w*")
# A name, then the same name after spaces or a dot: ``path path``, ``self.self``.
STUTTER = re.compile(r"(?<![\w.])([^\W\d]\w*)(?:[ \t]+|[ \t]*\.[ \t]*)\1(?!\w)")
# A name a model stuttered inside: a piece of 3 or more characters twice (``queuequeue``), one
# of 2 three times (``ulululer``), or a run of underscores (``_jo_____``).  Only names found
# nowhere in the document count (``renderer``, ``ATCATC`` in a string are the file's own).
STUTTERED_NAME = re.compile(r"([^\W_]{3,})\1|([^\W_]{2})\2\2|_{3,}")
# What a hole marker may stand for when the selection's parse is the baseline: a name, which most
# holes are, or (Python) a keyword; the marker itself is a syntax error a noisy fill hides behind.
PLACEHOLDERS = ("x",)
PYTHON_PLACEHOLDERS = ("x", "return", "if", "for", "not", "in", "import", "except", "pass", "None")
SHOWN_NAMES = 3  # names quoted in a reason


@dataclass(frozen=True)
class Edit:
    """An edit to judge: ``text[start:end]`` (the selection) becomes ``new``."""

    text: str  # the document
    start: int
    end: int
    new: str
    language: str | None  # as text/languages.py names it
    instructed: bool = False  # the user gave an instruction: the edit must change something
    marker: str | None = None  # fill holes: the hole marker (no name, no repeat of the selection's)
    tree: Tree | None = None  # tree-sitter's tree of ``text``, when the caller has one (the server)


def held_back(edit: Edit) -> list[str]:
    """Why ``edit`` is held back: one short phrase per broken rule, none when it may be shown."""
    text, start, end, new, tree, marker = edit.text, edit.start, edit.end, edit.new, edit.tree, edit.marker
    if "\r" in text or "\r" in new:  # the rules read LF text; the tree was of the other
        start, end = len(to_lf(text[:start])), len(to_lf(text[:end]))
        text, new, tree = to_lf(text), to_lf(new), None
    selection = text[start:end]
    plain = selection.replace(marker, "") if marker else selection
    outside = text[:start] + "\n" + text[end:]
    reasons = [
        _changes_nothing(plain, new) if edit.instructed else None,
        _parses_worse(text, start, end, new, edit.language, marker, tree),
        _repeats(plain, new, outside),
        _renames(outside, plain, new, edit.language),
        _indentation(text[line_start(text, start) : start], selection, new),
    ]
    return [reason for reason in reasons if reason]


def _changes_nothing(selection: str, new: str) -> str | None:
    if "".join(selection.split()) == "".join(new.split()):
        return "it changes nothing" if selection == new else "it changes only whitespace"
    return None


def _parses_worse(
    text: str, start: int, end: int, new: str, language: str | None, marker: str | None, tree: Tree | None
) -> str | None:
    """With holes, the baseline is the best of the selection as it is and with every marker read
    as one of ``PLACEHOLDERS`` (a name, a keyword); Python compiles the best of those only."""
    if len(text) > MAX_PARSE_CHARS:
        return None
    selection = text[start:end]
    stand_ins = (PYTHON_PLACEHOLDERS if language == "python" else PLACEHOLDERS) if marker else ()
    candidates = [selection, *(selection.replace(marker, s) for s in stand_ins)] if marker else [selection]
    errors = _error_counter(text, start, end, language, tree)
    if errors is not None:
        counts = [errors(candidate) for candidate in candidates]
        before, after = min(counts), errors(new)
        if after > before:
            return (
                f"it does not parse ({after} syntax error{'s' * (after != 1)} in the file, {before} before)"
            )
        candidates = [selection, candidates[counts.index(before)]]  # compile the best of them only
    if language == "python" and len(text) <= MAX_COMPILE_CHARS:
        head, tail = text[:start], text[end:]
        if any(_compiles(head + c + tail) for c in candidates[:2]) and not _compiles(head + new + tail):
            return "Python cannot compile the file with it (it compiled before)"
    return None


def _error_counter(
    text: str, start: int, end: int, language: str | None, tree: Tree | None
) -> Callable[[str], int] | None:
    """``errors(replacement)``: syntax errors in ``text`` with ``text[start:end]`` replaced, each
    an incremental parse from the tree of ``text`` (``tree``, or parsed here); None without a
    grammar."""
    parser = parser_for(language)
    if parser is None:
        return None
    source = text.encode("utf-8")
    tree = tree if tree is not None else parser.parse(source)
    head, old = text[:start].encode("utf-8"), text[start:end].encode("utf-8")
    start_point = _point(head)
    unchanged = text[start:end]

    def errors(replacement: str) -> int:
        if replacement == unchanged:
            return count_errors(tree.root_node)
        middle = replacement.encode("utf-8")
        edited = tree.copy()
        edited.edit(
            start_byte=len(head), old_end_byte=len(head) + len(old), new_end_byte=len(head) + len(middle),
            start_point=start_point, old_end_point=_point(head + old), new_end_point=_point(head + middle),
        )  # fmt: skip
        return count_errors(parser.parse(head + middle + source[len(head) + len(old) :], edited).root_node)

    return errors


def _point(before: bytes) -> tuple[int, int]:
    """Tree-sitter's (row, byte column) of the end of ``before``."""
    return before.count(b"\n"), len(before) - (before.rfind(b"\n") + 1)


def _compiles(source: str) -> bool:
    """Python compiles ``source``: parsed and compiled, so ``return`` outside a function (which
    tree-sitter reads without an error) counts.  Warnings (an invalid escape) are not shown."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "<edit>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _repeats(selection: str, new: str, outside: str) -> str | None:
    stutters = _stutters(new, outside)
    if len(stutters) > len(_stutters(selection, outside)):
        return f"it repeats `{stutters[0]}`"
    known = _names(selection) | _names(outside)
    stuttered = [n for n in sorted(_names(new) - known) if STUTTERED_NAME.search(n)]
    if stuttered:
        return f"it writes a name found nowhere in the file with a piece repeated ({_listed(stuttered)})"
    twice = _doubled_lines(new)
    if len(twice) > len(_doubled_lines(selection)):
        return f"it writes a line twice in a row (`{_short(twice[0])}`)"
    return None


def _stutters(text: str, outside: str) -> list[str]:
    """``path path``, ``self.self``; not ``datetime.datetime`` where the file imports the module."""
    return [
        name
        for name in STUTTER.findall(text)
        if not re.search(rf"\bimport[ \t]+{re.escape(name)}\b", outside)
    ]


def _doubled_lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    return [
        b.strip() for a, b in zip(lines, lines[1:], strict=False) if a == b and any(c.isalnum() for c in b)
    ]


def _renames(outside_text: str, selection: str, new: str, language: str | None) -> str | None:
    outside, inside, written = _names(outside_text), _names(selection), _names(new)
    # A builtin may be brought in (a call of ``sum``) but not dropped: ``other.id`` -> ``other.max``.
    dropped = sorted((inside & outside) - written - _keywords(language))
    brought = sorted(written - inside - _known_names(language))
    if not dropped or not brought:
        return None
    return f"it renames a name used outside the selection ({_listed(dropped)} gone, {_listed(brought)} in)"


def _names(text: str) -> set[str]:
    return set(NAME.findall(text))


def _keywords(language: str | None) -> frozenset[str]:
    return frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) if language == "python" else frozenset()


@functools.cache
def _known_names(language: str | None) -> frozenset[str]:
    """Names an edit may bring in without the document having them: Python's builtins and keywords."""
    if language == "python":
        return frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
    return frozenset()


def _indentation(lead: str, selection: str, new: str) -> str | None:
    """``lead``: the text of the selection's first line before it (the same before and after)."""
    before, after = _indents(lead + selection), _indents(lead + new)
    if before is None or after is None:
        return None
    (first_before, base_before), (first_after, base_after) = before, after
    if first_after != first_before:
        return f"it moves the first line's indentation ({len(first_before)} -> {len(first_after)} columns)"
    if _width(base_after) < _width(base_before):
        return "it moves lines left of the selection's indentation"
    return None


def _indents(text: str) -> tuple[str, str] | None:
    """The first non-blank line's indentation and the smallest one (None: all blank)."""
    indents = [line[: len(line) - len(line.lstrip(" \t"))] for line in text.split("\n") if line.strip()]
    if not indents:
        return None
    return indents[0], min(indents, key=_width)


def _width(indent: str) -> int:
    return len(indent.expandtabs(8))


def _listed(names: list[str]) -> str:
    shown = ", ".join(f"`{name}`" for name in names[:SHOWN_NAMES])
    return shown + (f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else "")


def _short(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def excerpt(selection: str, new: str, width: int = 60) -> str:
    """What the model wrote, on one line: the lines of ``new`` it changed (the unchanged lines
    around them left out), whitespace collapsed, cut at ``width`` characters."""
    selection, new = to_lf(selection), to_lf(new)
    head = 0
    while head < min(len(selection), len(new)) and selection[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(selection), len(new)) - head and selection[-1 - tail] == new[-1 - tail]:
        tail += 1
    first = new.rfind("\n", 0, head) + 1
    last = new.find("\n", len(new) - tail)
    changed = new[first : last if last >= 0 else len(new)]
    return _short(" ".join(changed.split()) or " ".join(new.split()), width)
