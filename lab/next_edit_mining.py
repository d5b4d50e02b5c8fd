"""Next-edit cases mined from git history (issue 35, part 6): `difill eval --next-edit` reads them.

A commit whose Python change is one file with two small hunks within ``MAX_GAP_LINES`` lines
of each other is a case: given the file after the first hunk (the user's edit, sent as one
didChange) and the cursor at its end, the right next edit is the second hunk.  A commit whose
Python change is one small hunk is a "none" case: the right answer is no suggestion.  The first
hunk is the upper one (the order inside a commit is not recorded; top to bottom is how an edit
usually proceeds).

Kinds, decided on the hunks' tokens alone (never by difill's own patterns, which are scored):

* **repeat**: every token-level change of hunk 2 is one of hunk 1's changes (same old tokens,
  same new tokens): a rename, the same inserted argument;
* **follow**: any other second hunk;
* **none**: a single-hunk commit.

Each case keeps an excerpt of the file (``CONTEXT_LINES`` lines around the hunks), so the JSONL
stays small and the eval reruns without network; the repository, commit and path of every case
are recorded.  Run: ``python -m lab.next_edit_mining OUT.jsonl owner/name=GIT_DIR ...``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

MAX_HUNK_LINES = 4  # a small hunk: at most this many lines removed and this many added
MAX_HUNK_CHARS = 300
MAX_GAP_LINES = 40  # the two hunks of a pair are at most this many lines apart
CONTEXT_LINES = 40  # lines of the file kept above the first hunk and below the last
MAX_FILE_CHARS = 200_000
PER_KIND = 12  # cases of each kind per repository, newest commits first
TOKEN = re.compile(r"\w+|[^\w\s]")
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    old_start: int  # 1-based first removed line (for a pure insertion: the line it follows)
    old_count: int
    new_start: int
    new_count: int
    removed: tuple[str, ...]  # the lines, without their newline
    added: tuple[str, ...]


@dataclass(frozen=True)
class Case:
    id: str
    repo: str
    commit: str
    path: str
    kind: str  # repeat, follow, none
    before: str  # the excerpt before the commit
    edit: tuple[int, int, str]  # hunk 1 in ``before``: (start, end, new text), character offsets
    expected: str  # the excerpt after the commit (for "none": after hunk 1)


# ---------------------------------------------------------------------------- hunks


def parse_hunks(diff: str) -> dict[str, list[Hunk]]:
    """The hunks of a ``git show -U0`` diff, by the path they change (new and deleted files too:
    a commit that adds a file is no edit of one document)."""
    out: dict[str, list[Hunk]] = {}
    path: str | None = None
    current: list | None = None
    for line in diff.splitlines():
        if line.startswith("diff --git"):
            path, current = None, None
        elif line.startswith("--- "):
            path = None if line == "--- /dev/null" else line[6:]
        elif line.startswith("+++ "):
            path = path if line == "+++ /dev/null" else line[6:]  # a deleted file keeps its old path
            out.setdefault(path, [])
        elif (m := HUNK.match(line)) and path in out:
            a, b, c, d = (int(g) if g is not None else 1 for g in m.groups())
            current = [a, b, c, d, [], []]
            out[path].append(current)  # type: ignore[arg-type]
        elif current is not None and line.startswith("-"):
            current[4].append(line[1:])
        elif current is not None and line.startswith("+"):
            current[5].append(line[1:])
    return {
        p: [Hunk(h[0], h[1], h[2], h[3], tuple(h[4]), tuple(h[5])) for h in hunks]  # type: ignore[index]
        for p, hunks in out.items()
    }


def small(hunk: Hunk) -> bool:
    chars = sum(len(x) for x in hunk.removed + hunk.added)
    changed = "\n".join(hunk.removed).split() != "\n".join(hunk.added).split()  # not whitespace only
    return (
        hunk.old_count <= MAX_HUNK_LINES
        and hunk.new_count <= MAX_HUNK_LINES
        and chars <= MAX_HUNK_CHARS
        and changed
    )


def token_changes(hunk: Hunk) -> set[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The hunk's changes at token level: (old tokens, new tokens) of each differing run."""
    old = TOKEN.findall("\n".join(hunk.removed))
    new = TOKEN.findall("\n".join(hunk.added))
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    return {
        (tuple(old[i1:i2]), tuple(new[j1:j2]))
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
        if op != "equal"
    }


def kind_of(first: Hunk, second: Hunk) -> str:
    changes = token_changes(second)
    return "repeat" if changes and changes <= token_changes(first) else "follow"


def paired(hunks: list[Hunk]) -> bool:
    """Two small hunks, the second at most MAX_GAP_LINES lines below the first."""
    if len(hunks) != 2 or not all(small(h) for h in hunks):
        return False
    first_end = hunks[0].old_start + max(hunks[0].old_count, 1) - 1
    return 0 <= hunks[1].old_start - first_end <= MAX_GAP_LINES


