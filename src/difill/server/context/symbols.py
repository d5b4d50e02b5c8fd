"""Symbol candidates: at ``module.`` or at an imported name, the names another file defines.

An IDE's completion list names the candidates at once: after ``alias.`` where ``alias`` is a
workspace module (``import pkg.mod as alias``, ``from pkg import mod``, ``from . import mod``),
they are the names that module defines at its top level (and its ``__all__``); where a word is
being typed, they are the document's imported names that start with it (and in Python jedi's
names where the word starts, symbol_lookup.py), a name the document uses before one it never
does.  The model then needs to pick one, not spell one (issue 36).

Ranking (``rank``): the typed prefix; a name that echoes the word it is bound to
(``level=defaults.LOGURU_LEVEL``) or that the enclosing function is named after
(``def _cmd_install(): return commands.install``); the module's order walked on (``successor``); how the document
and the draft sources use the candidates right after the same token (``raise errors.``); how the
workspace's other files that import the module use them inside the same call and after the same
token (symbol_usage.py); use at all; public before private; the module's own order.  The first
names that none of this evidence tells apart, up to the use counts, are ``undecided``: where the
backend can score names, the model's score orders them (server/suggestion_path.py ``ranked_by_model``).  This module
holds Python's rules; symbols_js.py and symbols_go.py hold JavaScript/TypeScript's and Go's, and
symbol_lookup.py runs them all through the index.

Bounds: a module's names are read up to ``MAX_SCANNED_NAMES`` (once per version of its file),
and a query ranks at most ``MAX_MODULE_NAMES`` of them, the first in the module's order that
continue what is typed (in a generated module of 100k definitions, ``mod.name_99`` still finds
``name_99999``); import statements are read in the first ``IMPORT_SCAN_CHARS`` of the document,
and usage is counted in at most ``USAGE_SCAN_CHARS`` of each text.  Imports are not followed:
circular ones cannot loop, and a star import (``from m import *``) binds no name.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from difill.server.context.imports import ALL_ENTRY, ALL_LIST
from difill.server.context.symbol_usage import Usage, echoes, enclosing_function, named_after, token_before

MAX_MODULE_NAMES = 2000  # candidates ranked for one query: the first that continue what is typed
MAX_SCANNED_NAMES = 100_000  # names read from one module (the index's file cap bounds it anyway)
IMPORT_SCAN_CHARS = 64 * 1024
USAGE_SCAN_CHARS = 256 * 1024
MAX_SYMBOL_DRAFTS = 3  # candidates that reach the drafts (draft_policy.drafts_at)
# Undecided candidates the model may order (``Ranking.undecided``); chosen on the tuning packages:
# 6 named as many as 8, 4 fewer (docs/drafts.md "The model's score").
MAX_UNDECIDED = 6
SEQUENCE_LINES = 4  # lines above the cursor looked at for the module name used last (``successor``)
MIN_TYPED = 2  # characters of a word typed before imported names are offered for it

IMPORT_LINE = re.compile(r"^[ \t]*import[ \t]+([\w. \t,]{1,1024})", re.M)
FROM_LINE = re.compile(
    r"^[ \t]*from[ \t]+(\.{0,8}[\w.]{0,256})[ \t]+import[ \t]+(\([^)]{0,4096}\)|[^\n#]{0,1024})", re.M
)
# The cursor after ``a.b.`` (and maybe a partly typed name), on the text of its line before it.
ATTRIBUTE_AT_CURSOR = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*){0,8})\.([A-Za-z_]\w*)?$")
WORD_AT_CURSOR = re.compile(r"(?<![\w.])([A-Za-z_]\w*)$")
TOP_LEVEL = re.compile(
    r"^(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)|^([A-Za-z_]\w*)[ \t]*(?::[^=\n]{0,256})?=(?!=)", re.M
)


@dataclass(frozen=True)
class Imports:
    modules: dict[str, str]  # local name -> the module it is (``import a.b as m``: m -> a.b)
    names: dict[str, tuple[str, str]]  # local name -> (module, name there): ``from m import x``


@dataclass(frozen=True)
class SymbolQuery:
    """What the cursor asks for: a name of ``module`` (after ``chain.``), or an imported name."""

    chain: str  # "errors" in ``errors.█``; "" for an imported name
    partial: str  # the part of the name typed so far
    token_before: str  # the token before ``chain.`` (or before the word): ``raise``, ``=``, ``(``


def imports_of(text: str) -> Imports:
    """The document's imports (Python), from its first ``IMPORT_SCAN_CHARS``."""
    head = text[:IMPORT_SCAN_CHARS]
    modules: dict[str, str] = {}
    names: dict[str, tuple[str, str]] = {}
    for match in IMPORT_LINE.finditer(head):
        for part in match.group(1).split(","):
            words = part.split()
            if len(words) == 3 and words[1] == "as":
                modules[words[2]] = words[0]
            elif len(words) == 1:  # ``import a.b`` binds a, and a.b is reached through it
                modules.setdefault(words[0].split(".")[0], words[0].split(".")[0])
                modules[words[0]] = words[0]
    for match in FROM_LINE.finditer(head):
        module = match.group(1)
        for part in match.group(2).strip("() \t").replace("\n", " ").split(","):
            words = part.split()
            if not words or words[0] == "*":
                continue
            local = words[2] if len(words) == 3 and words[1] == "as" else words[0]
            names[local] = (module, words[0])
    return Imports(modules, names)


