"""Gitignore matching (server/context/ignore.py): the same answers as git itself, and linear time
on the patterns that make a backtracking regular expression explode (issue 37, item 5)."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from difill.server.context import ignore

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

RULES = """\
# a comment
*.log
!keep.log
/rooted.txt
build/
docs/**/*.md
**/cache
a/**/z
trail/**
name\\ with\\ space\\{escaped_space}
\\#hash
\\!bang
[abc]x.py
[!0-9]y.py
?q.py
sub/deep/
foo*bar
\\*.lit
\\?q.lit
""".format(escaped_space=" ")  # an escaped trailing space: written here, kept by ruff
PATHS = [
    "x.log", "d/x.log", "keep.log", "d/keep.log", "rooted.txt", "d/rooted.txt", "build", "d/build",
    "build.py", "docs/a.md", "docs/x/y/a.md", "docs/a.txt", "cache", "d/e/cache", "a/z", "a/b/c/z",
    "b/a/z", "trail", "trail/x", "trail/x/y", "name with space ", "name with space", "#hash",
    "!bang", "ax.py", "dx.py", "ay.py", "1y.py", "xq.py", "xxq.py", "sub/deep", "d/sub/deep",
    "foobar", "foo_x_bar", "d/foo.bar", "plain.py", "*.lit", "x.lit", "?q.lit", "xq.lit",
]  # fmt: skip
DIRECTORIES = {"build", "d/build", "cache", "d/e/cache", "trail", "trail/x", "sub/deep", "d/sub/deep"}


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: nothing to compare with")
def test_decisions_match_git_check_ignore(tmp_path: Path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(RULES)
    for path in PATHS:  # git decides on directories by what is on disk
        target = tmp_path / path
        if path in DIRECTORIES:
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("x")
    answer = subprocess.run(
        ["git", "-C", str(tmp_path), "check-ignore", "--no-index", "--stdin", "-z", "-n", "-v"],
        input="\0".join(PATHS) + "\0",
        capture_output=True,
        text=True,
    )
    fields = answer.stdout.split("\0")
    # -v -n: source, line, pattern, path for each path; an empty source: no pattern matched
    git = {}
    for i in range(0, len(fields) - 3, 4):
        source, pattern, path = fields[i], fields[i + 2], fields[i + 3]
        git[path] = bool(source) and not pattern.startswith("!")
    rule_set = ignore.RuleSet(ignore.parse(RULES))
    ours = {path: ignore.ignored((rule_set,), path, path in DIRECTORIES) for path in PATHS}
    assert set(git) == set(PATHS)
    assert ours == git, {p: (ours[p], git[p]) for p in PATHS if ours[p] != git[p]}


def test_the_last_matching_rule_decides_across_rule_sets():
    top = ignore.RuleSet(ignore.parse("*.gen.py\n"))
    below = ignore.RuleSet(ignore.parse("!keep.gen.py\n"), base="pkg")
    assert ignore.ignored((top, below), "pkg/x.gen.py", False)
    assert not ignore.ignored((top, below), "pkg/keep.gen.py", False)
    assert ignore.ignored((top, below), "keep.gen.py", False)  # the rule in pkg/ does not reach up
    above = ignore.RuleSet(ignore.parse("/sub/only_here.py\n"), prepend="sub/")  # the repository root's
    assert ignore.ignored((above,), "only_here.py", False)
    assert not ignore.ignored((above,), "deeper/only_here.py", False)


def test_a_hostile_pattern_is_matched_in_linear_time():
    """12 stars: a backtracking regex takes exponential time on a near-miss name; here each name is
    at most pattern x name steps.  Run on a thread with a deadline: a regression hangs, not passes."""
    rule_set = ignore.RuleSet(ignore.parse("*a*a*a*a*a*a*a*a*a*a*a*a*b\n" + "*a" * 400 + "*b\n"))
    names = ["a" * n for n in (60, 255, 1000)] + ["a/" * 100 + "a" * 200]
    results: list[bool] = []
    worker = threading.Thread(
        target=lambda: results.extend(ignore.ignored((rule_set,), n, False) for n in names)
    )
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "matching a hostile .gitignore pattern took more than 10 s"
    assert results == [False] * len(names)
    assert ignore.ignored((rule_set,), "a" * 200 + "b", False)


def test_unusable_lines_are_dropped_not_fatal():
    rules = ignore.parse("x" * 5000 + "\n" + "trailing\\\n" + "ok.py\n" + "!\n" + "/\n")
    assert [rule.text for rule in rules] == ["ok.py"]
    assert len(ignore.parse("\n".join(f"f{i}.py" for i in range(10 * ignore.MAX_RULES)))) == ignore.MAX_RULES
