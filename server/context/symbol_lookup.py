"""Symbol candidates from the workspace index (issue 36, part 2): the module a name at the cursor
refers to, found among the indexed files, and the names it defines, ranked (symbols.ranked).

One path for every language that has rules for it:
* Python (symbols.py): ``import pkg.mod as m`` / ``from pkg import mod``; ``m.`` -> the module's
  top-level names and ``__all__``;
* JavaScript/TypeScript (symbols_js.py): ``import * as b from './b'`` / ``require('./b')``;
  ``b.`` -> the names ``./b`` exports; ``import {x} from './b'`` -> ``x`` at a typed word;
* Go (symbols_go.py): ``import "example.com/app/util"``; ``util.`` -> the exported names of
  the package's files, the package found below the workspace's ``go.mod``.

Only indexed files are candidates' modules: a module outside the workspace folders, or a file
the secrets policy denies (never indexed), gives no candidates.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from difill.engine.languages import family_of
from difill.server.context import files, symbols, symbols_go, symbols_js
from difill.server.context.drafts import Draft
from difill.server.context.store import IndexedFile, Store

CACHED_MODULES = 256
MAX_PACKAGE_FILES = 64  # a Go package's files read for its names


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


def rules_for(language: str | None) -> ModuleRules | None:
    """The module rules of a language as engine/languages.py names it (TS takes JS's)."""
    return RULES.get(family_of(language) or "")


class SymbolLookup:
    """Resolves modules to indexed files under the index's lock; caches both steps."""

    def __init__(self, lock: threading.Lock, store: Store, folders: Callable[[], list[str]]) -> None:
        self.lock = lock
        self.store = store
        self.folders = folders  # the workspace folders, read under the lock
        self._cache_lock = threading.Lock()
        self._modules: OrderedDict[tuple, tuple[int, ...]] = OrderedDict()  # (module, from, gen) -> files
        self._names: OrderedDict[tuple, list[str]] = OrderedDict()  # a module file's names

    def drafts(
        self, text: str, offset: int, current_path: str | None, language: str | None, source_texts: list[str]
    ) -> list[Draft]:
        """The names a workspace module defines after ``alias.``, or the document's imported
        names that continue a typed word, best first, as "symbol" drafts: sure, as an IDE's
        completion list would offer exactly these.  [] in a language without rules."""
        rules = rules_for(language)
        line_before = text[text.rfind("\n", 0, offset) + 1 : offset]
        query = symbols.symbol_query(line_before) if rules is not None else None
        if rules is None or query is None:
            return []
        imports = rules.imports_of(text)
        texts = [text, *source_texts]
        if query.chain:
            module = rules.module_of_chain(query.chain, imports)
            found = self.module_files(module, current_path, rules) if module else []
            if not found:
                return []
            names = list(dict.fromkeys(n for record in found for n in self._names_of(record, rules)))
            best = symbols.ranked(query, names, texts, text[:offset])[: symbols.MAX_SYMBOL_DRAFTS]
            return [Draft(name[len(query.partial) :], found[0].relative, kind="symbol") for name in best]
        best = symbols.ranked(query, list(imports.names), texts)[: symbols.MAX_SYMBOL_DRAFTS]
        return [Draft(name[len(query.partial) :], "imported", kind="symbol") for name in best]

    def module_files(self, module: str, current_path: str | None, rules: ModuleRules) -> list[IndexedFile]:
        """The indexed files of ``module`` (one file; a Go package's files), the current
        folder's first; [] when the workspace has none."""
        with self.lock:
            folders = self.folders()
            folder = next((f for f in folders if current_path and files.inside(current_path, f)), None)
            current = (
                os.path.relpath(current_path, folder).replace(os.sep, "/")
                if folder and current_path
                else None
            )
            key = (rules.family, module, current, self.store.generation)
            if key in self._modules:
                return [self.store.files[i] for i in self._modules[key] if i in self.store.files]
            records = [r for r in self.store.files.values() if family_of(r.language) == rules.family]
            if rules.family == "go":
                found = self._go_package(module, folder, records)
            else:
                found = self._module_file(module, current, folder, records, rules)
            self._modules[key] = tuple(
                self.store.by_path[r.path] for r in found if r.path in self.store.by_path
            )
            while len(self._modules) > CACHED_MODULES:
                self._modules.popitem(last=False)
            return found

    def _module_file(
        self,
        module: str,
        current: str | None,
        folder: str | None,
        records: list[IndexedFile],
        rules: ModuleRules,
    ) -> list[IndexedFile]:
        """Python and JS: the one file a module is (its paths in the language's order of trial)."""
        tails = (symbols.module_paths if rules.family == "python" else symbols_js.module_paths)(
            module, current
        )
        if not tails:
            return []
        whole = {tail[1:]: i for i, tail in enumerate(tails) if tail.startswith("/")}  # from the folder
        ends = [(i, tail) for i, tail in enumerate(tails) if not tail.startswith("/")]  # anywhere in it
        matches = []
        for record in records:
            rank = whole.get(record.relative) if record.folder == folder or folder is None else None
            if rank is None:
                rank = next(
                    (i for i, t in ends if record.relative == t or record.relative.endswith("/" + t)), None
                )
            if rank is not None:
                matches.append((record.folder != folder, rank, len(record.relative), record.relative, record))
        return [min(matches, key=lambda m: m[:4])[4]] if matches else []

    def _go_package(
        self, import_path: str, folder: str | None, records: list[IndexedFile]
    ) -> list[IndexedFile]:
        """Go: the non-test files of the package's directory below the current folder's go.mod."""
        go_mods = [
            (r.relative, module)
            for r in self.store.files.values()
            if r.folder == folder and posixpath_base(r.relative) == "go.mod"
            for module in [symbols_go.module_path(r.text)]
            if module
        ]
        directory = symbols_go.package_directory(import_path, go_mods)
        if directory is None:
            return []
        found = [
            r
            for r in records
            if r.folder == folder
            and os.path.dirname(r.relative) == directory
            and not r.relative.endswith("_test.go")
        ]
        return sorted(found, key=lambda r: r.relative)[:MAX_PACKAGE_FILES]

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


def posixpath_base(relative: str) -> str:
    return relative.rsplit("/", 1)[-1]
