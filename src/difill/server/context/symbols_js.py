"""Symbol candidates for JavaScript and TypeScript: the imports a document has and the names a
module exports (issue 36, part 2; symbols.py has the Python rules and the ranking).

``import * as b from './b'`` (and ``const b = require('./b')``) binds ``b`` to a module: after
``b.`` the candidates are the names ``./b`` exports.  ``import {x, y as z} from './b'`` binds
names: at a typed word they are the document's imported names.  Only relative specifiers
(``./``, ``../``) name a workspace file, and bare ones that the workspace folder's tsconfig.json
maps (``paths``, ``baseUrl``); a package (``react``) or an absolute path names none, and neither
does a relative one that climbs above the workspace folder.  ``export * from './b'`` gives the
names of ``./b`` too (symbol_lookup.py follows it, ``MAX_REEXPORT_DEPTH`` deep).

Bounds as in symbols.py: imports are read in the first ``IMPORT_SCAN_CHARS`` of the document and
a module gives at most ``MAX_SCANNED_NAMES`` names.
"""

from __future__ import annotations

import json
import posixpath
import re

from difill.server.context.symbols import IMPORT_SCAN_CHARS, MAX_SCANNED_NAMES, Imports

IDENTIFIER = r"[A-Za-z_$][\w$]*"
SPECIFIER = r"""(['"])([^'"\n]{1,512})\2"""
# ``import <clause> from '<spec>'``; the clause may span lines (``{\n a,\n b\n}``).
IMPORT_FROM = re.compile(
    rf"^[ \t]*import[ \t]+(?:type[ \t]+)?([^;'\"]{{1,4096}}?)[ \t]*from[ \t]*{SPECIFIER}", re.M
)
NAMESPACE = re.compile(rf"\*[ \t]*as[ \t]+({IDENTIFIER})")
BRACES = re.compile(r"\{([^}]*)\}")
DEFAULT = re.compile(rf"^[ \t]*({IDENTIFIER})[ \t]*(?:,|$)")
REQUIRE = re.compile(
    rf"^[ \t]*(?:const|let|var)[ \t]+({IDENTIFIER}|\{{[^}}]{{0,2048}}\}})[ \t]*=[ \t]*require\([ \t]*{SPECIFIER}[ \t]*\)",
    re.M,
)
EXPORT_DECLARATION = re.compile(
    r"^[ \t]*export[ \t]+(?:default[ \t]+)?(?:declare[ \t]+)?(?:async[ \t]+)?(?:abstract[ \t]+)?"
    rf"(?:function\*?|class|const|let|var|interface|type|enum|namespace)[ \t]*({IDENTIFIER})",
    re.M,
)
EXPORT_LIST = re.compile(r"^[ \t]*export[ \t]*(?:type[ \t]*)?\{([^}]{0,4096})\}", re.M)
COMMONJS_EXPORT = re.compile(rf"^[ \t]*(?:module\.)?exports\.({IDENTIFIER})[ \t]*=", re.M)
# ``export * from './b'`` (the names of ./b), ``export * as b from './b'`` (the name b).
EXPORT_STAR = re.compile(rf"^[ \t]*export[ \t]*\*[ \t]*(?:as[ \t]+({IDENTIFIER})[ \t]*)?from[ \t]*{SPECIFIER}", re.M)
MAX_REEXPORT_DEPTH = 4  # ``index.ts`` -> ``./shapes/index.ts`` -> ``./circle.ts``: followed this deep
# tsconfig's ``paths``: each target is tried with every extension and index file (18 paths), so
# 20,000 targets made 360,000 candidates per resolve (issue 62 row 14).  TypeScript tries an
# alias's targets in order; real configs have one or two.
MAX_PATH_ALIASES = 64
MAX_ALIAS_TARGETS = 8
MAX_PATH_TARGETS = 64  # in all
EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


def imports_of(text: str) -> Imports:
    """The document's module bindings (namespace imports, ``require``) and imported names."""
    head = text[:IMPORT_SCAN_CHARS]
    modules: dict[str, str] = {}
    names: dict[str, tuple[str, str]] = {}
    for match in IMPORT_FROM.finditer(head):
        clause, spec = match.group(1), match.group(3)
        namespace = NAMESPACE.search(clause)
        if namespace is not None:
            modules[namespace.group(1)] = spec
        default = DEFAULT.match(clause)
        if default is not None and default.group(1) != "type":
            names[default.group(1)] = (spec, "default")
        braces = BRACES.search(clause)
        if braces is not None:
            names.update(_bound_names(braces.group(1), spec))
    for match in REQUIRE.finditer(head):
        target, spec = match.group(1), match.group(3)
        if target.startswith("{"):
            names.update(_bound_names(target.strip("{}").replace(":", " as "), spec))
        else:
            modules[target] = spec
    return Imports(modules, names)