def symbol_query(line_before: str) -> SymbolQuery | None:
    """The query at the end of ``line_before`` (the cursor's line up to it), or None."""
    attribute = ATTRIBUTE_AT_CURSOR.search(line_before)
    if attribute is not None:
        return SymbolQuery(
            attribute.group(1), attribute.group(2) or "", token_before(line_before[: attribute.start()])
        )
    word = WORD_AT_CURSOR.search(line_before)
    if word is not None and len(word.group(1)) >= MIN_TYPED:
        return SymbolQuery("", word.group(1), token_before(line_before[: word.start()]))
    return None


def module_of_chain(chain: str, imports: Imports) -> str | None:
    """The module that ``chain`` (``errors``, ``pkg.errors``) names in the document, or None."""
    if chain in imports.modules:
        return imports.modules[chain]
    head, _, rest = chain.partition(".")
    if head in imports.names:  # ``from pkg import errors`` then ``errors.``
        module, name = imports.names[head]
        joined = f"{module}.{name}" if not module.endswith(".") else module + name
        return joined + (f".{rest}" if rest else "")
    if head in imports.modules and rest:
        return f"{imports.modules[head]}.{rest}"
    return None


def module_paths(module: str, current: str | None) -> list[str]:
    """Folder-relative path tails a module's file may have: ``a/b.py`` and ``a/b/__init__.py``;
    a relative module (``.b``, ``..a.b``) resolved against the current file's ``current``
    folder-relative path (then it is a whole path, not a tail, and starts with "/")."""
    dots = len(module) - len(module.lstrip("."))
    parts = [p for p in module.lstrip(".").split(".") if p]
    if dots:
        if current is None:
            return []
        here = current.split("/")[:-1]
        if dots - 1 > len(here):
            return []
        parts = here[: len(here) - (dots - 1)] + parts
        if not parts:
            return []
        stem = "/" + "/".join(parts)
    else:
        if not parts:
            return []
        stem = "/".join(parts)
    return [f"{stem}.py", f"{stem}/__init__.py"]


def top_level_names(text: str) -> list[str]:
    """The names a module defines at its top level, in order, then its ``__all__`` entries."""
    names: dict[str, None] = {}
    for match in TOP_LEVEL.finditer(text):
        names.setdefault(match.group(1) or match.group(2))
        if len(names) >= MAX_SCANNED_NAMES:
            return list(names)
    for listed in ALL_LIST.finditer(text):
        for entry in ALL_ENTRY.finditer(listed.group(1)):
            names.setdefault(entry.group(2))
    return list(names)[:MAX_SCANNED_NAMES]


@dataclass(frozen=True)
class Ranking:
    names: list[str]  # best first
    # How many of the first names the evidence cannot tell apart (the key up to the use counts):
    # they are in the module's order of use counts, which the model's score may overrule.
    undecided: int


