"""Rest of line at a fresh cursor (issue 46, part 3): real projects nobody here wrote, through
`difill serve` as an editor drives it, with no copy of the case's file anywhere.

    python -m lab.fresh_cursor --repos NAME=GIT_DIR@COMMIT,... [--cases 30] [--seed 0]

A case is a line of code in one of a project's source files (Python, Go, TypeScript; no tests,
docs, examples or generated declarations), cut at a token boundary after its first token: the
user has typed the start of the line and stands at its end, and the rest of the line is to be
written.  The rest of the file below stays (a fresh cursor in a file being edited).

Each group of files gets a server of its own, started on the project's tree with that group's
files taken off the disk first, so the workspace index, jedi and every open tab lack them.  Each
case's file is opened with the line cut (``didOpen``), inline completion is asked once at the
cursor (Automatic, as ghost text is asked), and the file is closed again: no earlier request or
open copy helps the next case.

Rows: ``served`` (the server's default settings and the shipped model, or ``--model``) and the
no-model ``copy rule`` (the remainder of the nearest other line of the shown file that starts
with the same typed text).  ``exact``: the cursor's line after the first item is applied equals
the original line (trailing spaces aside); ``shown``: any item at all.  Cases are drawn with the
seed from file and line order alone, before any row runs, and never chosen by how a row does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from lab.bench_server import position_of
from lab.next_edit_eval import offset_of, wilson
from lab.serve_client import ServeClient, serve_args

LANGUAGES = {".py": "python", ".go": "go", ".ts": "typescript", ".tsx": "typescriptreact"}
# Folders whose files are not the project's code as a user writes it.
SKIPPED = re.compile(r"(^|/)(tests?|testing|docs?|examples?|testdata|__tests__|benchmarks?|scripts|vendor)/")
SKIPPED_FILE = re.compile(
    r"(_test\.go|\.test\.tsx?|\.spec\.tsx?|\.d\.ts|(^|/)test_[^/]*\.py|(^|/)conftest\.py)$"
)
MAX_FILE_BYTES = 200_000
# A token: a name, a number, a run of one symbol (``==``, ``->`` as two), or a string start.
TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\S")
COMMENT_START = ("#", "//", "/*", "*", '"""', "'''")
MIN_LINE = 8  # a line with at least this many characters after its indentation
INDEX_TITLE = "indexing the workspace"
WARM_UP = {"python": "import os\n\npath = os.", "go": "package main\n\nfunc main() {\n\t", "typescript": "const x = "}


@dataclass(frozen=True)
class FreshCase:
    project: str
    path: str  # relative to the project's root
    language: str
    text: str  # the file with the cursor's line cut at the cursor
    offset: int  # the cursor
    line: str  # the whole original line (what exact compares against)


@dataclass
class Project:
    name: str
    root: Path  # the tree at its commit, written out
    files: dict[str, str] = field(default_factory=dict)  # relative path -> text


def export(name: str, git_dir: str, commit: str, into: Path) -> Project:
    """The project's tree at ``commit`` under ``into/name`` (git archive: no history, no .git)."""
    root = into / name
    root.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "--git-dir", git_dir, "archive", commit], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    project = Project(name, root)
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if (
            path.suffix in LANGUAGES
            and path.is_file()
            and not path.is_symlink()
            and not SKIPPED.search(relative)
            and not SKIPPED_FILE.search(relative)
            and path.stat().st_size <= MAX_FILE_BYTES
        ):
            project.files[relative] = path.read_text(encoding="utf-8", errors="replace")
    return project


def _in_block_string(lines: list[str], index: int) -> bool:
    """Whether line ``index`` is inside a triple-quoted string or a /* */ comment (a count of
    the openers above: enough for choosing lines, not a parser)."""
    above = "\n".join(lines[:index])
    return (above.count('"""') + above.count("'''")) % 2 == 1 or above.count("/*") > above.count("*/")


