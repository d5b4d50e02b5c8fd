"""`difill eval` on a workspace: repository-level cases and a typing replay inside files (issue 22).

The held-out split's files are grouped by package (the ``name==version`` part of their path); a
package's other held-out files are the workspace, passed to the suggestion path as sources (the
same directory first, then the rest, by path).  A repository-level case is an eval case
(lab/training/examples.py) whose expected text names something defined (``def``, ``class``, a
module-level assignment) in another file of the package and not in its own file.  The cases are
drawn with the eval's fixed seed and never chosen by how any row does on them.

Each package is indexed as the server indexes a workspace folder (server/context/index.py, its
files written to a temporary folder), and every request gets its context as the server's would:
the draft sources (the document, then the most similar workspace files) and the snippets read
before the prefix (``snippetTokens``; the case's own file is never a source).

Each case is scored four ways through the server's path and filters (server/suggestion_path.py):
``retrieval`` is the best draft alone (the draft finder, no model), ``model`` the model without
drafts, ``seeded`` the model with draft-seeded canvas rows beside the noise-seeded ones, and
``served`` what the editor shows by default (``contextDrafts`` auto: the checkpoint's own mode).
``names`` is the share of answers that name one of the case's cross-file names.

The typing replay edits inside files: it types ``lines`` lines starting at a random line in the
middle of a file, with the rest of the file below the cursor, and charges one keystroke per
accepted suggestion (``net_saved_share``).
"""

from __future__ import annotations

import builtins
import keyword
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from difill.server.context.found import Retrieval
from difill.server.context.index import WorkspaceIndex
from difill.server.suggestion_path import ServedModel, Shown
from difill.text.syntax import parses
from lab.training.corpus import is_wanted, package_path
from lab.training.corpus_sources import Pin, archive_licence, archive_members, fetch, is_permissive
from lab.training.evaluate import ShapeScore, TypingReplay
from lab.training.examples import EVAL_SHAPES, InfillExample, sample_eval_example

ROWS = ("retrieval", "model", "seeded", "served")
# The contextDrafts mode of each row that runs a model; "served" is the editor's default (auto).
ROW_MODES = {"model": "off", "seeded": "seed", "served": "auto"}
# What another file exports: functions and classes at any depth, module-level assignments.
DEFINITION = re.compile(
    r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)|^([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)", re.M
)
# What the case's own file binds, anywhere: a name bound there is not a cross-file reference.
LOCAL_BINDING = re.compile(
    r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)"  # def / class
    r"|^[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)"  # assignment
    r"|(?:\bfor|,)[ \t]*([A-Za-z_]\w*)[ \t]*(?=\bin\b|,)"  # loop target
    r"|\bas[ \t]+([A-Za-z_]\w*)",  # with / except / import ... as
    re.M,
)
PARAMETERS = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+\w+[ \t]*\(([^)]*)\)", re.M)
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
COMMON = set(dir(builtins)) | set(keyword.kwlist) | {"self", "cls", "args", "kwargs"}
COMMON |= {name for kind in (str, bytes, list, dict, set, int, float, object) for name in dir(kind)}
MIN_NAME = 4  # a cross-file name at least this long: "x" or "df" defined elsewhere says little
# Strings and comments: their words are prose, not references (an f-string's fields are lost too).
PROSE = re.compile(r"#[^\n]*|\"\"\"[\s\S]*?(?:\"\"\"|$)|'\'\'[\s\S]*?(?:'\'\'|$)|\"[^\"\n]*\"?|'[^'\n]*'?")


@dataclass
class WorkspaceCase:
    example: InfillExample
    path: str
    names: set[str]  # names in the expected text defined in another file of the package


def package_of(path: str) -> str:
    return path.split("/", 1)[0]


def definitions(text: str) -> set[str]:
    return {m.group(1) or m.group(2) for m in DEFINITION.finditer(text)}


def in_prose(prefix: str) -> bool:
    """The cursor is in a docstring (an odd number of triple quotes before it) or a comment."""
    line = prefix[prefix.rfind("\n") + 1 :]
    return (prefix.count('"""') + prefix.count("'''")) % 2 == 1 or "#" in line


