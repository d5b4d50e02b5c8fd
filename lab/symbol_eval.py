"""Names from other files (issue 36): cases where the code at the cursor starts with a symbol that
another file of the same package defines, scored through the server's suggestion path.

    python -m lab.symbol_eval [--cases 60] [--packages workspace|tuning] [--seed 0] [--kinds module,imported,typed]
    python -m lab.symbol_eval --repos NAME=GIT_DIR@COMMIT,... --kinds module,environment

Kinds, each from every package's own files (the corpus's rule: no tests), the cursor where a
user would stand and the rest of its line gone (it is still to be written):

* ``module``: right after ``alias.``, where ``alias`` is an import of a package module that
  defines the next name at its top level (``errors.█RetryError(...)``);
* ``imported``: right before a use of a name the file imports from another package module
  (``raise █TryAgain``), nothing of it typed;
* ``imported, 2 typed``: the same with its first two characters typed;
* ``environment``: right after ``alias.``, where ``alias`` imports a module of the standard
  library or an installed package, not of the project (``os.path.█join``, ``re.█compile``);
* ``word, 2 typed``: a bare name an IDE knows at the cursor, its first two characters typed: a
  local, a parameter, a global or a builtin, used earlier in the file or built in (``return
  re█sult``), not an imported one (those are ``imported``) and not a keyword argument;
* ``argument, 2 typed``: a keyword argument's name in a call (``open(path, en█coding=...)``).

The word kinds may start a line (a typed word at a line's start is typing's commonest case); the
others need code before the cursor on its line.

``--repos`` reads projects from git trees at a pinned commit instead (their ``.py`` files but
tests and docs): projects from outside every list, for figures a user can expect.  The case's
own file is taken off the disk while it is scored, so that nothing (jedi included) reads it.

Each package is indexed whole as a workspace folder by the server's own index (workspace_eval's
``PackageIndexes``), so the defining file is in the index and every request gets the server's
retrieval.  Rows: ``retrieval`` (the best draft alone, no model) and ``served`` (the editor's
default path, the model run when no sure draft).  ``named``: the shown text starts with the
symbol (the rest of it, when typed); ``exact``: the whole rest of the line.  The cases are
drawn with the seed and never chosen by how a row does on them; ``--packages tuning`` picks the
tuning packages, on which any ranking choice is made before the workspace packages are run.
"""

from __future__ import annotations

import argparse
import builtins
import keyword
import random
import re
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path

from difill.server.context import symbols
from difill.server.context.drafts import in_prose
from difill.server.suggestion_path import ServedModel
from lab.bench_timing import percentile
from lab.workspace_eval import PackageIndexes, Packages, fetch_packages

KINDS = ("module", "imported", "imported, 2 typed", "environment", "word, 2 typed", "argument, 2 typed")
USE = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*){0,4})\.([A-Za-z_]\w*)")
NAME = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\b")
ARGUMENT = re.compile(r"[(,][ \t]*\Z")  # before a keyword argument's name: ``f(``, ``f(x, ``
TYPING_RATE = 6.0  # keys a second, as `difill bench --typing` types: a typed kind's pace
DEF_LINE = re.compile(r"[ \t]*+(?:async[ \t]+)?def[ \t]")
BUILTINS = frozenset(dir(builtins))
IMPORT_STATEMENT = re.compile(r"^[ \t]*(?:from|import)[ \t]")


@dataclass(frozen=True)
class SymbolCase:
    path: str  # package/relative path
    text: str  # the file without the rest of the cursor's line
    offset: int
    expected: str  # the rest of the line that was removed
    symbol: str  # the part of the symbol still to write
    defining: str = ""  # package/relative path of the file that defines it
    typed: int = 0  # characters of the symbol typed before the cursor


def _inside(path: str) -> str:
    return path.split("/", 1)[1]


def symbol_cases(packages: Packages, per_kind: int, seed: int) -> dict[str, list[SymbolCase]]:
    found: dict[str, list[SymbolCase]] = {kind: [] for kind in KINDS}
    for files in packages.values():
        by_relative = {_inside(path): text for path, text in files if path.endswith(".py")}
        names_of = {relative: set(symbols.top_level_names(text)) for relative, text in by_relative.items()}

        for path, text in files:
            if not path.endswith(".py"):
                continue
            current = _inside(path)
            imports = symbols.imports_of(text)
            lines = text.split("\n")
            last_import = max((i for i, line in enumerate(lines) if IMPORT_STATEMENT.match(line)), default=-1)
            start = sum(len(line) + 1 for line in lines[: last_import + 1])
            for match in USE.finditer(text, start):
                module = symbols.module_of_chain(match.group(1), imports)
                target = _defining(by_relative, module, current) if module else None
                if target and match.group(2) in names_of[target]:
                    case = _case(path, text, match.start(2), match.group(2), 0)
                    if case is not None:
                        found["module"].append(replace(case, defining=_package_path(path, target)))
                elif module and not target and _in_environment(module, by_relative):
                    case = _case(path, text, match.start(2), match.group(2), 0)
                    if case is not None:
                        found["environment"].append(case)
            first_use: dict[str, int] = {}
            for match in NAME.finditer(text):
                first_use.setdefault(match.group(1), match.start())
            for match in NAME.finditer(text, start):
                name = match.group(1)
                if name not in imports.names:
                    word = _word_case(path, text, match, first_use)
                    if word is not None:
                        found[word[0]].append(word[1])
                    continue
                module, original = imports.names[name]
                target = _defining(by_relative, module, current)
                if target and original in names_of[target]:
                    for kind, typed in (("imported", 0), ("imported, 2 typed", 2)):
                        case = _case(path, text, match.start(1), name, typed)
                        if case is not None and len(name) > typed + 1:
                            found[kind].append(replace(case, defining=_package_path(path, target)))
    rng = random.Random(seed)
    return {kind: rng.sample(cases, min(per_kind, len(cases))) for kind, cases in found.items()}


