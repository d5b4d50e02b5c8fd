"""Import drafts (Python): an import line being typed, completed with the names the document uses
but never binds, from the workspace module that defines them - what an editor's auto-import knows.

A name used below an import line that nothing in the file binds is, in working code, imported
somewhere; when a workspace module defines it at its top level, that module is the likely one.
So on a line that starts ``from``, the typed text is completed to ``from <module> import <names>``
where ``<module>`` is a workspace module written the way the typed text starts (relative:
``.models``; absolute: ``pkg.models``) that defines the most of the document's free names.

Text only, no parsing: the free names come from line rules that over-count a little (a name bound
in a way the rules miss looks free); a draft needs a workspace definition of the name at a
module's top level and a module path that continues what was typed, so a miscount rarely shows.
"""

from __future__ import annotations

import builtins
import functools
import keyword
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

FREE_SCAN_CHARS = (
    64 * 1024
)  # of the document, around the cursor, scanned for free names (linear: a bound on time)
MAX_FREE_NAMES = 256  # looked up in the index
MAX_IMPORTED = 8  # names on one drafted import line
MIN_NAME = 2

# An import line as typed so far: ``from <module>`` (maybe partial) and, once the module is
# written, `` import <names so far>``.  A parenthesized list is left alone (its lines follow).
# rest: "", " ", " im"; a bare "from" (no space yet) is a line whose module is still to come.
FROM_LINE = re.compile(r"^[ \t]*from(?:[ \t]+(?P<module>[\w.]*)(?P<rest>[ \t]+\w*)?|(?P<bare>))$")
IMPORT_LIST = re.compile(
    r"^[ \t]*from[ \t]+(?P<module>[\w.]+)[ \t]+import[ \t]+(?P<names>(?:\w+[ \t]*,[ \t]*)*)(?P<partial>\w*)$"
)

IDENTIFIER = re.compile(r"(?<![\w.])([A-Za-z_]\w*)(?![\w])")
# Strings and comments: their words are not references.
PROSE = re.compile(
    r"#[^\n]*|\"\"\"[\s\S]*?(?:\"\"\"|$)|'''[\s\S]*?(?:'''|$)|\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?"
)
# Every repetition that can run past its line is bounded: unbounded, a 64 KB line of "for for for"
# or "lambda lambda" made each match scan to the line's end, quadratic (issue 37, item 6).
BINDINGS = re.compile(
    r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)"  # def / class
    r"|^[ \t]*((?:\w+[ \t]*,[ \t]*)*\w+)[ \t]*(?::[^=\n]*)?=(?!=)"  # assignment, tuple targets
    r"|\bfor[ \t]+([\w, \t()]{1,64}?)[ \t]+in\b"  # loop and comprehension targets
    r"|\bas[ \t]+(\w+)"  # with / except / import ... as
    r"|^[ \t]*(?:global|nonlocal)[ \t]+([\w, \t]+)"
    r"|(?<!\w)(\w+)[ \t]*:="  # walrus (from a word's start: linear in a long run of them)
    r"|\blambda([^:\n]{0,128}):",
    re.M,
)
# A module's ``__all__`` names what it exports: each listed name is bound in it, so a listed name
# the module does not bind is imported - the names a package's ``__init__.py`` re-exports.
ALL_LIST = re.compile(r"^__all__[ \t]*\+?=[ \t]*[\[(]([^\])]*)", re.M)
ALL_ENTRY = re.compile(r"""(["'])([A-Za-z_]\w*)\1""")
# A quoted annotation, as code under ``if TYPE_CHECKING:`` writes them: ``job: "Job"``, ``-> "Job"``
# (after a name and a colon, or an arrow: ``_blanked``).
QUOTED_TYPE = re.compile(r"""(["'])[\w. \[\],|]+\1""")
F_STRING_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")  # a literal brace, or a replacement field
IMPORTED = re.compile(
    r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+(\([^)]{0,8192}\)?|[^\n]*)|^[ \t]*import[ \t]+([^\n]*)", re.M
)
PARAMETERS = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+\w+[ \t]*\(([^)]{0,512})\)", re.M)
TOP_IMPORT = re.compile(r"(?:from|import)[ \t]+[\w.]")
RELATIVE_IMPORT = re.compile(r"^[ \t]*from[ \t]+\.", re.M)
IMPORT_ROOT = re.compile(r"^[ \t]*(?:from|import)[ \t]+(\w+)", re.M)
KEYWORD_ARGUMENT = re.compile(r"(?<![\w.])([A-Za-z_]\w*)[ \t]*=(?!=)")
NOT_FREE = (
    set(dir(builtins))
    | set(keyword.kwlist)
    | set(keyword.softkwlist)
    | {"self", "cls", "__file__", "__name__"}
)


@dataclass(frozen=True)
class TypedImport:
    """What the cursor's import line holds so far."""

    module: str  # the module as typed ("" when none yet; may be partial when ``listing`` is False)
    listing: bool  # the module is written and ``import`` after it: names are being typed
    typed_names: tuple[str, ...]  # names already listed before the one being typed
    partial: str  # the name being typed when listing; the rest of the line otherwise ("", " ", " im")
    fresh: bool = False  # an empty line among the imports: the whole line is drafted
    bare: bool = False  # the line is "from" so far: the draft starts with the space after it


