"""Symbol candidates for Go: the packages a file imports and the names a workspace package
exports (issue 36, part 2; symbols.py has the Python rules and the ranking).

``import u "example.com/app/util"`` (or a grouped import) binds ``u`` (else the path's last
element) to a package: after ``u.`` the candidates are the exported names (capitalised) that the
package's files declare at their top level: funcs, types, vars and consts, grouped ones too.  A
package is in the workspace when a ``go.mod`` there declares a module path the import path
starts with; its directory is the rest of the path below that ``go.mod``.  The standard library
and other modules name no workspace package.  Test files (``_test.go``) are not the package.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from dataclasses import dataclass

from difill.server.context.symbols import IMPORT_SCAN_CHARS, MAX_SCANNED_NAMES, Imports

IMPORT_ONE = re.compile(r'^import[ \t]+(?:([A-Za-z_]\w*|\.)[ \t]+)?"([^"\n]{1,512})"', re.M)
IMPORT_GROUP = re.compile(r"^import[ \t]*\(([^)]{0,16384})\)", re.M)
IMPORT_SPEC = re.compile(r'^[ \t]*(?:([A-Za-z_]\w*|\.)[ \t]+)?"([^"\n]{1,512})"', re.M)
MODULE_LINE = re.compile(r"^module[ \t]+\"?([^\s\"]{1,512})\"?", re.M)
TOP_LEVEL = re.compile(r"^(?:func|type|var|const)[ \t]+([A-Z]\w*)", re.M)
# A grouped declaration's opener and a closer at column 0.  They are paired with a bisect, not one
# lazy regex (``(.*?)^\)`` rescanned the rest of the file from every unclosed opener: quadratic).
GROUP_OPEN = re.compile(r"^(?:type|var|const)[ \t]*\(", re.M)
GROUP_CLOSE = re.compile(r"^\)", re.M)
GROUP_MEMBER = re.compile(r"^(?:\t| {1,4})([A-Z]\w*)", re.M)  # one level in: not a struct's fields
MAJOR_VERSION = re.compile(r"v\d+")


def imports_of(text: str) -> Imports:
    """The file's package bindings: local name -> import path (no names: Go imports packages)."""
    head = text[:IMPORT_SCAN_CHARS]
    specs = [(m.group(1), m.group(2)) for m in IMPORT_ONE.finditer(head)]
    for group in IMPORT_GROUP.finditer(head):
        specs += [(m.group(1), m.group(2)) for m in IMPORT_SPEC.finditer(group.group(1))]
    modules: dict[str, str] = {}
    for alias, path in specs:
        if alias in ("_", "."):
            continue
        modules[alias or package_name(path)] = path
    return Imports(modules, {})


def package_name(path: str) -> str:
    """The name an import path binds by default: its last element (``.../v2`` skipped)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) > 1 and MAJOR_VERSION.fullmatch(parts[-1]):
        return parts[-2]
    return parts[-1] if parts else ""


def module_of_chain(chain: str, imports: Imports) -> str | None:
    return imports.modules.get(chain)


def module_path(go_mod: str) -> str | None:
    """The module path a ``go.mod`` declares, or None."""
    found = MODULE_LINE.search(go_mod[:4096])
    return found.group(1) if found else None


@dataclass(frozen=True)
class GoModules:
    """A workspace folder's ``go.mod`` files, indexed once per index generation: module path ->
    the folder-relative directories that declare it, and every module's directory.  A resolve
    looks up the import path's prefixes, longest first: as many lookups as the path has
    elements, whatever the count of modules (a 3,000-module monorepo compared every module with
    every other at each resolve, issue 62 row 14)."""

    by_module: dict[str, list[str]]
    roots: frozenset[str]

    @classmethod
    def of(cls, go_mods: list[tuple[str, str]]) -> GoModules:
        """From (go.mod's relative path, module path) pairs."""
        by_module: dict[str, list[str]] = {}
        for relative, module in go_mods:
            by_module.setdefault(module, []).append(posixpath.dirname(relative))
        return cls(by_module, frozenset(root for roots in by_module.values() for root in roots))


def package_directory(import_path: str, modules: GoModules) -> str | None:
    """The folder-relative directory of ``import_path`` given the workspace's ``go.mod`` files:
    the longest module path it starts with; None when none does."""
    parts = import_path.split("/")
    for size in range(len(parts), 0, -1):
        for root in modules.by_module.get("/".join(parts[:size]), ()):
            directory = posixpath.normpath(posixpath.join(root, *parts[size:]))
            if directory.startswith("../") or directory == "..":
                continue
            directory = "" if directory == "." else directory
            if not _nested(directory, root, modules.roots):
                return directory
    return None


def _nested(directory: str, root: str, roots: frozenset[str]) -> bool:
    """Whether ``directory`` lies in a module nested below ``root``: its own go.mod names it."""
    ancestor = directory
    while ancestor and ancestor != root:
        if ancestor in roots and _below(ancestor, root):
            return True
        ancestor = posixpath.dirname(ancestor)
    return False


def _below(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or inside it (folder-relative, "" the folder itself)."""
    return folder == "" or path == folder or path.startswith(folder + "/")


def exported_names(text: str) -> list[str]:
    """The exported names a Go file declares at its top level, in its order (``MAX_SCANNED_NAMES``)."""
    found = [(m.start(), m.group(1)) for m in TOP_LEVEL.finditer(text)]
    for start, end in groups(text):
        found += [(m.start(), m.group(1)) for m in GROUP_MEMBER.finditer(text, start, end)]
    names = dict.fromkeys(name for _, name in sorted(found, key=lambda f: f[0]))
    return list(names)[:MAX_SCANNED_NAMES]


def groups(text: str) -> list[tuple[int, int]]:
    """The bodies of grouped declarations, ``(start, end)``: from an opener to the first column-0
    ``)`` after it; an opener with none after it opens no group.  Linear in the text."""
    closers = [m.start() for m in GROUP_CLOSE.finditer(text)]
    found: list[tuple[int, int]] = []
    for opener in GROUP_OPEN.finditer(text):
        if found and opener.start() < found[-1][1]:
            continue  # inside the group before it
        k = bisect.bisect_left(closers, opener.end())
        if k < len(closers):
            found.append((opener.end(), closers[k]))
    return found
