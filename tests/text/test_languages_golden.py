"""Golden files per language (tests/text/golden/languages/<language>/): each case's shape from
that language's grammar, and what the whole pipeline shows for a raw middle there.

The filters' own golden cases (test_filters_golden.py) hold the cases of issue 23's filter
classes, each in two languages or more.
"""

from __future__ import annotations

import os

import pytest
from golden_files import GOLDEN_DIR, read_case, write_expected

from difill.engine.api import Candidate
from difill.text.context import build_context
from difill.text.languages import LANGUAGES
from difill.text.pipeline import errors_around, shown_texts
from difill.text.syntax import parser_for

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

LANGUAGE_DIR = GOLDEN_DIR / "languages"
CASES = sorted(LANGUAGE_DIR.glob("*/*.txt"))
UPDATE = os.environ.get("DIFILL_UPDATE_GOLDEN") == "1"


def _context(case):
    language = case.sections["language"].strip()
    parser = parser_for(language)
    assert parser is not None, f"no grammar for {language}"
    tree = parser.parse(case.text.encode("utf-8"))
    return build_context(case.text, case.cursor, language, context_tokens=1024, max_tokens=32, tree=tree)


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_language_case_matches_its_golden_file(path):
    case = read_case(path)
    assert case.sections["language"].strip() == path.parent.name
    ctx = _context(case)
    shown = (shown_texts([Candidate(case.sections["suggestion"], 0, 0.0, True)], ctx) or [""])[0]
    if UPDATE:
        write_expected(case, shown)
        return
    why = case.sections.get("why", path.name)
    assert ctx.shape.kind.value == case.sections["shape"].strip(), f"shape: {why}"
    assert shown == case.sections["expected"], why


def test_every_language_has_five_cases():
    counts = {spec.name: len(list((LANGUAGE_DIR / spec.name).glob("*.txt"))) for spec in LANGUAGES}
    assert all(n >= 5 for n in counts.values()), counts


@pytest.mark.parametrize("spec", LANGUAGES, ids=[s.name for s in LANGUAGES])
def test_ranking_counts_syntax_errors_in_every_language(spec):
    """The ranking's parse (errors_around, pipeline.py) works in each grammar: where a case's
    shown fill leaves the code around it parseable, junk at the same spot does not."""
    checked = 0
    for path in sorted((LANGUAGE_DIR / spec.name).glob("*.txt")):
        case = read_case(path)
        if case.sections["shape"].strip() == "short":
            continue
        ctx = _context(case)
        if errors_around(ctx, case.sections["expected"]) != 0:
            continue  # the case's document is a fragment that does not parse on its own
        assert errors_around(ctx, case.sections["expected"] + ' ( [ " } ) ') > 0, path.name
        checked += 1
    assert checked >= 2
