"""Issue 35, part 6: `difill eval --next-edit`.  The mining rules (hunks, pairs, kinds) on a git
repository made here, the scores, and the eval through `difill serve` on mined cases."""

from __future__ import annotations

import asyncio
import subprocess
from collections import Counter
from pathlib import Path

from lab import next_edit_eval as ev
from lab.next_edit_gate import format_gate, gate_report
from lab.next_edit_mining import (
    MAX_GAP_LINES,
    Hunk,
    case_of,
    kind_of,
    mine,
    paired,
    parse_hunks,
    read_cases,
    write_cases,
)

BODY = "".join(f"def f{i}(count):\n    return count + {i}\n\n" for i in range(40))


def hunk(old_start: int, removed: tuple[str, ...], added: tuple[str, ...]) -> Hunk:
    return Hunk(old_start, len(removed), old_start, len(added), removed, added)


# ---------------------------------------------------------------------------- the mining rules


def test_hunks_are_read_per_file_new_files_included():
    diff = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -3 +3 @@ def f\n-x = 1\n+x = 2\n"
        "@@ -9,0 +10,2 @@\n+y = 1\n+z = 2\n"
        "diff --git a/new.py b/new.py\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+q = 1\n"
    )
    assert parse_hunks(diff) == {
        "a.py": [Hunk(3, 1, 3, 1, ("x = 1",), ("x = 2",)), Hunk(9, 0, 10, 2, (), ("y = 1", "z = 2"))],
        "new.py": [Hunk(0, 0, 1, 1, (), ("q = 1",))],
    }


def test_two_small_hunks_pair_only_within_the_gap():
    first = hunk(10, ("a = count",), ("a = total",))
    near = hunk(10 + MAX_GAP_LINES, ("b = count",), ("b = total",))
    far = hunk(11 + MAX_GAP_LINES, ("b = count",), ("b = total",))
    big = hunk(20, tuple(f"l{i}" for i in range(5)), ())
    whitespace = hunk(20, ("b = 1",), ("b  =  1",))
    assert paired([first, near]) and not paired([first, far])
    assert not paired([first, big]) and not paired([first, whitespace])
    assert not paired([first, near, near])  # three hunks: not a pair


def test_a_second_hunk_that_repeats_the_first_ones_substitution_is_repeat():
    rename = hunk(1, ("def f(count):",), ("def f(total):",))
    assert kind_of(rename, hunk(2, ("    return count + 1",), ("    return total + 1",))) == "repeat"
    assert kind_of(rename, hunk(2, ("    return count + 1",), ("    return total + 2",))) == "follow"
    argument = hunk(1, ("f(a, b)",), ("f(a, b, c)",))
    assert kind_of(argument, hunk(2, ("g(x, b)",), ("g(x, b, c)",))) == "repeat"