def typed_import(line_before: str, among_imports: bool = False) -> TypedImport | None:
    """The import the line holds up to the cursor, or None when it is not a ``from`` import.  An
    empty line ``among_imports`` (``between_imports``) is a fresh one."""
    if line_before == "" and among_imports:
        return TypedImport("", False, (), "", fresh=True)
    listed = IMPORT_LIST.match(line_before)
    if listed:
        names = tuple(n.strip() for n in listed["names"].split(",") if n.strip())
        return TypedImport(listed["module"], True, names, listed["partial"])
    started = FROM_LINE.match(line_before)
    if started and "import".startswith((started["rest"] or "").strip()):
        return TypedImport(started["module"] or "", False, (), started["rest"] or "",
                           bare=started["bare"] is not None)  # fmt: skip
    return None


def between_imports(text: str, line_start: int, line_end: int) -> bool:
    """The line from ``line_start`` to ``line_end`` sits next to a top-level import line (the
    nearest non-blank line above or below it is one): a new line there is likely another."""
    return any(
        TOP_IMPORT.match(line) for line in (_line_above(text, line_start), _line_below(text, line_end))
    )


def _line_above(text: str, line_start: int, blank_lines: int = 8) -> str:
    """The nearest non-blank line ending before ``line_start`` ("" past a few blank lines)."""
    end = line_start - 1
    for _ in range(blank_lines + 1):
        if end < 0:
            return ""
        start = text.rfind("\n", 0, end) + 1
        if text[start:end].strip():
            return text[start:end]
        end = start - 1
    return ""


def _line_below(text: str, line_end: int, blank_lines: int = 8) -> str:
    """The nearest non-blank line starting at or after ``line_end``."""
    start = line_end
    for _ in range(blank_lines + 1):
        if start >= len(text):
            return ""
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if text[start:end].strip():
            return text[start:end]
        start = end + 1
    return ""


@functools.lru_cache(maxsize=8)
def free_names(text: str) -> tuple[str, ...]:
    """Names ``text`` (Python) uses but does not bind, in the order of their first use.  Cached:
    while an import line is typed, the rest of the document (``text``) stays the same."""
    code = PROSE.sub(lambda m: _blanked(text, m), text)
    exported = [
        (listed.start(1) + entry.start(2), entry.group(2))
        for listed in ALL_LIST.finditer(text)
        for entry in ALL_ENTRY.finditer(listed.group(1))
    ]
    if exported:  # the strings were blanked above: each listed name becomes a use where it stands
        pieces, done = [], 0
        for at, name in exported:
            pieces += [code[done:at], name]
            done = at + len(name)
        code = "".join(pieces) + code[done:]
    bound: set[str] = set()
    for match in BINDINGS.finditer(code):
        for group in match.groups():
            if group:
                bound.update(re.findall(r"[A-Za-z_]\w*", re.sub(r"=[^,]*", "", group)))
    for match in IMPORTED.finditer(code):
        names = match.group(1) if match.group(1) is not None else match.group(2)
        for part in names.strip("() \t").split(","):
            words = part.split()
            if words:  # "a as b" binds b, "a.b" binds a
                bound.add((words[-1] if len(words) == 3 and words[1] == "as" else words[0]).split(".")[0])
    for params in PARAMETERS.finditer(code):
        bound.update(re.findall(r"[A-Za-z_]\w*", re.sub(r"[:=][^,]*", "", params.group(1))))
    code = IMPORTED.sub(lambda m: " " * len(m.group()), code)  # module paths are not uses
    keyword_arguments = {m.start(1) for m in KEYWORD_ARGUMENT.finditer(code)}
    seen: dict[str, None] = {}
    for match in IDENTIFIER.finditer(code):
        name = match.group(1)
        if name.lower() in ("rb", "br", "rf", "fr") and text[match.end(1) : match.end(1) + 1] in ("'", '"'):
            continue  # a string's prefix (rf"...")
        if match.start(1) in keyword_arguments or name in bound or name in NOT_FREE or len(name) < MIN_NAME:
            continue
        seen.setdefault(name)
    return tuple(seen)


def _blanked(text: str, prose: re.Match[str]) -> str:
    """A string or comment as spaces, of its length; an f-string keeps its replacement fields
    (``f"{datetime_repr(x)}"`` uses ``datetime_repr``), ``{{`` being a literal brace."""
    literal = prose.group()
    before = text[max(0, prose.start() - 80) : prose.start()].rstrip(" \t")
    annotated = before.endswith("->") or (before.endswith(":") and _is_word_end(before[:-1].rstrip(" \t")))
    if annotated and QUOTED_TYPE.fullmatch(literal):
        return literal  # a quoted annotation ("Job"): its names are uses
    start = prose.start()
    while start > 0 and prose.start() - start < 2 and text[start - 1] in "fFrRbBuU":
        start -= 1  # the string's prefix letters
    word_before = start > 0 and _is_word_end(text[start - 1])
    if literal[0] == "#" or word_before or "f" not in text[start : prose.start()].lower():
        return " " * len(literal)
    pieces, done = [], 0
    for field in F_STRING_FIELD.finditer(literal):
        inside = field.group(1)
        pieces += [" " * (field.start() - done), "  " if inside is None else f" {inside} "]
        done = field.end()
    return "".join(pieces) + " " * (len(literal) - done)