# ---------------------------------------------------------------------------- cases


def _line_offsets(text: str) -> list[int]:
    """Offset of the start of each line (1-based index: offsets[1] is line 1), and the end."""
    offsets = [0, 0]
    for i, char in enumerate(text):
        if char == "\n":
            offsets.append(i + 1)
    offsets.append(len(text))
    return offsets


def _apply(text: str, hunk: Hunk, shift: int = 0) -> tuple[str, tuple[int, int, str]]:
    """``text`` with ``hunk`` applied (its old lines ``shift`` lines lower in ``text``), and the
    change as the tightest (start, end, new text) in ``text``."""
    lines = text.splitlines(keepends=True)
    first = hunk.old_start - 1 + shift if hunk.old_count else hunk.old_start + shift  # 0-based
    start = sum(len(x) for x in lines[:first])
    end = start + sum(len(x) for x in lines[first : first + hunk.old_count])
    new = "".join(x + "\n" for x in hunk.added)
    old = text[start:end]
    if old and not old.endswith("\n"):  # the file's last line has no newline
        new = new[:-1]
    # The tightest span: what a user's keystrokes replace, so the cursor ends where they typed.
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    change = (start + head, end - tail, new[head : len(new) - tail])
    return text[:start] + new + text[end:], change


def case_of(repo: str, commit: str, path: str, before_file: str, hunks: list[Hunk]) -> Case | None:
    """A case from a file's text before the commit and its one or two hunks."""
    top = max(1, hunks[0].old_start - CONTEXT_LINES)
    last = hunks[-1].old_start + hunks[-1].old_count
    lines = before_file.splitlines(keepends=True)
    if not lines or hunks[-1].old_start > len(lines) + 1:
        return None
    bottom = min(len(lines), last + CONTEXT_LINES)
    excerpt = "".join(lines[top - 1 : bottom])
    shift = -(top - 1)
    after_first, edit = _apply(excerpt, hunks[0], shift)
    if len(hunks) == 1:
        kind, expected = "none", after_first
    else:
        moved = hunks[0].new_count - hunks[0].old_count
        expected, _ = _apply(after_first, hunks[1], shift + moved)
        kind = kind_of(hunks[0], hunks[1])
    if edit[0] == edit[1] and not edit[2]:
        return None
    return Case(f"{repo}@{commit[:10]}:{path}", repo, commit, path, kind, excerpt, edit, expected)


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, *args], capture_output=True, text=True, errors="replace", check=True
    ).stdout


def mine(repo: str, git_dir: str, per_kind: int = PER_KIND) -> list[Case]:
    """Up to ``per_kind`` cases of each kind from ``git_dir``'s history, newest commits first."""
    commits = _git(git_dir, "log", "--no-merges", "--format=%H", "HEAD", "--", "*.py").split()
    found: dict[str, list[Case]] = {"repeat": [], "follow": [], "none": []}
    for commit in commits:
        if all(len(v) >= per_kind for v in found.values()):
            break
        diff = _git(git_dir, "show", "-U0", "--no-renames", "--format=", commit, "--", "*.py")
        by_path = parse_hunks(diff)
        if len(by_path) != 1:
            continue  # one Python file changed: the edit history of one document
        path, hunks = next(iter(by_path.items()))
        if not (paired(hunks) or (len(hunks) == 1 and small(hunks[0]))):
            continue
        try:
            before_file = _git(git_dir, "show", f"{commit}^:{path}")
        except subprocess.CalledProcessError:
            continue  # a new file, or a root commit
        if len(before_file) > MAX_FILE_CHARS or "\r" in before_file:
            continue
        case = case_of(repo, commit, path, before_file, hunks)
        if case is not None and len(found[case.kind]) < per_kind:
            found[case.kind].append(case)
    return [c for kind in ("repeat", "follow", "none") for c in found[kind]]


def write_cases(cases: list[Case], out: Path) -> None:
    with out.open("w") as f:
        for case in cases:
            f.write(json.dumps(asdict(case)) + "\n")


def read_cases(path: Path) -> list[Case]:
    cases = []
    for line in path.read_text().splitlines():
        if line.strip():
            raw = json.loads(line)
            raw["edit"] = tuple(raw["edit"])
            cases.append(Case(**raw))
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("repos", nargs="+", help="owner/name=GIT_DIR (a bare clone is enough)")
    parser.add_argument("--per-kind", type=int, default=PER_KIND)
    args = parser.parse_args(argv)
    cases: list[Case] = []
    for spec in args.repos:
        repo, git_dir = spec.split("=", 1)
        mined = mine(repo, git_dir, args.per_kind)
        counts = {k: sum(c.kind == k for c in mined) for k in ("repeat", "follow", "none")}
        print(f"{repo} @ {_git(git_dir, 'rev-parse', 'HEAD').strip()}: {counts}", file=sys.stderr)
        cases += mined
    write_cases(cases, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