def _bound_names(entries: str, spec: str) -> dict[str, tuple[str, str]]:
    """``a, b as c, type D`` -> {a: (spec, a), c: (spec, b), D: (spec, D)}."""
    bound: dict[str, tuple[str, str]] = {}
    for entry in entries.replace("\n", " ").split(","):
        words = [w for w in entry.split() if w != "type"]
        if len(words) == 3 and words[1] == "as":
            bound[words[2]] = (spec, words[0])
        elif len(words) == 1 and re.fullmatch(IDENTIFIER, words[0]):
            bound[words[0]] = (spec, words[0])
    return bound


def module_of_chain(chain: str, imports: Imports) -> str | None:
    """The specifier ``chain`` (a namespace or a required module) is bound to, or None."""
    return imports.modules.get(chain)


def module_paths(spec: str, current: str | None) -> list[str]:
    """Whole folder-relative paths (each starting with "/") the module ``spec`` may be, in the
    order a bundler tries them: the file as named, with each extension, then its ``index``.  An
    ESM TypeScript import names ``./b.js`` for ``b.ts``: the stem is tried too.  [] for a
    package, an absolute path, or a path above the folder."""
    if current is None or not spec.startswith(("./", "../")):
        return []
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(current), spec))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        return []
    stems = [joined]
    stem, extension = posixpath.splitext(joined)
    if extension in EXTENSIONS:
        stems.append(stem)
    paths = [joined] if extension else []
    for base in stems:
        paths += [base + ext for ext in EXTENSIONS]
        paths += [f"{base}/index{ext}" for ext in EXTENSIONS]
    return ["/" + p for p in dict.fromkeys(paths) if p != "."]


def star_exports(text: str) -> tuple[list[str], list[str]]:
    """(the specifiers ``export * from`` re-exports whole, the names ``export * as x from``
    binds) of a module."""
    whole, named = [], []
    for match in EXPORT_STAR.finditer(text):
        if match.group(1):
            named.append(match.group(1))
        else:
            whole.append(match.group(3))
    return whole, named


def path_aliases(tsconfig: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """``compilerOptions.baseUrl`` and ``paths`` of a tsconfig.json (JSON with comments and
    trailing commas, as TypeScript reads it): (baseUrl or ".", [(pattern, [targets])]).  Garbage
    reads as no aliases."""
    try:
        options = json.loads(_plain_json(tsconfig)).get("compilerOptions") or {}
    except (ValueError, AttributeError):
        return ".", []
    base = options.get("baseUrl") if isinstance(options.get("baseUrl"), str) else "."
    paths = options.get("paths") if isinstance(options.get("paths"), dict) else {}
    aliases, left = [], MAX_PATH_TARGETS
    for pattern, targets in list(paths.items())[:MAX_PATH_ALIASES]:
        if isinstance(pattern, str) and isinstance(targets, list) and left > 0:
            kept = [t for t in targets[: min(MAX_ALIAS_TARGETS, left)] if isinstance(t, str)]
            aliases.append((pattern, kept))
            left -= len(kept)
    return base, aliases


def aliased_specifiers(spec: str, base: str, aliases: list[tuple[str, list[str]]]) -> list[str]:
    """``spec`` (a bare specifier: ``@/components/x``) as the folder-relative paths tsconfig's
    ``paths`` (then ``baseUrl``) map it to, each starting with "./"; [] for a relative one."""
    if spec.startswith((".", "/")):
        return []
    found = []
    for pattern, targets in aliases:
        head, star, tail = pattern.partition("*")
        if star and spec.startswith(head) and spec.endswith(tail) and len(spec) >= len(head) + len(tail):
            middle = spec[len(head) : len(spec) - len(tail)]
            found += [t.replace("*", middle, 1) for t in targets]
        elif not star and spec == pattern:
            found += targets
    if base != ".":
        found.append(posixpath.join(base, spec))
    return ["./" + posixpath.normpath(posixpath.join(base, t)).lstrip("/") for t in found if t]


def _plain_json(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments and trailing commas made plain (strings kept)."""
    out, i, n = [], 0, min(len(text), 256 * 1024)
    while i < n:
        char = text[i]
        if char == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            i = text.find("\n", i) if text.find("\n", i) >= 0 else n
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(char)
            i += 1
    return TRAILING_COMMA.sub(r"\1", "".join(out))


TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def exported_names(text: str) -> list[str]:
    """The names a module exports, in its order: declarations, ``export {a, b as c}`` lists and
    CommonJS ``exports.x =``; at most ``MAX_SCANNED_NAMES``."""
    found: list[tuple[int, str]] = [(m.start(), m.group(1)) for m in EXPORT_DECLARATION.finditer(text)]
    for match in EXPORT_LIST.finditer(text):
        for entry in match.group(1).replace("\n", " ").split(","):
            words = entry.split()
            name = words[2] if len(words) == 3 and words[1] == "as" else words[0] if words else ""
            if name and name != "default" and re.fullmatch(IDENTIFIER, name):
                found.append((match.start(), name))
    found += [(m.start(), m.group(1)) for m in COMMONJS_EXPORT.finditer(text)]
    found += [(m.start(), m.group(1)) for m in EXPORT_STAR.finditer(text) if m.group(1)]
    names = dict.fromkeys(name for _, name in sorted(found, key=lambda f: f[0]))
    return list(names)[:MAX_SCANNED_NAMES]
