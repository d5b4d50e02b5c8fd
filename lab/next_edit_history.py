"""Next-edit cases mined as users make edits (issue 63): `difill eval --next-edit` reads them.

lab/next_edit_mining.py keeps only commits whose whole change is two hunks in one file, which
picks plain token substitutions.  Here every commit counts:

* each pair of **neighbouring** small hunks in one file (at most ``MAX_HUNK_LINES`` lines a side,
  not whitespace only, at most ``MAX_GAP_LINES`` lines apart) gives two cases, one each way:
  each hunk is the first edit (typed by the eval), the other the expected next;
* a commit whose source change is one small hunk gives a "none" case (nothing is right).

Kinds as lab/next_edit_mining.py decides them, on the hunks' tokens alone: **repeat** when every
token-level change of the next hunk is one of the first's, else **follow**.  Python, Go,
TypeScript and JavaScript files (``SOURCE``); the eval names each case's language by its path.

Sampling, fixed before any case is read: commits newest first (from the pinned commit), at most
``PER_COMMIT`` cases of a kind from one commit (a rename across a file is one edit, not forty
cases), until a kind's pool holds ``POOL`` times its cap or the history ends; then the cap is
drawn from the pool with ``random.Random(SEED)``.  Run:
``python -m lab.next_edit_history OUT.jsonl owner/name=GIT_DIR@COMMIT ...``.
"""

from __future__ import annotations

import argparse
import itertools
import random
import re
import subprocess
import sys
from pathlib import Path

from lab.next_edit_mining import (
    CONTEXT_LINES,
    Case,
    Hunk,
    _apply,
    case_of,
    kind_of,
    parse_hunks,
    write_cases,
)

MAX_HUNK_LINES = 6  # a small hunk: at most this many lines removed and this many added
MAX_HUNK_CHARS = 600
MAX_LINE_CHARS = 400  # a longer line is minified or generated: no file of it is a case
MAX_GAP_LINES = 40  # a pair's hunks are at most this many lines apart
MAX_FILE_CHARS = 200_000
SOURCE = ("*.py", "*.go", "*.ts", "*.tsx", "*.js", "*.jsx", "*.mjs", "*.cjs")
SKIPPED = re.compile(r"(^|/)(vendor|node_modules|dist|testdata|third_party)/|\.min\.js$|_pb2?\.|\.pb\.go$")
CAPS = {"repeat": 40, "follow": 40, "none": 30}  # per project
PER_COMMIT = 2
POOL = 3
SEED = 63
KINDS = ("repeat", "follow", "none")


def small(hunk: Hunk) -> bool:
    lines = hunk.removed + hunk.added
    changed = "\n".join(hunk.removed).split() != "\n".join(hunk.added).split()  # not whitespace only
    return (
        hunk.old_count <= MAX_HUNK_LINES
        and hunk.new_count <= MAX_HUNK_LINES
        and sum(len(x) for x in lines) <= MAX_HUNK_CHARS
        and changed
    )


def _end(hunk: Hunk) -> int:
    """The last old line the hunk touches (a pure insertion: the line it follows)."""
    return hunk.old_start + max(hunk.old_count, 1) - 1


def neighbour_pairs(hunks: list[Hunk]) -> list[tuple[Hunk, Hunk]]:
    """(first edit, next edit) for each two neighbouring small hunks of one file within the gap,
    both ways round."""
    pairs = []
    for upper, lower in itertools.pairwise(hunks):
        if small(upper) and small(lower) and 0 <= lower.old_start - _end(upper) <= MAX_GAP_LINES:
            pairs += [(upper, lower), (lower, upper)]
    return pairs