def test_a_case_is_the_file_after_the_first_hunk_and_the_commit_after_both():
    lines = BODY.splitlines()
    first = hunk(1, (lines[0],), ("def f0(total):",))
    second = hunk(2, (lines[1],), ("    return total + 0",))
    case = case_of("o/r", "c" * 40, "a.py", BODY, [first, second])
    assert case is not None and case.kind == "repeat"
    start, end, new = case.edit
    assert (case.before[start:end], new) == ("count", "total")  # the keystrokes' own span
    assert case.expected == BODY.replace("count", "total", 2)[: len(case.before)]
    none = case_of("o/r", "c" * 40, "a.py", BODY, [first])
    assert none is not None and none.kind == "none"
    assert none.expected == none.before[:start] + new + none.before[end:]  # after the one hunk


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_mining_a_history_finds_each_kind_and_skips_what_is_no_case(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")

    def commit(text: str, message: str, other: str | None = None) -> None:
        (repo / "a.py").write_text(text)
        if other is not None:
            (repo / "b.py").write_text(other)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", message)

    commit(BODY, "start")
    lines = BODY.splitlines(keepends=True)
    renamed = lines[:]
    renamed[9] = "def f3(total):\n"
    renamed[13] = "    return count + 44\n"  # 4 lines below, another change: follow
    commit("".join(renamed), "follow")
    again = renamed[:]
    again[30] = "def f10(total):\n"
    again[31] = "    return total + 10\n"  # adjacent lines are one hunk: a single-hunk commit
    commit("".join(again), "none")
    both = again[:]
    both[60] = "def f20(total):\n"
    both[69] = "def f23(total):\n"  # the same substitution 9 lines below: repeat
    commit("".join(both), "repeat")
    commit("".join(both).replace("f0(count)", "f0(n)"), "two files", other="x = 1\n")  # skipped

    found = mine("o/r", str(repo / ".git"))
    assert Counter(c.kind for c in found) == {"repeat": 1, "follow": 1, "none": 1}
    assert all(c.repo == "o/r" and c.path == "a.py" and len(c.commit) == 40 for c in found)
    written = tmp_path / "cases.jsonl"
    write_cases(found, written)
    assert read_cases(written) == found


# ---------------------------------------------------------------------------- the scores


def test_scores_exact_line_f1_and_noise():
    base = "a = 1\nb = 2\nc = 3\n"
    case = ev.Case("x", "o/r", "c", "a.py", "follow", base, (0, 0, ""), base.replace("c = 3", "c = 4"))

    def edit(line: int, start: int, end: int, text: str) -> dict:
        rng = {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}
        return {"range": rng, "text": text}

    right = ev.score(case, base, [edit(2, 4, 5, "4")], 10.0)
    assert right.exact and right.f1 == 1.0
    wrong = ev.score(case, base, [edit(1, 4, 5, "9"), edit(2, 4, 5, "4")], 10.0)
    assert not wrong.exact and wrong.exact_any and wrong.f1 == 0.0
    nothing = ev.score(case, base, [], 5.0)
    assert not nothing.answered and not nothing.exact and nothing.f1 == 0.0
    half = ev.line_f1(
        Counter({("-", "c = 3"): 1, ("+", "c = 5"): 1}), Counter({("-", "c = 3"): 1, ("+", "c = 4"): 1})
    )
    assert half == 0.5
    none = ev.Case("y", "o/r", "c", "a.py", "none", base, (0, 0, ""), base)
    assert ev.score(none, base, [edit(0, 0, 1, "z")], 1.0).answered
    assert not ev.score(none, base, [], 1.0).answered


# ---------------------------------------------------------------------------- through the server


def test_the_eval_drives_the_server_on_mined_cases(tiny_model_dir):
    """Mined cases whose second hunk is the first one's rename: the drafts make the commit exactly;
    a single-hunk case gets no draft; the model row runs on the same server path."""
    cases = [c for c in read_cases(ev.DEFAULT_CASES) if c.id in REPEATS_DRAFTS_SOLVE or c.id == A_NONE]
    assert len(cases) == len(REPEATS_DRAFTS_SOLVE) + 1
    rows = asyncio.run(ev.run_row("drafts alone", "drafts", cases, str(tiny_model_dir)))
    by_kind = {o.kind: o for o in rows.outcomes}
    assert all(o.exact for o in rows.outcomes if o.kind == "repeat")
    assert not by_kind["none"].answered
    summary = rows.summary()
    assert summary["repeat"]["exact"] == 1.0 and summary["none"]["noise"] == 0.0
    model_row = asyncio.run(ev.run_row("model alone", "model", cases, str(tiny_model_dir)))
    assert len(model_row.outcomes) == len(cases)


# Chosen from the committed cases: two repeats the drafts make exactly (an inserted argument, a
# removed qualifier) and one single-hunk commit.
REPEATS_DRAFTS_SOLVE = (
    "mahmoud/boltons@6621cb455d:boltons/setutils.py",
    "mahmoud/boltons@e8ea42e0d3:boltons/urlutils.py",
)
A_NONE = "mahmoud/boltons@29fa061722:boltons/__init__.py"


def test_the_gate_table_counts_what_the_model_wrote_before_the_gate(tiny_model_dir):
    cases = [c for c in read_cases(ev.DEFAULT_CASES) if c.id in REPEATS_DRAFTS_SOLVE or c.id == A_NONE]
    report = gate_report(cases, str(tiny_model_dir))
    assert {k: report[k]["cases"] for k in ("repeat", "follow", "none")} == {
        "repeat": 2,
        "follow": 0,
        "none": 1,
    }
    assert report["engine_medians"]["steps"] >= 1
    for row in (report[k] for k in ("repeat", "follow", "none")):
        assert 0.0 <= row["shown"] <= row["changed"] <= 1.0  # nothing passes the gate that changed nothing
    assert "| none | 1 |" in format_gate(report)


# ---------------------------------------------------------------------------- issue 46: typed as an editor types


def test_keystrokes_make_the_edit_a_word_or_symbol_at_a_time():
    before = "x = f(a, b)\ny = 2\n"
    edit = (before.index("a, b"), before.index("a, b") + 4, "alpha,  beta")
    text = before
    steps = ev.keystrokes(before, edit)
    for start, end, new in steps:
        text = text[:start] + new + text[end:]
    assert text == "x = f(alpha,  beta)\ny = 2\n"
    assert [s[2] for s in steps] == ["", "alpha", ",", "  ", "beta"]  # deleted, then typed
    line = (before.index("y"), before.index("y"), "z = 1\n")  # a line inserted: its break first
    assert ev.keystrokes(before, line)[0] == (before.index("y") - 1, before.index("y") - 1, "\n")


def test_the_copy_rule_and_the_interval():
    base = "a = f(x)\nb = 1\nc = f(x)\n"
    case = ev.Case("x", "o/r", "c", "a.py", "repeat", base, (4, 8, "g(x)"), base.replace("f(x)", "g(x)"))
    text, edits = ev.copy_rule(case)
    assert ev.score(case, text, edits, 0.0).exact
    low, high = ev.wilson(5, 10)
    assert 0.2 < low < 0.5 < high < 0.8 and ev.wilson(0, 0) == (0.0, 0.0)
