"""Symbol candidates from the workspace index (issue 36, part 2): the module a name at the cursor
refers to, found among the indexed files, and the names it defines, ranked (symbols.rank).

One path for every language that has rules for it:
* Python (symbols.py): ``import pkg.mod as m`` / ``from pkg import mod``; ``m.`` -> the module's
  top-level names and ``__all__``;
* JavaScript/TypeScript (symbols_js.py): ``import * as b from './b'`` / ``require('./b')``;
  ``b.`` -> the names ``./b`` exports; ``import {x} from './b'`` -> ``x`` at a typed word;
* Go (symbols_go.py): ``import "example.com/app/util"``; ``util.`` -> the exported names of
  the package's files, the package found below the workspace's ``go.mod``.

Only indexed files are candidates' modules: a module outside the workspace folders, or a file
the secrets policy denies (never indexed), gives no candidates.

Python also asks jedi (jedi_names.py): after ``x.`` where these rules find no workspace module,
and at a typed word, where its names where the word starts (locals, parameters, globals,
builtins, a call's ``name=``) join the imported ones; that list is asked at the word's first
character and read, never waited for, at its next ones (``_jedi_words``).
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from difill.server.context import files, symbols, symbols_go, symbols_js
from difill.server.context.drafts import Draft
from difill.server.context.jedi_names import JediNames
from difill.server.context.policy import ContextPolicy
from difill.server.context.store import IndexedFile, Store
from difill.server.context.symbol_usage import (
    MAX_USAGE_FILES,
    Usage,
    echoed_word,
    echoes,
    enclosing_call,
    token_before,
)
from difill.text.budget import Budget
from difill.text.languages import family_of

CACHED_MODULES = 256
WORD_PLACEHOLDER = "x"  # after the cursor: jedi completes the empty name before it (without_word)
# Each starts where a run of its first class does (a lookbehind): a search or a scan over a long
# run of spaces or a long word is linear, not quadratic (tests/server/context/test_hostile_regexes.py).
IMPORT_LINE = re.compile(r"(?<![ \t])[ \t]*+(?:from|import)[ \t]")
WORD_END = re.compile(r"(?<!\w)\w++$")
# ``from module `` with the word after it to write: the keyword jedi lists there is no name.
FROM_MODULE = re.compile(r"(?<![ \t])[ \t]*+from[ \t]++[\w.]++[ \t]++$")
# A compound statement's header ends with ``:`` and binds no value there (``if ready:``, ``else:``).
# The lookbehind, as FROM_MODULE's: a search over a run of blanks starts only at its first.
COMPOUND_HEADER = re.compile(r"(?<![ \t])[ \t]*+(?:if|elif|else|while|for|with|try|except|finally|def|class|lambda|async|match|case)\b")
MAX_PACKAGE_FILES = 64  # a Go package's files read for its names
MAX_TSCONFIG_BYTES = 256 * 1024  # a bigger one reads as none
MAX_REEXPORT_FILES = 64  # modules an ``export * from`` walk reads past the first (text/budget.py)
REEXPORT_MS = 50.0


@dataclass(frozen=True)
class ModuleRules:
    """A language family's part of the path."""

    family: str  # the indexed files that may be its modules: family_of(record.language)
    imports_of: Callable[[str], symbols.Imports]
    module_of_chain: Callable[[str, symbols.Imports], str | None]
    names_of: Callable[[str], list[str]]  # the names a module's text defines


RULES = {
    "python": ModuleRules("python", symbols.imports_of, symbols.module_of_chain, symbols.top_level_names),
    "javascript": ModuleRules(
        "javascript", symbols_js.imports_of, symbols_js.module_of_chain, symbols_js.exported_names
    ),
    "go": ModuleRules("go", symbols_go.imports_of, symbols_go.module_of_chain, symbols_go.exported_names),
}


def without_word(text: str, start: int, offset: int) -> str:
    """The document with the typed word ``text[start:offset]`` replaced by one placeholder
    character, for jedi's names where the word starts: the same text at every keystroke of it.
    (Removed outright, a word at the end of a document left jedi's parser outside the function
    it was typed in: no locals.)"""
    return text[:start] + WORD_PLACEHOLDER + text[offset:]