def pair_case(repo: str, commit: str, path: str, before_file: str, first: Hunk, second: Hunk) -> Case | None:
    """The case where ``first`` is typed and ``second`` is the next edit (above or below it)."""
    upper, lower = sorted((first, second), key=lambda h: h.old_start)
    lines = before_file.splitlines(keepends=True)
    if not lines or lower.old_start > len(lines) + 1:
        return None
    top = max(1, upper.old_start - CONTEXT_LINES)
    bottom = min(len(lines), lower.old_start + lower.old_count + CONTEXT_LINES)
    excerpt = "".join(lines[top - 1 : bottom])
    shift = -(top - 1)
    after_first, edit = _apply(excerpt, first, shift)
    if edit[0] == edit[1] and not edit[2]:
        return None
    # The next hunk moves by the first's change in line count only when it lies below it.
    moved = first.new_count - first.old_count if second is lower else 0
    expected, _ = _apply(after_first, second, shift + moved)
    case_id = f"{repo}@{commit[:10]}:{path}:{first.old_start}>{second.old_start}"
    return Case(case_id, repo, commit, path, kind_of(first, second), excerpt, edit, expected)


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, *args], capture_output=True, text=True, errors="replace", check=True
    ).stdout


def _before(git_dir: str, commit: str, path: str) -> str | None:
    """The file before ``commit``, or None where it is no document to replay (new, huge, CRLF,
    minified)."""
    try:
        text = _git(git_dir, "show", f"{commit}^:{path}")
    except subprocess.CalledProcessError:
        return None  # a new file, or a root commit
    if len(text) > MAX_FILE_CHARS or "\r" in text or any(len(x) > MAX_LINE_CHARS for x in text.splitlines()):
        return None
    return text


def commit_cases(repo: str, git_dir: str, commit: str) -> list[Case]:
    """Every case one commit gives: its pairs both ways, or its single small hunk."""
    diff = _git(git_dir, "show", "-U0", "--no-renames", "--format=", commit, "--", *SOURCE)
    by_path = {p: h for p, h in parse_hunks(diff).items() if h and not SKIPPED.search(p)}
    if sum(len(h) for h in by_path.values()) == 1:
        ((path, hunks),) = by_path.items()
        if not small(hunks[0]) or (before := _before(git_dir, commit, path)) is None:
            return []
        case = case_of(repo, commit, path, before, hunks)
        return [case] if case is not None else []
    cases = []
    for path, hunks in by_path.items():
        pairs = neighbour_pairs(hunks)
        if not pairs or (before := _before(git_dir, commit, path)) is None:
            continue
        cases += [c for first, second in pairs if (c := pair_case(repo, commit, path, before, first, second))]
    return cases


def mine(
    repo: str, git_dir: str, rev: str = "HEAD", caps: dict[str, int] = CAPS, seed: int = SEED
) -> list[Case]:
    """Up to ``caps[kind]`` cases of each kind from ``rev``'s history (module docstring)."""
    rng = random.Random(f"{seed}:{repo}")
    commits = _git(git_dir, "log", "--no-merges", "--format=%H", rev, "--", *SOURCE).split()
    pool: dict[str, list[Case]] = {k: [] for k in KINDS}
    seen: set[tuple[str, tuple[int, int, str], str]] = set()
    for commit in commits:
        if all(len(pool[k]) >= POOL * caps[k] for k in KINDS):
            break
        cases = commit_cases(repo, git_dir, commit)
        for kind in KINDS:
            if len(pool[kind]) >= POOL * caps[kind]:
                continue
            fresh = [c for c in cases if c.kind == kind and (c.before, c.edit, c.expected) not in seen]
            for case in rng.sample(fresh, min(PER_COMMIT, len(fresh))):
                seen.add((case.before, case.edit, case.expected))
                pool[kind].append(case)
    return [c for k in KINDS for c in rng.sample(pool[k], min(caps[k], len(pool[k])))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("repos", nargs="+", help="owner/name=GIT_DIR[@COMMIT] (a bare clone is enough)")
    parser.add_argument("--caps", default=",".join(str(CAPS[k]) for k in KINDS), help="repeat,follow,none")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    caps = dict(zip(KINDS, (int(x) for x in args.caps.split(",")), strict=True))
    cases: list[Case] = []
    for spec in args.repos:
        repo, where = spec.split("=", 1)
        git_dir, _, rev = where.partition("@")
        mined = mine(repo, git_dir, rev or "HEAD", caps, args.seed)
        counts = {k: sum(c.kind == k for c in mined) for k in KINDS}
        print(f"{repo} @ {_git(git_dir, 'rev-parse', rev or 'HEAD').strip()}: {counts}", file=sys.stderr)
        cases += mined
    write_cases(cases, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
