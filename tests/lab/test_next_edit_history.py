"""Issue 63: next-edit cases mined as users make edits (lab/next_edit_history.py), the copy rule on
them, and the eval's replay that types words in halves and names each case's language."""

from __future__ import annotations

import asyncio
import subprocess
from collections import Counter
from pathlib import Path

from lab import next_edit_eval as ev
from lab.next_edit_history import (
    MAX_GAP_LINES,
    MAX_HUNK_LINES,
    commit_cases,
    mine,
    neighbour_pairs,
)
from lab.next_edit_mining import Case, Hunk

BODY = "".join(f"def f{i}(count):\n    return count + {i}\n\n" for i in range(40))  # 120 lines


def hunk(old_start: int, removed: tuple[str, ...], added: tuple[str, ...]) -> Hunk:
    return Hunk(old_start, len(removed), old_start, len(added), removed, added)


def test_neighbouring_small_hunks_pair_both_ways_within_six_lines_and_forty_apart():
    top = hunk(10, ("a = count",), ("a = total",))
    near = hunk(10 + MAX_GAP_LINES, ("b = count",), ("b = total",))
    assert neighbour_pairs([top, near]) == [(top, near), (near, top)]
    far = hunk(11 + MAX_GAP_LINES, ("b = count",), ("b = total",))
    assert neighbour_pairs([top, far]) == []
    six = hunk(20, tuple(f"x{i} = 1" for i in range(MAX_HUNK_LINES)), ("y = 2",))
    seven = hunk(20, tuple(f"x{i} = 1" for i in range(MAX_HUNK_LINES + 1)), ("y = 2",))
    assert len(neighbour_pairs([top, six])) == 2 and neighbour_pairs([top, seven]) == []
    whitespace = hunk(20, ("b = 1",), ("b  =  1",))
    assert neighbour_pairs([top, whitespace]) == []
    # Three hunks: each with its neighbour, never the first with the third.
    middle, low = hunk(30, ("c = count",), ("c = total",)), hunk(50, ("d = count",), ("d = total",))
    assert neighbour_pairs([top, middle, low]) == [(top, middle), (middle, top), (middle, low), (low, middle)]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    return repo


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD").strip()


def _replace_lines(text: str, changes: dict[int, str]) -> str:
    """``text`` with its 1-based lines replaced."""
    lines = text.splitlines(keepends=True)
    for number, line in changes.items():
        lines[number - 1] = line
    return "".join(lines)


def test_a_commit_gives_each_neighbouring_pair_both_ways_and_a_single_hunk_a_none(tmp_path):
    repo = _repo(tmp_path)
    go = "package p\n\nfunc area(width int) int {\n\treturn width\n}\n"
    _commit(repo, {"a.py": BODY, "b.go": go}, "start")
    # Three hunks in a.py (lines 1, 11 and 35: neighbours 10 and 24 apart) and one 80 lines
    # below the third (too far); b.go changes two lines in one hunk: no pair there.
    lines = {1: "def f0(total):\n", 11: "    return total + 33\n", 35: "    return total + 11\n"}
    three = _replace_lines(BODY, {**lines, 116: "    return total + 38\n"})
    go_after = go.replace("width int", "w int").replace("return width", "return w")
    commit = _commit(repo, {"a.py": three, "b.go": go_after}, "rename")
    cases = commit_cases("o/r", str(repo / ".git"), commit)
    # Line 11 also changes 3 to 33: its hunk repeats line 1's rename and more, so the kind
    # depends on which of the two is typed first.
    assert {(c.id.rsplit(":", 1)[1], c.kind) for c in cases} == {
        ("1>11", "follow"), ("11>1", "repeat"), ("11>35", "repeat"), ("35>11", "follow"),
    } and len(cases) == 4  # fmt: skip
    for case in cases:  # the first hunk typed, the commit's other hunk expected, nothing else
        first, second = (int(x) for x in case.id.rsplit(":", 1)[1].split(">"))
        assert (
            case.expected
            == _replace_lines(BODY, {n: lines[n] for n in (first, second)})[: len(case.expected)]
        )
        start, end, new = case.edit
        typed = case.before[:start] + new + case.before[end:]
        assert typed == _replace_lines(BODY, {first: lines[first]})[: len(typed)]
    single = _commit(repo, {"a.py": three.replace("f20(count)", "f20(n)")}, "one hunk")
    (none,) = commit_cases("o/r", str(repo / ".git"), single)
    assert none.kind == "none" and none.expected == none.before.replace("f20(count)", "f20(n)")
    go_pair = _commit(repo, {"b.go": go_after.replace("(w int)", "(w, h int)").replace("return w", "return w * h")},
                      "go")  # fmt: skip
    (go_none,) = commit_cases("o/r", str(repo / ".git"), go_pair)  # lines 3 and 4: one hunk
    assert go_none.kind == "none" and go_none.path == "b.go"