def symbol_drafts(ranking: symbols.Ranking, partial: str, source: str) -> list[Draft]:
    """The ranking's best names as "symbol" drafts (the rest of each name after ``partial``): the
    first ``MAX_SYMBOL_DRAFTS``, or the undecided ones when more (up to ``MAX_UNDECIDED``), for the
    model to order (suggestion_path.ranked_by_model); draft_policy.drafts_at keeps ``MAX_SYMBOL_DRAFTS``."""
    undecided = min(ranking.undecided, symbols.MAX_UNDECIDED) if ranking.undecided > 1 else 0
    best = ranking.names[: max(symbols.MAX_SYMBOL_DRAFTS, undecided)]
    return [
        Draft(name[len(partial) :], source, kind="symbol", undecided=i < undecided)
        for i, name in enumerate(best)
    ]


def _inside_brackets(line: str) -> bool:
    """Whether ``line`` ends inside an open bracket (a ``def``'s parameters, a call)."""
    return sum(line.count(c) for c in "([{") > sum(line.count(c) for c in ")]}")


def rules_for(language: str | None) -> ModuleRules | None:
    """The module rules of a language as text/languages.py names it (TS takes JS's)."""
    return RULES.get(family_of(language) or "")


@dataclass(frozen=True)
class Files:
    """One language family's indexed files at one index generation, mapped for resolving imports."""

    generation: int
    records: list[IndexedFile]
    by_relative: dict[tuple[str, str], IndexedFile]  # (folder, relative path) -> file
    by_base: dict[str, list[IndexedFile]]  # file name -> files
    go_modules: dict[str, symbols_go.GoModules]  # folder -> its go.mod files, indexed
    by_directory: dict[tuple[str, str], list[IndexedFile]]  # (folder, directory) -> Go files (a package)