def _word_case(path: str, text: str, match: re.Match, first_use: dict[str, int]) -> tuple[str, SymbolCase] | None:
    """A name not imported, 2 typed: a keyword argument's (``argument, 2 typed``) or one an IDE
    knows at the cursor (``word, 2 typed``: built in, or used before the cursor's line;
    ``first_use``: where each name first appears in ``text``)."""
    name = match.group(1)
    if len(name) < 4 or keyword.iskeyword(name):
        return None
    line_start = text.rfind("\n", 0, match.start()) + 1
    after = text[match.end() : match.end() + 2]
    is_def = DEF_LINE.match(text, line_start) is not None  # ``def f(x, timeout=3)``: a default
    if after[:1] == "=" and after != "==" and not is_def and ARGUMENT.search(text, line_start, match.start()):
        kind = "argument, 2 typed"
    elif name in BUILTINS or first_use.get(name, len(text)) < line_start:
        kind = "word, 2 typed"
    else:
        return None
    case = _case(path, text, match.start(), name, 2, at_line_start=True)
    return (kind, case) if case is not None else None


def _in_environment(module: str, by_relative: dict[str, str]) -> bool:
    """Whether ``module`` is the standard library's or an installed package's, not the project's."""
    import importlib.util

    top = module.split(".")[0]
    if (
        not top
        or module.startswith(".")
        or any(f"/{top}/" in f"/{r}" or r.endswith(f"{top}.py") for r in by_relative)
    ):
        return False
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def repos_packages(spec: str) -> Packages:
    """``NAME=GIT_DIR@COMMIT,...``: each project's ``.py`` files at that commit, tests and docs left
    out (the corpus's rule), as the eval's packages."""
    import subprocess

    packages: Packages = {}
    for item in spec.split(","):
        name, _, where = item.partition("=")
        git_dir, _, commit = where.partition("@")

        def git(*args: str, git_dir: str = git_dir) -> str:
            run = subprocess.run(
                ["git", "--git-dir", git_dir, *args], capture_output=True, text=True, check=True
            )
            return run.stdout

        files = []
        for path in git("ls-tree", "-r", "--name-only", commit).splitlines():
            parts = path.split("/")
            if not path.endswith(".py") or any(p in ("tests", "test", "docs", "doc") for p in parts[:-1]):
                continue
            if parts[-1].startswith("test_") or parts[-1] == "conftest.py":
                continue
            files.append((f"{name}/{path}", git("show", f"{commit}:{path}")))
        packages[name] = sorted(files)
    return packages


def _package_path(path: str, relative: str) -> str:
    return f"{path.split('/', 1)[0]}/{relative}"


def _defining(by_relative: dict[str, str], module: str, current: str) -> str | None:
    """The package file (relative path) that ``module`` names from ``current``, not itself."""
    for tail in symbols.module_paths(module, current):
        for relative in by_relative:
            whole = tail.startswith("/")
            if (relative == tail[1:]) if whole else (relative == tail or relative.endswith("/" + tail)):
                return relative if relative != current else None
    return None


def _case(path: str, text: str, at: int, name: str, typed: int, at_line_start: bool = False) -> SymbolCase | None:
    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", at)
    line_end = len(text) if line_end < 0 else line_end
    before = text[line_start:at]
    if IMPORT_STATEMENT.match(text[line_start:line_end]) or in_prose(before, None):
        return None
    if not (before.strip() or at_line_start):
        return None
    offset = at + typed
    return SymbolCase(path, text[:offset] + text[line_end:], offset, text[offset:line_end], name[typed:], typed=typed)


