"""Golden-file tests: each filter alone on its own cases, and the whole pipeline on realistic ones."""

from __future__ import annotations

import os

import pytest
from golden_files import cases, read_case, write_expected

from difill.engine.api import Candidate
from difill.text import filters
from difill.text.context import build_context
from difill.text.pipeline import shown_texts
from difill.text.syntax import parser_for

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

FILTERS = {
    "limit_to_scope": filters.limit_to_scope,
    "trim_suffix_duplicate": filters.trim_suffix_duplicate,
    "drop_existing_closers": filters.drop_existing_closers,
    "drop_repetition": filters.drop_repetition,
    "keep_line_endings": filters.keep_line_endings,
    "normalise_indentation": filters.normalise_indentation,
    "drop_empty": filters.drop_empty,
    "drop_next_lines_duplicate": filters.drop_next_lines_duplicate,
    "drop_control_characters": filters.drop_control_characters,
    "tidy_end": filters.tidy_end,
    "stay_inside_string": filters.stay_inside_string,
    "no_doubled_space": filters.no_doubled_space,
    "after_block_next_line": filters.after_block_next_line,
    "pipeline": lambda text, ctx: (shown_texts([Candidate(text, 0, 0.0, True)], ctx) or [""])[0],
}
UPDATE = os.environ.get("DIFILL_UPDATE_GOLDEN") == "1"


def _context(case):
    language = case.sections.get("language", "python").strip()
    parser = parser_for(language)
    tree = parser.parse(case.text.encode("utf-8")) if parser is not None else None
    return build_context(case.text, case.cursor, language, context_tokens=1024, max_tokens=32, tree=tree)


def _run(folder, path):
    case = read_case(path)
    return case, FILTERS[folder](case.sections["suggestion"], _context(case))


@pytest.mark.parametrize(
    ("folder", "path"),
    [pytest.param(folder, path, id=f"{folder}/{path.stem}") for folder in FILTERS for path in cases(folder)],
)
def test_filter_matches_golden_file(folder, path):
    case, actual = _run(folder, path)
    if UPDATE:
        write_expected(case, actual)
        return
    assert actual == case.sections["expected"], f"{path.name}: {case.sections.get('why', '')}"
    if "shape" in case.sections:  # a case about the shape names the one it expects
        assert _context(case).shape.kind.value == case.sections["shape"].strip(), path.name


def test_every_filter_has_golden_cases():
    missing = [name for name in FILTERS if not cases(name)]
    assert not missing, f"filters without golden cases: {missing}"


def test_every_pipeline_filter_is_covered():
    covered = {FILTERS[name] for name in FILTERS}
    untested = [f.__name__ for f in filters.PIPELINE if f not in covered and f is not filters.middle_to_lf]
    assert not untested