class SymbolLookup:
    """Resolves modules to indexed files (a snapshot of the index per generation, taken under its
    lock) and ranks their names with the workspace's use of them; caches each step."""

    def __init__(
        self,
        lock: threading.Lock,
        store: Store,
        folders: Callable[[], list[str]],
        jedi: JediNames | None = None,
        policy: ContextPolicy | None = None,
    ) -> None:
        self.lock = lock
        self.store = store
        self.folders = folders  # the workspace folders, read under the lock
        self.jedi = jedi  # Python names as an IDE knows them, where the index's rules find none
        self.policy = policy  # what tsconfig.json's read asks (files.read_bytes)
        self._cache_lock = threading.Lock()
        self._files: dict[str, Files] = {}  # family -> its snapshot
        self._names: OrderedDict[tuple, list[str]] = OrderedDict()  # a module file's names
        self._usage: OrderedDict[tuple, Usage] = OrderedDict()  # (module file, generation) -> usage
        self._aliases: OrderedDict[tuple, tuple[str, list[tuple[str, list[str]]]]] = OrderedDict()
        self._reexports: OrderedDict[tuple, list[str]] = OrderedDict()  # (module file, generation) -> names

    def drafts(
        self, text: str, offset: int, current_path: str | None, language: str | None, source_texts: list[str]
    ) -> list[Draft]:
        """The names a workspace module defines after ``alias.``, or the document's imported
        names (and in Python jedi's) that continue a typed word, best first, as "symbol" drafts: sure, as an IDE's
        completion list would offer exactly these.  [] in a language without rules."""
        rules = rules_for(language)
        line_before = text[text.rfind("\n", 0, offset) + 1 : offset]
        query = symbols.symbol_query(line_before) if rules is not None else None
        if rules is None or query is None:
            word = symbols.WORD_AT_CURSOR.search(line_before) if rules is not None else None
            if word is not None and len(word.group(1)) == 1:  # a word's first character: jedi starts
                self._jedi_words(text, offset - 1, offset, current_path, rules)
            if rules is not None and word is None:
                return self._echo_drafts(text, offset, line_before, rules)
            return []
        imports = rules.imports_of(text)
        texts = [text, *source_texts]
        if query.chain:
            ahead = line_before[: len(line_before) - len(query.chain) - len(query.partial) - 1]
            module = rules.module_of_chain(query.chain, imports)
            found = self.module_files(module, current_path, rules) if module else []
            python = rules.family == "python"  # jedi's language
            if not found:
                return self._jedi_drafts(text, offset, current_path, query, texts, ahead) if python else []
            names = list(dict.fromkeys(n for record in found for n in self._module_names(record, rules)))
            usage = self.usage(found, rules, names).without(current_path)
            ranking = symbols.rank(
                query, names, texts, text[:offset], usage, enclosing_call(ahead), echoed_word(ahead)
            )
            if not ranking.names:  # e.g. a package's __init__.py that only re-exports: jedi follows them
                return self._jedi_drafts(text, offset, current_path, query, texts, ahead) if python else []
            return symbol_drafts(ranking, query.partial, found[0].relative)
        names = list(imports.names)
        start = offset - len(query.partial)
        from_jedi = self._jedi_words(text, start, offset, current_path, rules) if query.partial else []
        ranking = symbols.rank(query, list(dict.fromkeys([*names, *from_jedi])), texts, text[:offset])
        source = "imported" if ranking.names and ranking.names[0] in imports.names else "jedi"
        return symbol_drafts(ranking, query.partial, source)

    def _echo_drafts(self, text: str, offset: int, line_before: str, rules: ModuleRules) -> list[Draft]:
        """Nothing typed where a value is bound (``venv_container: █``, ``parser = █``,
        ``level=█``): the document's imported names that echo the bound word (``VenvContainer``,
        ``Parser``; ``echoes``: its end, without case or underscores), best first; none when no
        imported name does.  Chosen on the tuning projects (docs/drafts.md "Round 4")."""
        word = echoed_word(line_before)
        if not word or (COMPOUND_HEADER.match(line_before) and not _inside_brackets(line_before)):
            return []  # nothing bound, or a header's own colon (``def f(venv: `` binds: brackets)
        echoing = [n for n in rules.imports_of(text).names if n != word and echoes(n, word)]
        if not echoing:
            return []
        query = symbols.SymbolQuery("", "", token_before(line_before))
        return symbol_drafts(symbols.rank(query, echoing, [text], text[:offset], word=word), "", "imported")

    def _jedi_words(self, text: str, start: int, offset: int, current_path: str | None, rules: ModuleRules) -> list[str]:
        """jedi's names where the word ``text[start:offset]`` starts (its locals, parameters,
        globals, builtins, and ``name=`` at a call's keyword argument), asked once per word: on
        the text with the word replaced (``without_word``), so that each keystroke of it reads the
        same cached list, and never waited for.  The word's first character asks (its answer is
        dropped: drafts start at 2 characters), a later one reads what has come by then; waiting
        50 ms for it did not change the keystrokes saved (docs/drafts.md "Round 3")."""
        line_start = text.rfind("\n", 0, start) + 1
        if (
            self.jedi is None
            or rules.family != "python"
            or IMPORT_LINE.match(text[line_start:offset])
            or self.jedi.slow(current_path)
        ):
            return []
        names = self.jedi.names(without_word(text, start, offset), start, current_path, wait_s=0) or []
        if not text.startswith("_", start):
            names = [n for n in names if not n.startswith("_")]
        return names

    def _jedi_drafts(
        self, text: str, offset: int, current_path: str | None, query: symbols.SymbolQuery,
        texts: list[str], ahead: str,
    ) -> list[Draft]:  # fmt: skip
        """jedi's names after ``chain.`` (jedi_names.py), ranked as the workspace's are: the
        standard library's and installed packages' modules, re-exports, src layouts, instances'
        attributes.  Its list is alphabetical: a lookup that starts with one of its names goes
        first (draft_policy.drafts_at), and the model orders the first undecided ones.
        ``ahead``: the line before ``chain.``.  Python only (the callers')."""
        if self.jedi is None or IMPORT_LINE.match(ahead):
            return []  # an import line: the index's import drafts complete it (retrieval.py)
        names = self.jedi.names(text, offset, current_path)
        if not names:
            return []
        if not query.partial.startswith("_"):
            names = [n for n in names if not n.startswith("_")]  # private and dunder names: when asked
        ranking = symbols.rank(
            query, names, texts, text[:offset], None, enclosing_call(ahead), echoed_word(ahead)
        )
        return symbol_drafts(ranking, query.partial, "jedi")

    def import_line_names(
        self, text: str, offset: int, current_path: str | None
    ) -> tuple[frozenset[str] | None, bool]:
        """On an import line, the names jedi lists where the word at the cursor starts: modules
        of the workspace and the environment, or a module's names after ``import``; None off an
        import line or without jedi.  Empty, and True (waiting), when jedi gave none in time
        (issue 52: ``from `` offered ``torch import n``, ``from m import wait_r`` ``esponse``)."""
        line_start = text.rfind("\n", 0, offset) + 1
        if self.jedi is None or not IMPORT_LINE.match(text[line_start:offset]):
            return None, False
        word = WORD_END.search(text, line_start, offset)
        start = word.start() if word else offset
        names = self.jedi.names(text, start, current_path)
        if names is not None and FROM_MODULE.match(text[line_start:start]):
            names = [*names, "import"]
        return frozenset(names or ()), names is None

    def jedi_pending(self, text: str, offset: int, current_path: str | None) -> bool:
        """Whether jedi's names at the cursor (``_jedi_drafts``) did not come in time and are
        still being completed (JediNames.pending)."""
        return self.jedi is not None and self.jedi.pending(text, offset, current_path)

    def warm(self) -> None:
        """A Python document opened: jedi loads in the background (JediNames.warm)."""
        if self.jedi is not None:
            self.jedi.warm()

    def close(self, wait_s: float = 0.0) -> None:
        if self.jedi is not None:
            self.jedi.close(wait_s)

    def module_files(self, module: str, current_path: str | None, rules: ModuleRules) -> list[IndexedFile]:
        """The indexed files of ``module`` (one file; a Go package's files), the current
        folder's first; [] when the workspace has none."""
        with self.lock:
            folders = self.folders()
        folder = next((f for f in folders if current_path and files.inside(current_path, f)), None)
        current = (
            os.path.relpath(current_path, folder).replace(os.sep, "/") if folder and current_path else None
        )
        return self._resolve(module, current, folder, rules, self._snapshot(rules))

    def _snapshot(self, rules: ModuleRules) -> Files:
        with self.lock:
            generation = self.store.generation
            cached = self._files.get(rules.family)
            if cached is not None and cached.generation == generation:
                return cached
            everything = list(self.store.files.values())
        records = [r for r in everything if family_of(r.language) == rules.family]
        by_base: dict[str, list[IndexedFile]] = {}
        for record in records:
            by_base.setdefault(record.relative.rsplit("/", 1)[-1], []).append(record)
        go_mods: dict[str, list[tuple[str, str]]] = {}
        by_directory: dict[tuple[str, str], list[IndexedFile]] = {}
        if rules.family == "go":
            for record in records:
                by_directory.setdefault((record.folder, os.path.dirname(record.relative)), []).append(record)
            for record in everything:
                module = (
                    symbols_go.module_path(record.text)
                    if record.relative.rsplit("/", 1)[-1] == "go.mod"
                    else None
                )
                if module:
                    go_mods.setdefault(record.folder, []).append((record.relative, module))
        go_modules = {folder: symbols_go.GoModules.of(mods) for folder, mods in go_mods.items()}
        by_relative = {(r.folder, r.relative): r for r in records}
        snapshot = Files(generation, records, by_relative, by_base, go_modules, by_directory)
        with self.lock:
            self._files[rules.family] = snapshot
        return snapshot

    def _resolve(
        self, module: str, current: str | None, folder: str | None, rules: ModuleRules, snapshot: Files
    ) -> list[IndexedFile]:
        if rules.family == "go":
            modules = snapshot.go_modules.get(folder or "")
            directory = symbols_go.package_directory(module, modules) if modules else None
            if directory is None:
                return []
            package = snapshot.by_directory.get((folder or "", directory), [])
            found = [r for r in package if not r.relative.endswith("_test.go")]
            return sorted(found, key=lambda r: r.relative)[:MAX_PACKAGE_FILES]
        # Python and JS: the one file a module is, its paths in the language's order of trial:
        # a path from the folder (relative imports, "/..."), else a tail anywhere in the folders.
        if rules.family == "python":
            tails = symbols.module_paths(module, current)
        else:  # a bare specifier that tsconfig.json maps is a relative one from the folder
            specs = [module, *symbols_js.aliased_specifiers(module, *self._path_aliases(folder))]
            tails = [t for spec in specs for t in symbols_js.module_paths(spec, current if spec == module else "")]
        for tail in tails:
            if tail.startswith("/"):
                found = snapshot.by_relative.get((folder or "", tail[1:]))
                if found is not None:
                    return [found]
                continue
            matches = [
                r
                for r in snapshot.by_base.get(tail.rsplit("/", 1)[-1], [])
                if r.relative == tail or r.relative.endswith("/" + tail)
            ]
            if matches:
                return [min(matches, key=lambda r: (r.folder != folder, len(r.relative), r.relative))]
        return []

    def usage(self, module: list[IndexedFile], rules: ModuleRules, names: list[str]) -> Usage:
        """How the workspace's files that import ``module`` use its names (symbol_usage.py)."""
        snapshot = self._snapshot(rules)
        key = (module[0].path, snapshot.generation)
        with self._cache_lock:
            if key in self._usage:
                return self._usage[key]
        targets = {r.path for r in module}
        hint = module[0].relative.rsplit("/", 1)[-1].split(".")[0]  # a file naming the module names this
        if hint in ("__init__", "index") or rules.family == "go":
            hint = module[0].relative.rsplit("/", 2)[-2] if "/" in module[0].relative else ""
        usage = Usage()
        wanted = set(names)
        for record in snapshot.records[:MAX_USAGE_FILES]:
            head = record.text[: symbols.IMPORT_SCAN_CHARS]
            if record.path in targets or (hint and hint not in head):
                continue
            imports = rules.imports_of(record.text)
            current = record.relative
            aliases = {
                alias
                for alias in (*imports.modules, *imports.names)
                for chained in [rules.module_of_chain(alias, imports)]
                if chained
                and any(
                    r.path in targets
                    for r in self._resolve(chained, current, record.folder, rules, snapshot)[:1]
                )
            }
            if aliases:
                usage.add(record.path, record.text, aliases, wanted)
        with self._cache_lock:
            self._usage[key] = usage
            while len(self._usage) > CACHED_MODULES:
                self._usage.popitem(last=False)
        return usage

    def _path_aliases(self, folder: str | None) -> tuple[str, list[tuple[str, list[str]]]]:
        """The workspace folder's tsconfig.json (or jsconfig.json) ``baseUrl`` and ``paths``,
        read again when the file changes; none without one, or outside every folder."""
        if folder is None:
            return ".", []
        for name in ("tsconfig.json", "jsconfig.json"):
            path = os.path.join(folder, name)
            try:
                stat = os.stat(path)
            except OSError:
                continue
            key = (path, stat.st_mtime_ns, stat.st_size)
            with self._cache_lock:
                if key in self._aliases:
                    return self._aliases[key]
            # The one read of a user file: a tsconfig.json linked to /dev/stdin, a FIFO or a
            # secret reads as none (it blocked the model's worker on the editor's own pipe).
            data = files.read_bytes(path, [folder], MAX_TSCONFIG_BYTES, self.policy)
            found = symbols_js.path_aliases(data.decode("utf-8", "replace")) if data else (".", [])
            with self._cache_lock:
                self._aliases[key] = found
                while len(self._aliases) > CACHED_MODULES:
                    self._aliases.popitem(last=False)
            return found
        return ".", []

    def _module_names(self, record: IndexedFile, rules: ModuleRules) -> list[str]:
        """The names a module defines, and for JS/TS those it re-exports with ``export * from``
        (an ``index.ts`` that gathers a folder), followed ``MAX_REEXPORT_DEPTH`` deep: each
        module once (a visited set: ``index.ts`` <-> ``a.ts`` with 16 ``export *`` each was 16^4
        walks, issue 62 row 6), at most ``MAX_REEXPORT_FILES`` files and ``REEXPORT_MS``, and the
        answer kept per index generation (a changed file is a new generation)."""
        if rules.family != "javascript":
            return self._names_of(record, rules)
        snapshot = self._snapshot(rules)
        key = (record.path, snapshot.generation)
        with self._cache_lock:
            if key in self._reexports:
                return self._reexports[key]
        names = self._reexported_names(record, rules, snapshot)
        with self._cache_lock:
            self._reexports[key] = names
            while len(self._reexports) > CACHED_MODULES:
                self._reexports.popitem(last=False)
        return names

    def _reexported_names(self, record: IndexedFile, rules: ModuleRules, snapshot: Files) -> list[str]:
        """Breadth first from ``record``: its names, then its ``export * from`` modules'."""
        budget = Budget(REEXPORT_MS, MAX_REEXPORT_FILES)
        visited = {record.path}
        level, names = [record], []
        for depth in range(symbols_js.MAX_REEXPORT_DEPTH + 1):
            following = []
            for module in level:
                names += self._names_of(module, rules)
                if depth == symbols_js.MAX_REEXPORT_DEPTH:
                    continue
                whole, _ = symbols_js.star_exports(module.text[: symbols.IMPORT_SCAN_CHARS * 4])
                for spec in whole[:16]:
                    for target in self._resolve(spec, module.relative, module.folder, rules, snapshot)[:1]:
                        if target.path not in visited and budget.spend():
                            visited.add(target.path)
                            following.append(target)
            level = following
        return list(dict.fromkeys(names))[: symbols.MAX_SCANNED_NAMES]

    def _names_of(self, record: IndexedFile, rules: ModuleRules) -> list[str]:
        key = (record.path, len(record.text), hash(record.text[:4096]))
        with self._cache_lock:
            if key in self._names:
                return self._names[key]
        names = rules.names_of(record.text)
        with self._cache_lock:
            self._names[key] = names
            while len(self._names) > CACHED_MODULES:
                self._names.popitem(last=False)
        return names