def cases_of(project: Project, per_file: int, rng: random.Random) -> list[FreshCase]:
    """Up to ``per_file`` cases from each file, the lines and cursors drawn with ``rng``."""
    cases = []
    for relative, text in project.files.items():
        lines = text.split("\n")
        starts = [0]
        for line in lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        eligible = []
        for i, line in enumerate(lines):
            code = line.strip()
            if len(code) < MIN_LINE or code.startswith(COMMENT_START) or _in_block_string(lines, i):
                continue
            eligible.append(i)
        for i in sorted(rng.sample(eligible, min(per_file, len(eligible)))):
            line = lines[i]
            indent = len(line) - len(line.lstrip())
            # Cursors after the first token and before the last one, at token starts.
            tokens = [m.start() for m in TOKEN.finditer(line, indent)]
            if len(tokens) < 3:
                continue
            cut = rng.choice(tokens[1:-1])
            at = starts[i] + cut
            cut_text = text[:at] + text[starts[i] + len(line) :]
            language = LANGUAGES[Path(relative).suffix]
            cases.append(FreshCase(project.name, relative, language, cut_text, at, line))
    return cases


def draw_cases(project: Project, cases: int, per_file: int, seed: int) -> list[FreshCase]:
    """The project's cases for ``seed``: up to ``per_file`` a file, ``cases`` of them drawn
    (lab/adapt.py draws the same ones to hold their files out of the training text)."""
    rng = random.Random(f"{seed}:{project.name}")
    drawn = cases_of(project, per_file, rng)
    return rng.sample(drawn, min(cases, len(drawn)))


def line_after(case: FreshCase, edit_start: int, edit_end: int, new: str) -> str:
    """The cursor's line once ``new`` replaced [edit_start, edit_end) of the case's text."""
    text = case.text[:edit_start] + new + case.text[edit_end:]
    start = text.rfind("\n", 0, case.offset) + 1
    end = text.find("\n", start)
    return text[start : len(text) if end < 0 else end]


def is_exact(case: FreshCase, line: str) -> bool:
    return line.rstrip() == case.line.rstrip()


def copy_rule(case: FreshCase) -> str:
    """The remainder of the nearest other line of the shown file that starts with what the
    cursor's line holds so far (indentation aside); nothing when no line does."""
    start = case.text.rfind("\n", 0, case.offset) + 1
    typed = case.text[start : case.offset].lstrip()
    here = case.text.count("\n", 0, case.offset)
    best: tuple[int, str] | None = None
    for number, other in enumerate(case.text.split("\n")):
        stripped = other.lstrip()
        if number == here or not stripped.startswith(typed) or len(stripped) == len(typed):
            continue
        if best is None or abs(number - here) < best[0]:
            best = (abs(number - here), stripped[len(typed) :])
    return best[1] if best else ""