def local_bindings(text: str) -> set[str]:
    """Names the file binds itself (definitions, assignments, loop targets, ``as`` names, parameters)."""
    names = {next(g for g in m.groups() if g) for m in LOCAL_BINDING.finditer(text)}
    for params in PARAMETERS.finditer(text):
        names.update(IDENTIFIER.findall(re.sub(r"[:=][^,]*", "", params.group(1))))
    return names


Packages = dict[str, list[tuple[str, str]]]  # package -> its files, (path, text) sorted by path


def group_packages(docs: Iterable[tuple[str, str]]) -> Packages:
    """(path, text) documents by package (the ``name==version`` part of the path); packages of one
    file are left out.  The eval's own packages come from ``fetch_packages``."""
    packages: Packages = {}
    for path, text in docs:
        packages.setdefault(package_of(path), []).append((path, text))
    return {name: sorted(files) for name, files in sorted(packages.items()) if len(files) >= 2}


def fetch_packages(pins: list[Pin], cache: Path, log=print) -> Packages:
    """The eval's workspaces: whole packages that are not in the corpus, so the model never trained
    on a line of them.  Each pinned archive is fetched (hash-checked) as the corpus's are, its
    licence must be permissive, and its files are chosen by the corpus's own rule (no tests)."""
    packages: Packages = {}
    for pin in pins:
        try:
            archive = fetch(pin, cache)
        except OSError as err:  # no network: PyPI's index gives each archive's sha256, even for a cached one
            raise RuntimeError(f"could not fetch {pin.name}=={pin.version} from PyPI ({err}): the workspace "
                               "cases need PyPI's simple index") from err  # fmt: skip
        licence = archive_licence(archive)
        if not is_permissive(licence):
            raise RuntimeError(f"{pin.name}=={pin.version}: licence {licence!r} is not permissive")
        files = []
        for member, data in archive_members(archive):
            rel = package_path(member)
            if is_wanted(rel, len(data)):
                text = data.decode("utf-8", "replace").replace("\r\n", "\n")
                files.append((f"{pin.name}=={pin.version}/{rel}", text))
        packages[f"{pin.name}=={pin.version}"] = sorted(files)
        log(f"workspace {pin.name}=={pin.version} ({licence}): {len(files)} files")
    return packages


def workspace_cases(packages: Packages, per_shape: int, seed: int) -> dict[str, list[WorkspaceCase]]:
    defined = {name: [(p, definitions(t)) for p, t in files] for name, files in packages.items()}
    files = [
        (name, path, text) for name, pkg in packages.items() for path, text in pkg if text.count("\n") >= 10
    ]
    rng = random.Random(seed)
    own_bindings: dict[str, set[str]] = {}
    cases: dict[str, list[WorkspaceCase]] = {}
    for shape in EVAL_SHAPES:
        out: list[WorkspaceCase] = []
        attempts = 0
        while len(out) < per_shape and attempts < per_shape * 400 and files:
            attempts += 1
            package, path, text = rng.choice(files)
            ex = sample_eval_example(text, rng, shape)
            if ex is None or not ex.middles[0].strip() or in_prose(ex.prefix):
                continue
            if path not in own_bindings:
                own_bindings[path] = local_bindings(text)
            own = own_bindings[path]
            elsewhere = set().union(*(d for p, d in defined[package] if p != path))
            used = set(IDENTIFIER.findall(PROSE.sub(" ", ex.middles[0])))
            names = {n for n in used & elsewhere - own - COMMON if len(n) >= MIN_NAME}
            if names:
                out.append(WorkspaceCase(ex, path, names))
        cases[shape] = out
    return cases