def score(
    model: ServedModel,
    cases: dict[str, list[SymbolCase]],
    indexes: PackageIndexes,
    open_defining: bool = False,
) -> dict:
    """Each kind's rows; with ``open_defining`` the defining file is open in a tab meanwhile (the
    issue found an open defining file made the answers worse)."""
    served = {"retrieval": model, "served": model}
    report: dict = {}
    for kind, kind_cases in cases.items():
        rows = {row: {"named": 0, "exact": 0, "ms": []} for row in served}
        for case in kind_cases:
            tab = None
            if open_defining:
                indexes.retrieval(case.path, case.text, case.offset)  # the package's index exists
                tab = indexes.indexes[case.path.split("/", 1)[0]], indexes.uri(case.defining)
                source = dict(indexes.packages[case.path.split("/", 1)[0]])[case.defining]
                tab[0].set_open(tab[1], "python", source)
            if case.typed:  # typed at 6 keys a second: the word's first character asked a key before
                first = case.offset - case.typed + 1
                indexes.retrieval(case.path, case.text[:first] + case.text[case.offset :], first)
            else:
                indexes.retrieval(case.path, case.text, case.offset)  # the package's files are on disk
            own = indexes.root / case.path
            hidden = own.with_name(own.name + ".eval-hidden")
            own.rename(hidden)  # the case's file, answer and all, is on no disk jedi reads
            try:
                if case.typed:
                    time.sleep(1 / TYPING_RATE)
                started = time.perf_counter()
                context = indexes.retrieval(case.path, case.text, case.offset)
                lookup_ms = (time.perf_counter() - started) * 1000
                if tab is not None:
                    tab[0].set_open(tab[1], "python", None)
                shown = model.suggest(case.text, case.offset, indexes.uri(case.path), retrieval=context)
            finally:
                hidden.rename(own)
            started = time.perf_counter()
            retrieved = model.retrieved(case.text, case.offset, indexes.uri(case.path), context)
            retrieval_ms = (time.perf_counter() - started) * 1000
            for row, text, ms in (
                ("retrieval", retrieved, retrieval_ms + lookup_ms),
                ("served", shown.text, shown.ms + lookup_ms),
            ):
                rest = text[len(case.symbol) : len(case.symbol) + 1]
                rows[row]["named"] += text.startswith(case.symbol) and not (rest.isalnum() or rest == "_")
                rows[row]["exact"] += text.strip() == case.expected.strip()
                rows[row]["ms"].append(ms)
        report[kind] = {
            row: {
                "cases": len(kind_cases),
                "named": round(r["named"] / max(1, len(kind_cases)), 4),
                "exact": round(r["exact"] / max(1, len(kind_cases)), 4),
                "p50_ms": round(statistics.median(r["ms"]), 1) if r["ms"] else None,
                "p95_ms": round(percentile(r["ms"], 95), 1) if r["ms"] else None,
            }
            for row, r in rows.items()
        }
    return report


def format_report(report: dict) -> str:
    lines = ["| kind (cases) | row | symbol named | exact rest of line | p50 / p95 ms |", "|---|---|---|---|---|"]
    for kind, rows in report.items():
        for row, r in rows.items():
            lines.append(
                f"| {kind} ({r['cases']}) | {row} | {r['named']:.1%} | {r['exact']:.1%} | {r['p50_ms']} / {r.get('p95_ms')} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from lab.quality import load_served
    from lab.training.corpus_sources import TUNING_PACKAGE_LIST, WORKSPACE_PACKAGE_LIST, read_pins

    parser = argparse.ArgumentParser(
        prog="python -m lab.symbol_eval", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--cases", type=int, default=60, help="cases per kind")
    parser.add_argument("--packages", choices=("workspace", "tuning"), default="workspace")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--open-defining", action="store_true", help="the defining file open in a tab")
    parser.add_argument(
        "--kinds",
        default="module,imported,typed",
        help="the kinds to score: module, imported, typed (2 typed), environment, word, argument",
    )
    parser.add_argument(
        "--cache", default="data/archives", help="where the fetched package archives are kept"
    )
    parser.add_argument(
        "--repos", help="NAME=GIT_DIR@COMMIT,...: projects from git trees instead of --packages"
    )
    args = parser.parse_args(argv)
    if args.repos:
        packages = repos_packages(args.repos)
    else:
        pins = read_pins(WORKSPACE_PACKAGE_LIST if args.packages == "workspace" else TUNING_PACKAGE_LIST)
        packages = fetch_packages(pins, Path(args.cache))
    short = {
        "module": "module",
        "imported": "imported",
        "typed": "imported, 2 typed",
        "environment": "environment",
        "word": "word, 2 typed",
        "argument": "argument, 2 typed",
    }
    kinds = [short[k.strip()] for k in args.kinds.split(",")]
    cases = {k: c for k, c in symbol_cases(packages, args.cases, args.seed).items() if k in kinds}
    model = load_served(None)
    model = ServedModel(model.engine, replace(model.settings))
    indexes = PackageIndexes(packages)
    try:
        print(format_report(score(model, cases, indexes, args.open_defining)))
    finally:
        indexes.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
