"""`difill eval --workspace-cases`: repository-level cases, the three rows, the replay inside files."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from difill.engine.api import Candidate, FillResult, FillStats
from difill.server.suggestion_path import ServedModel
from lab import workspace_eval
from lab.training.corpus_sources import (
    PACKAGE_LIST,
    TUNING_PACKAGE_LIST,
    WORKSPACE_PACKAGE_LIST,
    Archive,
    Pin,
    _normalise,
    read_pins,
)
from lab.workspace_eval import (
    PackageIndexes,
    definitions,
    evaluate_workspace,
    fetch_packages,
    format_workspace,
    group_packages,
    local_bindings,
    replay_spots,
    typing_replay_inside,
    workspace_cases,
)

UTIL = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(6)) + "RATE = 3\n"
MAIN = "from pkg.util import helper_1, helper_2\n\n\n" + "".join(
    f"def run_{i}(value):\n    scaled = value * 2\n    return helper_{i % 3}(scaled)\n\n\n" for i in range(14)
)


DOCS = [
    ("pkg==1/pkg/util.py", UTIL),
    ("pkg==1/pkg/main.py", MAIN),
    ("pkg==1/docs/conf.py", "project = 'pkg'\n"),
    ("lonely==2/lonely.py", MAIN),  # a package of one file: no workspace
]


def test_definitions_and_local_bindings():
    assert {"helper_0", "helper_5", "RATE"} <= definitions(UTIL)
    assert {"run_0", "value", "scaled", "helper_2"} <= local_bindings(MAIN + "import os as helper_2\n")
    # A name imported from the package's other file is a cross-file reference, not a local one.
    assert not {"helper_0", "helper_1", "helper_2"} & local_bindings(MAIN)


def test_cases_name_something_defined_in_another_file_of_the_package(tmp_path):
    cases = workspace_cases(group_packages(DOCS), per_shape=4, seed=0)
    assert set(cases) == {"rest_of_line", "whole_line", "multi_line_2_5"}
    assert any(cases.values())
    for shape_cases in cases.values():
        for case in shape_cases:
            assert case.path == "pkg==1/pkg/main.py"  # util.py names nothing from main.py
            assert case.names and case.names <= {"helper_0", "helper_1", "helper_2"}
            assert all(name in case.example.middles[0] for name in case.names)


def test_each_package_is_indexed_as_a_workspace_and_the_case_file_is_never_its_own_context(tmp_path):
    indexes = PackageIndexes(group_packages(DOCS))
    try:
        cursor = MAIN.index("return helper_1") + len("return ")
        live = MAIN[:cursor] + MAIN[cursor + len("helper_1(scaled)") :]  # the answer is not typed yet
        context = indexes.retrieval("pkg==1/pkg/main.py", live, cursor)
        paths = [source for source, _ in context.sources]
        assert paths and all("main.py" not in p for p in paths)
        assert any(p.endswith("pkg/util.py") for p in paths)
        assert any(s.kind == "definition" and s.path == "pkg/util.py" for s in context.snippets)
    finally:
        indexes.close()
    assert not indexes.root.exists()


class TruthEngine:
    """Answers every fill with the document's true rest of line: the scoring must give it full marks."""

    def __init__(self, documents: list[str]) -> None:
        self.documents = documents

    def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None):
        document = next(d for d in self.documents if d.startswith(prefix) and d.endswith(suffix))
        middle = document[len(prefix) : len(document) - len(suffix)]
        text = middle.split("\n")[0] if options.single_line else middle
        return FillResult(
            text, [Candidate(text, 8, 0.0, True)], FillStats(decoder_forwards=2, tokens_per_forward=1.5)
        )


def test_every_row_on_the_same_cases_and_the_replay(tmp_path):
    engine = TruthEngine([MAIN, UTIL])
    report = evaluate_workspace(
        ServedModel(engine), group_packages(DOCS), per_shape=3, seed=0, typing_files=1, typing_lines=2
    )
    for shape, rows in report["cases"].items():
        assert set(rows) == {"retrieval", "model", "seeded", "served"}
        assert rows["model"]["cases"] == rows["seeded"]["cases"] == rows["retrieval"]["cases"]
        assert rows["retrieval"]["mean_forwards"] == 0  # no model
        if shape != "multi_line_2_5":  # one line: the truth, whole
            assert rows["model"]["exact_match"] == 1.0 and rows["model"]["names"] == 1.0
    typing = report["typing"]
    assert set(typing) == {"retrieval", "model", "seeded", "served"}
    assert typing["model"]["accepted"] > 0
    assert typing["model"]["net_saved_share"] < typing["model"]["saved_share"]
    assert "| rest_of_line (3) | seeded |" in format_workspace(report)


def test_the_replay_types_inside_a_file_with_the_rest_below(tmp_path):
    spots = replay_spots(group_packages(DOCS), files=1, lines=2, seed=0)
    (path, before, target, after) = spots[0]
    assert path == "pkg==1/pkg/main.py" and before and after and target.count("\n") == 2
    assert before + target + after == MAIN
    seen = []

    def perfect(text, offset, path):
        seen.append(text[offset:])
        position = offset - len(before)
        rest = target[position:]
        return rest.split("\n")[0], 1.0

    result = typing_replay_inside(perfect, spots)
    assert all(s.endswith(after) for s in seen)  # the suffix is always there
    assert result["characters"] == len(target)
    assert result["net_saved_share"] == round(
        (result["saved_share"] * len(target) - result["accepted"]) / len(target), 4
    )


def test_the_eval_and_tuning_packages_are_disjoint_and_never_in_the_corpus():
    corpus = {_normalise(p.name) for p in read_pins(PACKAGE_LIST)}
    workspaces = {_normalise(p.name) for p in read_pins(WORKSPACE_PACKAGE_LIST)}
    tuning = {_normalise(p.name) for p in read_pins(TUNING_PACKAGE_LIST)}
    assert len(workspaces) >= 5 and len(tuning) >= 5
    assert not corpus & workspaces and not corpus & tuning and not workspaces & tuning


def wheel(path: Path, licence: str, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(
            "demo-1.0.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: demo\nLicense-Expression: {licence}\n",
        )
        for name, text in members.items():
            z.writestr(name, text)
    return path


def test_fetch_packages_keeps_the_corpus_file_rule_and_refuses_copyleft(tmp_path, monkeypatch):
    members = {
        "demo/util.py": UTIL,
        "demo/main.py": MAIN,
        "demo/tests/test_main.py": MAIN,
        "demo/data.json": "{}",
    }
    archives = {"demo": wheel(tmp_path / "demo-1.0-py3-none-any.whl", "MIT", members),
                "gpl": wheel(tmp_path / "gpl-1.0-py3-none-any.whl", "GPL-3.0-only", members)}  # fmt: skip

    def fake_fetch(pin, cache):
        return Archive(pin, archives[pin.name].name, "", archives[pin.name])

    monkeypatch.setattr(workspace_eval, "fetch", fake_fetch)
    packages = fetch_packages([Pin("demo", "1.0")], tmp_path, log=lambda _: None)
    assert [path for path, _ in packages["demo==1.0"]] == ["demo==1.0/demo/main.py", "demo==1.0/demo/util.py"]
    with pytest.raises(RuntimeError, match="not permissive"):
        fetch_packages([Pin("gpl", "1.0")], tmp_path, log=lambda _: None)