class FreshClient(ServeClient):
    """`difill serve` over stdio on one workspace folder, its index waited for."""

    def __init__(self) -> None:
        super().__init__("difill-fresh-cursor")
        self.indexed = asyncio.Event()
        self._index_tokens: set[str] = set()

        @self.client.feature(types.PROGRESS)
        def on_progress(params) -> None:
            value = params.value if hasattr(params, "value") else params.get("value", {})
            value = value if isinstance(value, dict) else getattr(value, "__dict__", {})
            token = str(params.token if hasattr(params, "token") else params.get("token"))
            if value.get("kind") == "begin" and INDEX_TITLE in str(value.get("title", "")):
                self._index_tokens.add(token)
            elif value.get("kind") == "end" and token in self._index_tokens:
                self.indexed.set()

    async def start(self, root: Path, model_dir: str | None, settings: dict[str, Any] | None = None) -> None:
        capabilities = types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                inline_completion=types.InlineCompletionClientCapabilities(),
                synchronization=types.TextDocumentSyncClientCapabilities(),
            ),
            window=types.WindowClientCapabilities(work_done_progress=True),
        )
        folder = types.WorkspaceFolder(uri=root.as_uri(), name=root.name)
        params = types.InitializeParams(
            capabilities=capabilities,
            process_id=None,
            workspace_folders=[folder],
            initialization_options=settings or {},
        )
        await self.start_serve(serve_args(model_dir), params)
        await asyncio.wait_for(self.ready.wait(), 300)
        await asyncio.wait_for(self.indexed.wait(), 300)

    async def ask(self, root: Path, case: FreshCase) -> tuple[str, float, bool]:
        """Open the cut file, ask once at the cursor, close it: (the cursor's line after the
        first item, the round trip in ms, whether any item came)."""
        uri = (root / case.path).as_uri()
        item = types.TextDocumentItem(uri=uri, language_id=case.language, version=1, text=case.text)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        params = types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position_of(case.text, case.offset),
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
        )
        started = time.perf_counter()
        result = await self.client.text_document_inline_completion_async(params)
        ms = (time.perf_counter() - started) * 1000
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        items = result.items if isinstance(result, types.InlineCompletionList) else (result or [])
        if not items:
            return line_after(case, case.offset, case.offset, ""), ms, False
        first = items[0]
        new = first.insert_text if isinstance(first.insert_text, str) else first.insert_text.value
        start, end = case.offset, case.offset
        if first.range is not None:
            start = offset_of(case.text, first.range.start.line, first.range.start.character)
            end = offset_of(case.text, first.range.end.line, first.range.end.character)
        return line_after(case, start, end, new), ms, True

    async def warm_up(self, root: Path, language: str) -> None:
        """One request on a scratch document first, unscored: a user's server has answered
        before (the first forward and jedi's first load are a start's cost, not a cursor's)."""
        text = WARM_UP.get(language, WARM_UP["python"])
        suffix = {"python": ".py", "go": ".go"}.get(language, ".ts")
        case = FreshCase("", f"difill_warm_up{suffix}", language, text, len(text), text)
        await self.ask(root, case)


@dataclass
class Outcome:
    case: FreshCase
    row: str
    exact: bool
    shown: bool
    ms: float | None = None
    line: str = ""  # the cursor's line as shown (for --dump, on tuning projects only)


async def served_outcomes(
    project: Project,
    cases: list[FreshCase],
    group: int,
    model_dir: str | None,
    settings: dict[str, Any] | None = None,
    alone: bool = False,
) -> list[Outcome]:
    """Each group of ``group`` files: their files off the disk, a fresh server, its cases asked.
    ``alone``: the server's workspace is an empty folder, so the document is all it reads (the
    "alone" row); else the rest of the project (the "served" row)."""
    by_file: dict[str, list[FreshCase]] = {}
    for case in cases:
        by_file.setdefault(case.path, []).append(case)
    paths = list(by_file)
    outcomes = []
    held = Path(tempfile.mkdtemp(prefix="difill-fresh-held-"))
    try:
        for at in range(0, len(paths), group):
            chunk = paths[at : at + group]
            for i, path in enumerate(chunk):  # off the disk: nothing the server reads holds them
                shutil.move(project.root / path, held / str(i))
            client = FreshClient()
            root = held / "empty" if alone else project.root
            root.mkdir(exist_ok=True)
            try:
                await client.start(root, model_dir, settings)
                await client.warm_up(root, cases[0].language)
                for path in chunk:
                    for case in by_file[path]:
                        line, ms, shown = await client.ask(root, case)
                        row = "alone" if alone else "served"
                        outcomes.append(Outcome(case, row, is_exact(case, line), shown, ms, line))
            finally:
                await client.stop()
                for i, path in enumerate(chunk):
                    shutil.move(held / str(i), project.root / path)
    finally:
        shutil.rmtree(held, ignore_errors=True)
    return outcomes


def copy_outcomes(cases: list[FreshCase]) -> list[Outcome]:
    outcomes = []
    for case in cases:
        line = line_after(case, case.offset, case.offset, copy_rule(case))
        outcomes.append(
            Outcome(
                case,
                "copy rule",
                is_exact(case, line),
                line != line_after(case, case.offset, case.offset, ""),
                None,
                line,
            )
        )
    return outcomes


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    n = len(outcomes)
    exact = sum(o.exact for o in outcomes)
    ms = sorted(o.ms for o in outcomes if o.ms is not None)
    low, high = wilson(exact, n)
    return {
        "cases": n,
        "exact": round(exact / max(1, n), 4),
        "exact_ci": [round(low, 4), round(high, 4)],
        "shown": round(sum(o.shown for o in outcomes) / max(1, n), 4),
        # Of the cursors shown something, the share where it was right (issue 60: what a reader pays for).
        "shown_precision": round(exact / max(1, sum(o.shown for o in outcomes)), 4),
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1) if ms else None,
    }


