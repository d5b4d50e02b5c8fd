"""Gitignore rules, matched in time linear in the name: no regular expression, no backtracking.

A regex compiled from ``*a*a*a*a*a*a*a*a*a*a*a*a*b`` backtracks exponentially on a long name that
almost matches, and Python's ``re`` holds the GIL while it does: one line of a hostile
``.gitignore`` froze the whole server (issue 37).  Here a segment pattern (``*``, ``?``,
``[...]``) is matched with the classic single-backtrack-point wildcard algorithm, at most
len(pattern) x len(name) steps, and ``**`` the same way over path segments.  Rules whose text is
absurd for a path (over ``MAX_RULE_CHARS``) are dropped, and a file keeps its first
``MAX_RULES`` rules.

Semantics follow gitignore(5): blank lines and ``#`` comments are skipped, ``\\`` escapes, ``!``
re-includes, a trailing ``/`` matches directories only, a pattern with a ``/`` before its end is
anchored to its file's directory and one without matches at any depth, ``**/``, ``/**/`` and
``/**`` span directories, and the last rule that matches decides.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MAX_RULE_CHARS = 1024  # no path component is longer than 255 bytes: a longer rule is not a path rule
MAX_RULES = 2000  # per file; real .gitignore files hold tens to hundreds

STAR = "*"  # a segment token: any run of characters (no "/")
ANY = "?"  # a segment token: any one character
GLOBSTAR = "**"  # a path token: any run of segments
ONE_SEGMENT = "*/"  # a path token: exactly one segment (what a trailing "/**" needs before it)

# A segment pattern's tokens: STAR, ANY, a literal character, or a bracket class
# (negated, ranges as (first, last) pairs).
Token = str | tuple[bool, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class Rule:
    path: tuple[tuple[Token, ...] | str, ...]  # per segment: its tokens, or GLOBSTAR / ONE_SEGMENT
    negate: bool
    dir_only: bool
    text: str  # the line as written, for messages


@dataclass(frozen=True)
class RuleSet:
    """The rules of one file, for paths relative to the workspace folder: a path below ``base``
    (a folder-relative directory, "" for the top) is matched as ``prepend`` + its part below
    ``base`` (``prepend`` carries a rule file from above the folder, such as the repository
    root's .gitignore, down to the folder)."""

    rules: tuple[Rule, ...]
    base: str = ""
    prepend: str = ""


def parse(text: str) -> tuple[Rule, ...]:
    rules = []
    for line in text.splitlines():
        rule = parse_line(line)
        if rule is not None:
            rules.append(rule)
            if len(rules) == MAX_RULES:
                break
    return tuple(rules)


def parse_line(line: str) -> Rule | None:
    """One gitignore line as a Rule; None for a blank line, a comment or an unusable rule."""
    written = line
    if len(line) > MAX_RULE_CHARS or not line.strip() or line.startswith("#"):
        return None
    # Trailing spaces are dropped unless escaped ("a\ " keeps one).
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    negate = line.startswith("!")
    if negate or line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    parts = [part for part in line.split("/") if part]
    if not parts:
        return None
    path: list[tuple[Token, ...] | str] = [] if anchored else [GLOBSTAR]
    for index, part in enumerate(parts):
        if part == "**":
            if index == len(parts) - 1:  # "abc/**": everything inside abc, not abc itself
                path.append(ONE_SEGMENT)
            if not path or path[-1] != GLOBSTAR:
                path.append(GLOBSTAR)
            continue
        tokens = _segment_tokens(part)
        if tokens is None:
            return None
        path.append(tokens)
    return Rule(tuple(path), negate, dir_only, written)


def _segment_tokens(part: str) -> tuple[Token, ...] | None:
    """``part``'s tokens (runs of ``*`` become one STAR); None for a malformed escape."""
    tokens: list[Token] = []
    i = 0
    while i < len(part):
        char = part[i]
        if char == "\\":
            if i + 1 == len(part):
                return None
            tokens.append((False, ((part[i + 1], part[i + 1]),)))  # a class of one: "\\*" is no STAR
            i += 2
        elif char == "*":
            if not tokens or tokens[-1] != STAR:
                tokens.append(STAR)
            i += 1
        elif char == "?":
            tokens.append(ANY)
            i += 1
        elif char == "[":
            bracket = _bracket(part, i)
            if bracket is None:  # no closing "]": a literal "["
                tokens.append("[")
                i += 1
            else:
                klass, i = bracket
                tokens.append(klass)
        else:
            tokens.append(char)
            i += 1
    return tuple(tokens)


def _bracket(part: str, start: int) -> tuple[Token, int] | None:
    """The class at ``part[start] == "["`` and the index after its "]", or None when unclosed."""
    i = start + 1
    negate = i < len(part) and part[i] in "!^"
    if negate:
        i += 1
    ranges: list[tuple[str, str]] = []
    first = True
    while i < len(part):
        char = part[i]
        if char == "]" and not first:
            return (negate, tuple(ranges)), i + 1
        first = False
        if char == "\\" and i + 1 < len(part):
            i += 1
            char = part[i]
        if i + 2 < len(part) and part[i + 1] == "-" and part[i + 2] != "]":
            ranges.append((char, part[i + 2]))
            i += 3
        else:
            ranges.append((char, char))
            i += 1
    return None


def _one(token: Token, char: str) -> bool:
    if token == ANY:
        return True
    if isinstance(token, tuple):
        negate, ranges = token
        return any(low <= char <= high for low, high in ranges) != negate
    return token == char


def _wildcard(pattern: Sequence, items: Sequence, star: str, one: Callable[[Any, Any], bool]) -> bool:
    """Whether ``items`` match ``pattern``, where ``star`` takes any run of items and every other
    element one item (``one``): the single-backtrack-point algorithm, at most len(pattern) x
    len(items) steps (on a mismatch, only the last star takes one more item)."""
    p = i = 0
    star_p, star_i = -1, 0
    while i < len(items):
        if p < len(pattern) and pattern[p] == star:
            star_p, star_i = p, i
            p += 1
        elif p < len(pattern) and one(pattern[p], items[i]):
            p += 1
            i += 1
        elif star_p >= 0:
            p, star_i = star_p + 1, star_i + 1
            i = star_i
        else:
            return False
    while p < len(pattern) and pattern[p] == star:
        p += 1
    return p == len(pattern)


def match_segment(tokens: Sequence[Token], name: str) -> bool:
    """Whether one path segment ``name`` matches ``tokens`` (STAR: any run of characters)."""
    return _wildcard(tokens, name, STAR, _one)


def match_path(rule: Rule, parts: Sequence[str]) -> bool:
    """Whether the segments ``parts`` match ``rule.path``: the same algorithm over segments, with
    GLOBSTAR as the star."""
    path = rule.path
    if len(path) == 2 and path[0] == GLOBSTAR and isinstance(path[1], tuple):
        return match_segment(path[1], parts[-1])  # "*.log", "name": the last segment decides
    return _wildcard(path, parts, GLOBSTAR, _segment_matches)


def _segment_matches(element: tuple[Token, ...] | str, part: str) -> bool:
    return element == ONE_SEGMENT or (isinstance(element, tuple) and match_segment(element, part))


def decide(rule_sets: Sequence[RuleSet], relative: str, is_dir: bool) -> bool | None:
    """True when the last rule matching ``relative`` (folder-relative, '/'-separated) ignores it,
    False when it re-includes it, None when no rule matches.  ``rule_sets`` go from the lowest
    precedence to the highest (global excludes, info/exclude, .gitignore files top down)."""
    decision = None
    for rule_set in rule_sets:
        if rule_set.base:
            if not relative.startswith(rule_set.base + "/"):
                continue
            below = relative[len(rule_set.base) + 1 :]
        else:
            below = relative
        parts = (rule_set.prepend + below).split("/")
        for rule in rule_set.rules:
            if rule.dir_only and not is_dir:
                continue
            if match_path(rule, parts):
                decision = not rule.negate
    return decision


def ignored(rule_sets: Sequence[RuleSet], relative: str, is_dir: bool) -> bool:
    return decide(rule_sets, relative, is_dir) is True
