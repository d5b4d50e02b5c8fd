"""The unit tier (tests/conftest.py): `pytest -m unit` collects only the files that declare
themselves unit files, and collecting them imports no torch (the session fails if it does)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tiers import UNIT_MARK

ROOT = Path(__file__).resolve().parents[1]


def test_the_unit_tier_collects_only_unit_files_and_imports_no_torch():
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "unit", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]  # 1 when torch was imported
    files = {line.split("::")[0] for line in run.stdout.splitlines() if "::" in line}
    assert len(files) >= 10
    for name in files:
        assert UNIT_MARK in (ROOT / name).read_text(encoding="utf-8"), name
    everything = set(ROOT.glob("tests/**/test_*.py"))
    assert len(everything) > len(files)  # the others were not collected