def rank(
    query: SymbolQuery,
    candidates: Sequence[str],
    texts: Sequence[str],
    before_cursor: str = "",
    usage: Usage | None = None,
    call: str = "",
    word: str = "",
) -> Ranking:
    """``candidates`` that continue ``query.partial``, best first (the module docstring's order).
    ``before_cursor``: the document up to the cursor, for ``successor``; ``usage``: how the
    workspace's other files use the module's names (symbol_usage.py), ``call`` the call open at
    the cursor (``isinstance`` in ``isinstance(x, mod.█``)."""
    typed = [name for name in candidates if name.startswith(query.partial) and name != query.partial]
    typed = typed[:MAX_MODULE_NAMES]  # the first in the module's order (the module docstring)
    if not typed:
        return Ranking([], 0)
    following = successor(query, candidates, before_cursor)
    used, in_context = use_counts(query, typed, texts)
    order = {name: i for i, name in enumerate(typed)}
    ws = usage or Usage()
    token = query.token_before
    function = enclosing_function(before_cursor)

    def evidence(n: str) -> tuple:
        # Chosen on the tuning packages (docs/drafts.md): a name that echoes the word it is bound
        # to (``level=defaults.LOGURU_LEVEL``) or that the enclosing function is named after
        # (``def _cmd_install(): return commands.install``) first, then the module's order walked on, then use
        # after the same token here, in the same call and after the same token elsewhere in the
        # workspace.
        return (
            not ((word and echoes(n, word)) or (function and named_after(n, function))),
            n != following,
            -in_context[n],
            # A typed word's name that the code here uses, or a keyword argument of the call it
            # is typed in (jedi's ``timeout=``), before one it never does (jedi's list holds every
            # builtin: ``St`` is ``StrictFileLock`` here, not ``StopIteration``); the more uses,
            # the earlier: only names used as often are left to the model's score (a forward).
            0 if query.chain else -(used[n] + n.endswith("=")),
            -ws.in_call[(call, n)] if call else 0,
            -ws.after[(token, n)],
        )

    def key(n: str) -> tuple:
        # Then use at all here and there, public first, the module's order.
        return (*evidence(n), -used[n], -ws.used[n], n.startswith("_"), order[n])

    names = sorted(typed, key=key)
    first = evidence(names[0])
    undecided = next((i for i, n in enumerate(names) if evidence(n) != first), len(names))
    return Ranking(names, undecided)


def use_counts(
    query: SymbolQuery, typed: list[str], texts: Sequence[str]
) -> tuple[Counter[str], Counter[str]]:
    """How often each of ``typed`` is used in ``texts`` (after ``query.chain``; a typed word's, in
    the document, ``texts[0]``, alone), and how often after the cursor's token before it."""
    after = re.escape(query.chain) + r"\." if query.chain else ""
    # A typed word's candidates all start with it: only words that do are counted (every word of
    # a 2,000-line document was 4 ms a keystroke).
    uses = re.compile(
        rf"(?<![\w.]){after}([A-Za-z_]\w*)\b" if after else rf"(?<![\w.])({re.escape(query.partial)}\w*)\b"
    )
    same = (
        re.compile(rf"(?:{re.escape(query.token_before)})[ \t]*{after}([A-Za-z_]\w*)\b")
        if query.token_before
        else None
    )
    wanted = set(typed)
    used: Counter[str] = Counter()
    in_context: Counter[str] = Counter()
    for i, text in enumerate(texts):
        text = text[:USAGE_SCAN_CHARS]
        if query.chain or i == 0:  # a typed word's names: their use in the document (texts[0])
            used.update(m.group(1) for m in uses.finditer(text) if m.group(1) in wanted)
        if same is not None:
            in_context.update(m.group(1) for m in same.finditer(text) if m.group(1) in wanted)
    return used, in_context


def successor(query: SymbolQuery, candidates: Sequence[str], before_cursor: str) -> str | None:
    """Code that walks a module's names in its order (a block of ``defaults.X = ...`` lines, an
    ``isinstance`` chain): the name after the one the lines just above used, in the module's
    order; None when the lines above use none."""
    if not query.chain:
        return None
    above = "\n".join(before_cursor.rsplit("\n", SEQUENCE_LINES + 1)[-SEQUENCE_LINES - 1 : -1])
    used = re.findall(rf"(?<![\w.]){re.escape(query.chain)}\.([A-Za-z_]\w*)", above)
    position = {name: i for i, name in enumerate(candidates)}
    if not used or used[-1] not in position:
        return None
    after = position[used[-1]] + 1
    return candidates[after] if after < len(candidates) else None