class PackageIndexes:
    """One workspace index per package, over its held-out files written to a temporary folder:
    the eval retrieves exactly as the server does for a document in that folder."""

    def __init__(self, packages: Packages) -> None:
        self.packages = packages
        self.root = Path(tempfile.mkdtemp(prefix="difill-workspace-eval-"))
        self.indexes: dict[str, WorkspaceIndex] = {}

    def uri(self, path: str) -> str:
        return (self.root / path).as_uri()

    def retrieval(self, path: str, text: str, offset: int) -> Retrieval:
        """The context of a cursor at ``offset`` of ``text``, the live text of the file at ``path``."""
        package = package_of(path)
        index = self.indexes.get(package)
        if index is None:
            for file_path, file_text in self.packages[package]:
                (self.root / file_path).parent.mkdir(parents=True, exist_ok=True)
                (self.root / file_path).write_text(file_text, encoding="utf-8")
            index = self.indexes[package] = WorkspaceIndex()
            index.start()
            index.add_folder(str(self.root / package))
            if not index.wait_idle(120):
                raise RuntimeError(f"indexing {package} took over 120 s")
        retrieval = index.retrieve(self.uri(path), text, offset, "python")
        # The file on disk holds the answer: no source or snippet may come from it.
        own = str(self.root / path)
        if any(source in (own, self.uri(path)) for source, _ in retrieval.sources) or any(
            f"{package}/{s.path}" == path for s in retrieval.snippets
        ):
            raise AssertionError(f"the eval's own file {path} leaked into its context")
        return retrieval

    def close(self) -> None:
        for index in self.indexes.values():
            index.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class RowScore(ShapeScore):
    named: int = 0  # answers naming one of the case's cross-file names
    from_draft: int = 0  # seeded: the engine's best candidate came from a draft row
    verified: int = 0  # seeded: a draft was kept as it stands and the fill ended there

    def add_case(
        self, case: WorkspaceCase, text: str, forwards: int, tpf: float, ms: float, original_parses: bool
    ):
        self.add(case.example, text, forwards, tpf, ms, original_parses)
        self.named += any(re.search(rf"\b{re.escape(n)}\b", text) for n in case.names)

    def add_seeded(self, case: WorkspaceCase, shown: Shown, original_parses: bool):
        self.add_case(case, shown.text, shown.forwards, shown.tokens_per_forward, shown.ms, original_parses)
        best = shown.result.candidates[0] if shown.result.candidates else None
        self.from_draft += best is not None and best.source != "model"
        self.verified += shown.result.stats.draft_verified

    def summary(self) -> dict:
        share = {"names": self.named, "from_draft": self.from_draft, "verified": self.verified}
        return {**super().summary(), **{k: round(v / max(1, self.cases), 4) for k, v in share.items()}}


def row_models(model: ServedModel) -> dict[str, ServedModel]:
    """One ServedModel per row that runs a model, sharing ``model``'s engine and settings."""
    return {
        row: ServedModel(model.engine, replace(model.settings, context_drafts=mode))
        for row, mode in ROW_MODES.items()
    }


def score_workspace(
    models: dict[str, ServedModel], cases: dict[str, list[WorkspaceCase]], indexes: PackageIndexes
) -> dict:
    """Per shape, every row on the same cases; also the draft rows' share of the answers."""
    report: dict = {row: {} for row in ROWS}
    for shape, shape_cases in cases.items():
        scores = {row: RowScore() for row in ROWS}
        for case in shape_cases:
            ex = case.example
            text, offset = ex.prefix + ex.suffix, len(ex.prefix)
            uri = indexes.uri(case.path)
            original = bool(parses(ex.document, "python"))
            started = time.perf_counter()
            context = indexes.retrieval(case.path, text, offset)
            lookup_ms = (time.perf_counter() - started) * 1000  # the server looks up on each request too
            for row, served in models.items():
                shown = served.suggest(text, offset, uri, retrieval=context)
                shown = replace(shown, ms=shown.ms + lookup_ms, retrieval_ms=shown.retrieval_ms + lookup_ms)
                scores[row].add_seeded(case, shown, original)
                if row == "model":  # retrieval alone: the best draft as the filters show it
                    started = time.perf_counter()
                    retrieved = served.retrieved(text, offset, uri, context)
                    ms = (time.perf_counter() - started) * 1000 + lookup_ms
                    scores["retrieval"].add_case(case, retrieved, 0, 0.0, ms, original)
        for row in ROWS:
            report[row][shape] = scores[row].summary()
    return report


