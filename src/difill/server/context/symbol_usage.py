"""How the workspace uses a module's names: the evidence that ranks ``module.`` candidates beyond
the document and the few draft sources (issue 36, part 2: "how the same module's names are used
elsewhere in the workspace - the same attribute after the same call or keyword").

For one module file, every indexed file of its language that imports it (under any alias, the
import resolved as the lookup resolves the document's) is read once per index generation, and
each ``alias.name`` there is counted three ways: at all, after the token before ``alias.``
(``raise``, ``=``, ``(``), and inside the call that encloses it (``isinstance(x, alias.█``).
The file being edited is left out (its indexed copy is an older version of the text at hand).
Bounds: ``MAX_USAGE_FILES`` importing files, ``USAGE_SCAN_CHARS`` of each.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

USAGE_SCAN_CHARS = 256 * 1024  # as symbols.py reads each text

MAX_USAGE_FILES = 2000
# Each name starts where a word does ((?<!\w)): from inside a long run of word characters, a
# search would otherwise read the run to its end again at every position (quadratic; issue 51).
IDENT = r"(?<!\w)[A-Za-z_]\w*"
TOKEN_BEFORE = re.compile(r"((?<!\w)\w+|[^\w\s])\s*$")
CALL_NAME = re.compile(rf"({IDENT})\s*$")  # the called name's last part: ``Word`` in ``pp.Word(``
ECHOED = re.compile(rf"({IDENT})[ \t]*(?::[^=\n]{{0,256}})?=[ \t]*$|({IDENT})[ \t]*:[ \t]*$")
# Characters before a use (or the cursor) looked at for its token, enclosing call and bound name:
# every function below reads at most this much of the line it is given.
LINE_WINDOW = 400
FUNCTION_WINDOW = 8000  # how far back enclosing_function looks for the ``def``
# The lookbehind starts a match only where a run of blanks starts: a search over a long run of
# spaces would otherwise try (and rescan) it from every one of them, quadratic in its length.
DEF_LINE = re.compile(rf"(?<![ \t])[ \t]*+(?:async[ \t]++)?def[ \t]++({IDENT})")


@dataclass
class Usage:
    """Counts of a module's names in the workspace, and each file's share (to leave one out)."""

    used: Counter[str] = field(default_factory=Counter)
    after: Counter[tuple[str, str]] = field(default_factory=Counter)  # (token before, name)
    in_call: Counter[tuple[str, str]] = field(default_factory=Counter)  # (enclosing call, name)
    by_file: dict[str, tuple[Counter, Counter, Counter]] = field(default_factory=dict)

    def add(self, path: str, text: str, aliases: set[str], wanted: set[str]) -> None:
        used: Counter[str] = Counter()
        after: Counter[tuple[str, str]] = Counter()
        in_call: Counter[tuple[str, str]] = Counter()
        pattern = re.compile(rf"(?<![\w.])(?:{'|'.join(map(re.escape, sorted(aliases)))})\.({IDENT})")
        for match in pattern.finditer(text[:USAGE_SCAN_CHARS]):
            name = match.group(1)
            if name not in wanted:
                continue
            line = text[
                max(text.rfind("\n", 0, match.start()) + 1, match.start() - LINE_WINDOW) : match.start()
            ]
            used[name] += 1
            after[(token_before(line), name)] += 1
            call = enclosing_call(line)
            if call:
                in_call[(call, name)] += 1
        if used:
            self.by_file[path] = (used, after, in_call)
            self.used.update(used)
            self.after.update(after)
            self.in_call.update(in_call)

    def without(self, path: str | None) -> Usage:
        """These counts less one file's (the document being edited)."""
        own = self.by_file.get(path or "")
        if own is None:
            return self
        return Usage(self.used - own[0], self.after - own[1], self.in_call - own[2])


def token_before(text: str) -> str:
    """The last token of ``text`` (a word or one punctuation character), "" when none."""
    found = TOKEN_BEFORE.search(text[-LINE_WINDOW:])
    return found.group(1) if found else ""


def enclosing_call(line: str) -> str:
    """The name of the call whose parenthesis is open at the end of ``line`` (``isinstance`` in
    ``isinstance(x, (a.B, ``): the innermost open one preceded by a name; "" when none is."""
    line = line[-LINE_WINDOW:]
    depth = 0
    for i in range(len(line) - 1, -1, -1):
        ch = line[i]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth:
                depth -= 1
                continue
            if ch == "(":
                name = CALL_NAME.search(line[:i])
                if name is not None:
                    return name.group(1)
    return ""


def echoed_word(line: str) -> str:
    """The name the value at the end of ``line`` is bound to: ``level`` in ``level=``, ``x`` in
    ``x = ``, a key in ``key: ``; "" when there is none."""
    found = ECHOED.search(line[-LINE_WINDOW:])
    return (found.group(1) or found.group(2)) if found else ""


def enclosing_function(before_cursor: str) -> str:
    """The name of the function the cursor is in, its signature included (``_cmd_upgrade`` in
    ``def _cmd_upgrade(args):\n    return commands.``): the nearest ``def`` line above, less
    indented than the lines between; "" at module level or in a class body.  Reads the last
    ``FUNCTION_WINDOW`` characters only."""
    lines = before_cursor[-FUNCTION_WINDOW:].split("\n")
    found = DEF_LINE.match(lines[-1])
    if found:
        return found.group(1)
    indent = len(lines[-1]) - len(lines[-1].lstrip(" \t"))
    for line in reversed(lines[:-1]):
        code = line.lstrip(" \t")
        level = len(line) - len(code)
        if not code or code.startswith("#") or level >= indent:
            continue
        found = DEF_LINE.match(line)
        if found:
            return found.group(1)
        if code.startswith("class "):
            return ""
        indent = level  # a block inside the function (if, for, with): walk on outwards
    return ""


def named_after(name: str, function: str) -> bool:
    """Does the enclosing ``function``'s name end with ``name`` (``commands.upgrade_all`` in
    ``def _cmd_upgrade_all``: a wrapper named after what it calls)?  Compared as ``echoes``."""
    plain_name = name.lower().replace("_", "")
    return len(plain_name) >= 4 and function.lower().replace("_", "").endswith(plain_name)


def echoes(name: str, word: str) -> bool:
    """Does ``name`` repeat ``word`` (``level=mod.LOGURU_LEVEL``, ``colorize = m.should_colorize``)?
    Compared without case or underscores, as the end of the name: a convention across codebases."""
    plain_word = word.lower().replace("_", "")
    return len(plain_word) >= 3 and name.lower().replace("_", "").endswith(plain_word)
