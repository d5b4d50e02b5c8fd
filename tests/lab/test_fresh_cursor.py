"""Issue 46, part 3: rest of line at a fresh cursor, on projects read from git, through `difill
serve` with the case's own file off the disk.  The case rules, the copy rule, the scoring of an
item with a range, and the served row on a repository made here."""

from __future__ import annotations

import asyncio
import random
import subprocess
from pathlib import Path

from lsprotocol import types

from lab import fresh_cursor as fc

APP = (
    "import os\n\n\n"
    "def load(path):\n"
    '    """Read a file.\n\n    text = path.read()\n    """\n'
    "    with open(path) as handle:\n"
    "        return handle.read().strip()\n"
    "# a comment line that is long\n"
)


def repository(root: Path) -> tuple[str, str]:
    """A git repository with a source file, a test, a declaration file and a Go file."""
    files = {
        "pkg/app.py": APP,
        "pkg/other.go": "package pkg\n\nfunc Size(items []int) int {\n\treturn len(items) + 1\n}\n",
        "tests/test_app.py": "def test_load():\n    assert load('x') == 'y'\n",
        "web/types.d.ts": "export declare function size(items: number[]): number;\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    return str(root / ".git"), commit.stdout.strip()


def test_cases_are_code_lines_cut_after_their_first_token(tmp_path):
    git_dir, commit = repository(tmp_path / "repo")
    project = fc.export("demo", git_dir, commit, tmp_path / "out")
    assert sorted(project.files) == ["pkg/app.py", "pkg/other.go"]  # no tests, no .d.ts
    cases = fc.cases_of(project, per_file=10, rng=random.Random(0))
    lines = {case.line for case in cases}
    # Not a docstring's line, a comment, a blank or a short one; not a line of fewer than 3 tokens.
    assert lines == {
        "def load(path):",
        "    with open(path) as handle:",
        "        return handle.read().strip()",
        "func Size(items []int) int {",
        "\treturn len(items) + 1",
    }
    for case in cases:
        start = case.text.rfind("\n", 0, case.offset) + 1
        typed = case.text[start : case.offset]
        assert case.line.startswith(typed) and typed.strip() and typed.strip() != case.line.strip()
        assert case.line not in case.text  # the rest of the line is cut, the rest of the file kept
        assert case.text[case.offset :].startswith("\n")
        assert {c.language for c in cases if c.path.endswith(".go")} <= {"go"}


def test_an_item_with_a_range_is_applied_before_the_line_is_compared():
    line = "        return handle.read().strip()"
    cut = line.index("handle")
    text = APP.replace(line, line[:cut])
    offset = text.index(line[:cut]) + cut
    case = fc.FreshCase("demo", "pkg/app.py", "python", text, offset, line)
    assert fc.is_exact(case, fc.line_after(case, offset, offset, "handle.read().strip()"))
    # An item that replaces the typed word: the line after it is what counts.
    back = offset - len("return ")
    assert fc.is_exact(case, fc.line_after(case, back, offset, "return handle.read().strip()  "))
    assert not fc.is_exact(case, fc.line_after(case, offset, offset, "handle.read()"))
    position = types.Position(line=text.count("\n", 0, offset), character=len(line[:cut]))
    assert fc.offset_of(text, position.line, position.character) == offset


def test_the_copy_rule_takes_the_nearest_line_with_the_typed_start():
    text = "x = load(a)\ny = 2\nx = load(b)\nz = 3\nx = \nw = 4\nx = load(c)\n"
    offset = text.index("x = \n") + len("x = ")
    case = fc.FreshCase("demo", "a.py", "python", text, offset, "x = load(c)")
    assert fc.copy_rule(case) == "load(b)"  # lines 2 and 6 are as near: the first of them
    lone = fc.FreshCase("demo", "a.py", "python", "q = \n", 4, "q = 1")
    assert fc.copy_rule(lone) == ""


def test_the_served_row_asks_the_server_with_the_file_off_the_disk(tmp_path, tiny_model_dir, monkeypatch):
    git_dir, commit = repository(tmp_path / "repo")
    project = fc.export("demo", git_dir, commit, tmp_path / "out")
    cases = fc.cases_of(project, per_file=2, rng=random.Random(1))
    ask = fc.FreshClient.ask
    on_disk = []

    async def asked(self, root, case):
        if case.project:  # not the unscored warm-up request
            on_disk.append(sorted(p.relative_to(root).as_posix() for p in root.rglob("*.*")))
        return await ask(self, root, case)

    monkeypatch.setattr(fc.FreshClient, "ask", asked)
    outcomes = asyncio.run(fc.served_outcomes(project, cases, group=1, model_dir=str(tiny_model_dir)))
    assert [o.case for o in outcomes] == cases and all(o.ms is not None for o in outcomes)
    for o in outcomes:
        assert o.exact == fc.is_exact(o.case, o.line)  # the shown line is what was scored
    for case, seen in zip(cases, on_disk, strict=True):
        assert case.path not in seen and len(seen) == 3  # only its own file is off the disk
    assert (project.root / "pkg/app.py").read_text() == APP  # each file is back afterwards
    rows = fc.report(outcomes + fc.copy_outcomes(cases))
    assert {(r["by"], r["name"], r["row"]) for r in rows} >= {
        ("language", "python", "served"),
        ("language", "go", "copy rule"),
        ("project", "demo", "served"),
    }
    assert "| language | go | served |" in fc.format_report(rows)