def test_mining_caps_each_kind_and_each_commit_and_draws_with_a_fixed_seed(tmp_path):
    repo = _repo(tmp_path)
    _commit(repo, {"a.py": BODY}, "start")
    text = BODY
    for i in range(6):  # each commit renames in three returns 6 lines apart: 4 repeat cases
        old = text.splitlines(keepends=True)
        rows = (18 * i + 2, 18 * i + 8, 18 * i + 14)
        text = _replace_lines(text, {n: old[n - 1].replace("count", f"total{i}") for n in rows})
        _commit(repo, {"a.py": text}, f"rename {i}")
    _commit(repo, {"a.py": text.replace("f39(count)", "f39(n)")}, "single")
    caps = {"repeat": 5, "follow": 5, "none": 5}
    found = mine("o/r", str(repo / ".git"), "HEAD", caps, seed=1)
    assert Counter(c.kind for c in found) == {"repeat": 5, "none": 1}
    assert max(Counter(c.commit for c in found).values()) <= 2  # at most PER_COMMIT a kind per commit
    assert [c.id for c in mine("o/r", str(repo / ".git"), "HEAD", caps, seed=1)] == [c.id for c in found]


# ---------------------------------------------------------------------------- the copy rule


def test_the_copy_rule_repeats_the_lower_edit_typed_first_on_the_nearest_line_above(tmp_path):
    repo = _repo(tmp_path)
    lines = [f"v{i} = {i}\n" for i in range(40)]
    lines[2] = lines[8] = lines[30] = "x = f(count)\n"  # the same line 6 above and 22 below line 8
    _commit(repo, {"a.py": "".join(lines)}, "start")
    after = lines[:]
    after[2] = after[8] = "x = f(total)\n"
    commit = _commit(repo, {"a.py": "".join(after)}, "two")
    (lower_first,) = [c for c in commit_cases("o/r", str(repo / ".git"), commit) if c.id.endswith(":9>3")]
    assert lower_first.kind == "repeat"
    text, edits = ev.copy_rule(lower_first)
    assert ev.score(lower_first, text, edits, 0.0).exact  # line 3 (6 away), not line 31 (22 away)
    # A hunk whose only change is an insertion has no substitution to copy: nothing is offered.
    inserted = Case("i", "o/r", "c", "a.py", "repeat", "f(a)\nf(a)\n", (3, 3, ", b"), "f(a, b)\nf(a, b)\n")
    assert ev.copy_rule(inserted)[1] == []


# ---------------------------------------------------------------------------- the replay


def test_words_are_typed_in_halves_and_the_state_between_is_mid_word():
    before = "x = f(a)\n"
    edit = (before.index("a)"), before.index("a)") + 1, "alpha, b")
    steps = ev.keystrokes(before, edit, mid_word=True)
    assert [s[2] for s in steps] == ["", "al", "pha", ",", " ", "b"]  # a one-letter word stays whole
    final = "x = f(alpha, b)\n"
    assert ev.mid_word(final, final.index("pha")) and not ev.mid_word(final, final.index(","))
    assert not ev.mid_word(final, final.index("alpha"))  # before a word: not inside it


def test_the_replay_names_the_language_and_counts_mid_word_asks(tiny_model_dir):
    """A Go rename typed a word in halves: the ask inside the word is counted apart, and the
    file is opened as an editor opens a Go file."""
    before = "package p\n\nfunc area(width int, height int) int {\n\treturn width * height\n}\n"
    start = before.index("width")
    expected = before.replace("width", "size")
    case = Case("go", "o/r", "c", "p/area.go", "repeat", before, (start, start + 5, "size"), expected)
    row = asyncio.run(ev.run_row("drafts alone", "drafts", [case], str(tiny_model_dir)))
    (outcome,) = row.outcomes
    assert outcome.half_asks == 1 and 0 <= outcome.half_answered <= 1  # "si|ze"
    assert outcome.exact
    assert ev.document(case, "case_0") == ("file:///next_edit_eval/case_0.go", "go")
    tsx = Case("t", "o/r", "c", "src/App.tsx", "none", "", (0, 0, "x"), "x")
    assert ev.document(tsx, "w")[1] == "typescriptreact"
    assert (
        ev.document(Case("m", "o/r", "c", "lib/a.mjs", "none", "", (0, 0, "x"), "x"), "w")[1] == "javascript"
    )
    summary = row.summary()
    assert summary["half_typed"]["asks"] == 1 and summary["repeat"]["silent"] == 0.0