def report(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    """One row per (language, row), then per (project, row)."""
    rows = []
    for key in ("language", "project"):
        groups: dict[tuple[str, str], list[Outcome]] = {}
        for o in outcomes:
            groups.setdefault(
                (getattr(o.case, key).replace("typescriptreact", "typescript"), o.row), []
            ).append(o)
        for (name, row), members in sorted(groups.items()):
            rows.append({"by": key, "name": name, "row": row, **summary(members)})
    return rows


def format_report(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| by | name | row | cases | exact [95% CI] | shown | shown precision | p50 / p95 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        low, high = r["exact_ci"]
        ms = f"{r['p50_ms']} / {r['p95_ms']}" if r["p50_ms"] is not None else "-"
        lines.append(
            f"| {r['by']} | {r['name']} | {r['row']} | {r['cases']} | {r['exact']:.1%} "
            f"[{low:.0%}, {high:.0%}] | {r['shown']:.0%} | {r['shown_precision']:.0%} | {ms} |"
        )
    return "\n".join(lines)


def parse_repos(spec: str) -> list[tuple[str, str, str]]:
    """``NAME=GIT_DIR@COMMIT,...`` -> [(name, git dir, commit)]."""
    repos = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, rest = item.partition("=")
        git_dir, _, commit = rest.rpartition("@")
        if not (name and git_dir and commit):
            raise SystemExit(f"--repos: {item!r} is not NAME=GIT_DIR@COMMIT")
        repos.append((name, git_dir, commit))
    return repos


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.fresh_cursor", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--repos", required=True, help="NAME=GIT_DIR@COMMIT,...")
    parser.add_argument("--cases", type=int, default=40, help="cases per project")
    parser.add_argument("--per-file", type=int, default=3, help="cases per file at most")
    parser.add_argument("--group", type=int, default=5, help="files taken off the disk per server")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", help="a checkpoint folder (default: the shipped model)")
    parser.add_argument(
        "--rows", default="served,alone,copy",
        help="served (the project as the workspace), alone (the document alone), copy (the no-model rule)",
    )  # fmt: skip
    parser.add_argument("--json", help="write the rows here as JSON")
    parser.add_argument("--settings", help="the served row's settings, a JSON object (initializationOptions)")
    parser.add_argument(
        "--dump", help="write each case's line, cut and answer here (JSON lines): for tuning projects only"
    )
    args = parser.parse_args(argv)
    rows = {r.strip() for r in args.rows.split(",")}
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="difill-fresh-") as tmp:
        for name, git_dir, commit in parse_repos(args.repos):
            project = export(name, git_dir, commit, Path(tmp))
            cases = draw_cases(project, args.cases, args.per_file, args.seed)
            print(f"{name}: {len(project.files)} files, {len(cases)} cases", file=sys.stderr)
            if "copy" in rows:
                outcomes += copy_outcomes(cases)
            settings = json.loads(args.settings or "{}")
            for row in ("served", "alone"):
                if row in rows:
                    outcomes += asyncio.run(
                        served_outcomes(project, cases, args.group, args.model, settings, row == "alone")
                    )
    if args.dump:
        with open(args.dump, "w") as out:
            for o in outcomes:
                cut = o.case.offset - (o.case.text.rfind("\n", 0, o.case.offset) + 1)
                out.write(
                    json.dumps(
                        {
                            "project": o.case.project,
                            "path": o.case.path,
                            "row": o.row,
                            "line": o.case.line,
                            "cut": cut,
                            "shown": o.line,
                            "exact": o.exact,
                        }
                    )
                    + "\n"
                )
    table = report(outcomes)
    print(format_report(table))
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