Suggest = Callable[[str, int, str], tuple[str, float]]  # (text, offset, path) -> (shown text, ms)


def replay_spots(packages: Packages, files: int, lines: int, seed: int) -> list[tuple[str, str, str, str]]:
    """(path, text before, text to type, rest of the file) for ``files`` files."""
    candidates = [
        (path, text, pkg) for pkg in packages.values() for path, text in pkg if text.count("\n") >= 40
    ]
    rng = random.Random(seed)
    spots = []
    for path, text, _ in rng.sample(candidates, min(files, len(candidates))):
        starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        first = rng.randrange(len(starts) // 4, 3 * len(starts) // 4)
        last = min(first + lines, len(starts) - 1)
        spots.append((path, text[: starts[first]], text[starts[first] : starts[last]], text[starts[last] :]))
    return spots


def typing_replay_inside(suggest: Suggest, spots: list) -> dict:
    """Type each spot's lines with the rest of its file below; Tab when the suggestion matches."""
    replay = TypingReplay()
    for path, before, target, after in spots:
        replay.type_target(
            target, lambda typed, b=before, a=after, p=path: suggest(b + typed + a, len(b + typed), p)
        )
    return replay.summary()


def replay_rows(models: dict[str, ServedModel], spots: list, indexes: PackageIndexes) -> dict:
    any_model = next(iter(models.values()))

    def retrieval(text, offset, path):
        started = time.perf_counter()
        context = indexes.retrieval(path, text, offset)
        shown = any_model.retrieved(text, offset, indexes.uri(path), context)
        return shown, (time.perf_counter() - started) * 1000

    def served(which: ServedModel) -> Suggest:
        def suggest(text, offset, path):
            started = time.perf_counter()
            context = indexes.retrieval(path, text, offset)
            lookup_ms = (time.perf_counter() - started) * 1000
            shown = which.suggest(text, offset, indexes.uri(path), retrieval=context)
            return shown.text, lookup_ms + shown.ms

        return suggest

    return {"retrieval": typing_replay_inside(retrieval, spots),
            **{row: typing_replay_inside(served(m), spots) for row, m in models.items()}}  # fmt: skip


def format_workspace(report: dict) -> str:
    rows = ["| shape | row | exact match | edit sim. | names | empty | forwards | tokens/forward | p50 ms | "
            "from a draft | draft verified |", "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    cases = report.get("cases", {})
    for shape in cases:
        for row in ROWS:
            s = cases[shape][row]
            rows.append(f"| {shape} ({s['cases']}) | {row} | {s['exact_match']:.1%} | {s['edit_similarity']:.3f} | "
                        f"{s['names']:.1%} | {s['empty_share']:.1%} | {s['mean_forwards']} | "
                        f"{s['tokens_per_forward']} | {s['p50_ms']} | "
                        + (f"{s['from_draft']:.1%} | {s['verified']:.1%} |" if row != "retrieval" else "| |"))  # fmt: skip
    for row, t in report.get("typing", {}).items():
        rows.append(f"\n{row} typing inside files: {t['net_saved_share']:.1%} net of one keystroke per accept "
                    f"({t['saved_share']:.1%} gross) of {t['characters']} characters, {t['accepted']} accepted "
                    f"of {t['requests']} requests, {t['files']} files, p50 {t['p50_ms']} ms")  # fmt: skip
    return "\n".join(rows)


def evaluate_workspace(model: ServedModel, packages: Packages, per_shape: int, seed: int, typing_files: int,
                       typing_lines: int) -> dict:  # fmt: skip
    """The rows of ``ROWS`` on repository-level cases, with ``model``'s engine and settings."""
    models = row_models(model)
    cases = workspace_cases(packages, per_shape, seed)
    indexes = PackageIndexes(packages)
    try:
        scored = score_workspace(models, cases, indexes)
        report: dict = {"cases": {shape: {row: scored[row][shape] for row in ROWS} for shape in cases}}
        if typing_files:
            spots = replay_spots(packages, typing_files, typing_lines, seed)
            report["typing"] = replay_rows(models, spots, indexes)
    finally:
        indexes.close()
    return report