def _is_word_end(text: str) -> bool:
    return bool(text) and (text[-1].isalnum() or text[-1] == "_")


def module_of(relative: str) -> list[str]:
    """A workspace file's module as parts: ``pkg/sub/mod.py`` -> [pkg, sub, mod]; a package's
    ``__init__.py`` is the package itself."""
    parts = relative[: -len(".py")].split("/") if relative.endswith(".py") else relative.split("/")
    return parts[:-1] if parts and parts[-1] == "__init__" else parts


def module_forms(target: str, current: str | None) -> list[str]:
    """How the file ``target`` may be imported from the file ``current`` (both relative to one
    workspace folder): relatively, then by each tail of its path, longest first (the folder may
    hold a ``src/`` or a project directory above the top package, which the path alone does not
    tell)."""
    parts = module_of(target)
    forms = []
    if current is not None:
        here = current.split("/")[:-1]  # the current file's package
        shared = 0
        while shared < min(len(here), len(parts)) and here[shared] == parts[shared]:
            shared += 1
        forms.append("." * (len(here) - shared + 1) + ".".join(parts[shared:]))
    forms += [".".join(parts[start:]) for start in range(len(parts)) if parts[start].isidentifier()]
    return forms


@dataclass(frozen=True)
class ImportTarget:
    form: str  # how the module is written after ``from``
    names: tuple[str, ...]  # the document's free names the module defines, first use first
    preference: int  # among forms of one module: lower is likelier the document's style
    # The names that can pick this module when none is typed: not defined at the top of many
    # modules ("log", "T", a backend's "softmax"); a typed module takes all of ``names``.
    telling: tuple[str, ...] = ()


def import_targets(
    defined: dict[str, list[str]], current: str | None, document: str, common: Collection[str] = ()
) -> list[ImportTarget]:
    """The import forms of each workspace file in ``defined`` (relative path -> the document's free
    names it defines at its top level), each with how well it fits the document's own imports:
    relative forms where the document imports relatively, absolute ones from the roots it imports.
    ``common`` names are defined in too many modules to pick one (``ImportTarget.telling``)."""
    relative_style = RELATIVE_IMPORT.search(document) is not None
    roots = set(IMPORT_ROOT.findall(document))
    targets = []
    for path, names in defined.items():
        telling = tuple(n for n in names if n not in common)
        for rank, form in enumerate(module_forms(path, current)):
            if form.startswith("."):
                preference = 0 if relative_style else 2
            else:
                preference = 1 if form.split(".")[0] in roots else 3 + rank
            targets.append(ImportTarget(form, tuple(names), preference, telling))
    return targets


def import_order(name: str) -> tuple[int, str]:
    """Names on an import line as isort and ruff order them by default: constants, classes, then
    the rest, each alphabetically."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower()


def import_completion(typed: TypedImport, targets: list[ImportTarget], free: Sequence[str]) -> str | None:
    """The rest of the import line, from ``targets`` (``import_targets``); ``free``
    (``free_names``) gives the names' order of first use.  None when nothing fits."""
    if typed.listing or typed.partial:  # the module is written: its names
        names = list(dict.fromkeys(n for t in targets if t.form == typed.module for n in t.names))
        if typed.listing:
            left = sorted(
                (n for n in names if n not in typed.typed_names and n != typed.partial), key=import_order
            )
            started = [n for n in left if n.startswith(typed.partial)]
            if not started:
                return None
            # The name being typed, then the ones that sort after it: a sorted line goes on with
            # them (those before it would have been written first).
            after = [n for n in left if n != started[0] and import_order(n) > import_order(started[0])]
            names = [started[0], *after]
            return started[0][len(typed.partial) :] + "".join(", " + n for n in names[1:MAX_IMPORTED])
        keyword_left = "import"[len(typed.partial.strip()) :]
        return (
            keyword_left + " " + ", ".join(sorted(names[:MAX_IMPORTED], key=import_order)) if names else None
        )
    fitting = [t for t in targets if t.form.startswith(typed.module) and t.telling]
    if not fitting:
        return None
    # The module defining the most free names, then the one used first, in the document's style.
    first_use = {name: i for i, name in enumerate(free)}
    best = min(
        fitting, key=lambda t: (-len(t.telling), min(first_use.get(n, 0) for n in t.telling), t.preference)
    )
    names = sorted(best.names[:MAX_IMPORTED], key=import_order)
    line = best.form[len(typed.module) :] + " import " + ", ".join(names)
    return "from " + line if typed.fresh else " " + line if typed.bare else line
