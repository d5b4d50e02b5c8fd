"""jedi's process is bounded while it works (issue 62 row 4): past its memory bound or its wall
clock it is killed mid-request, each kind of kill is logged once, and the next request starts a
new process that answers.  Files it must not parse read as empty."""

from __future__ import annotations

import logging
import os

import pytest

from difill.server.context import jedi_bounds, jedi_process
from difill.server.context.jedi_process import JediProcess


def allowed(path: str) -> bool:
    return False  # the policy denies nothing


def gone(pid: int) -> bool:
    try:
        return "State:\tZ" in open(f"/proc/{pid}/status").read()
    except FileNotFoundError:
        return True


@pytest.fixture()
def process(monkeypatch):
    monkeypatch.setattr(jedi_bounds, "_killed_for", set())
    process = JediProcess()
    yield process
    process.close()


def test_a_process_past_its_memory_bound_while_it_works_is_killed_and_logged_once(process, monkeypatch, caplog):
    monkeypatch.setattr(jedi_bounds, "MAX_WORKING_RSS_MB", 1)  # any Python passes it at once
    caplog.set_level(logging.DEBUG, logger="difill.server")
    names, why = process.request(("warm", None), allowed)
    assert names is None and "passed 1 MB while it worked" in why  # f7ad0f7: the bound was read after an answer
    assert gone(process.pid)
    process.request(("warm", None), allowed)  # killed again: logged at debug level
    kills = [r for r in caplog.records if "while it worked" in r.getMessage()]
    assert [r.levelno for r in kills] == [logging.WARNING, logging.DEBUG]
    monkeypatch.setattr(jedi_bounds, "MAX_WORKING_RSS_MB", 1536)
    names, why = process.request(("complete", "import os\nos.pat", 2, 6, None, None, (), None), allowed)
    assert why is None and any(name == "path" for name, *_ in names)  # a new process answers


def test_a_process_past_its_wall_clock_is_killed(process, monkeypatch):
    monkeypatch.setattr(jedi_process, "TIMEOUT_S", 0.2)  # the warm-up takes seconds
    names, why = process.request(("warm", None), allowed)
    assert names is None and "no answer within" in why
    assert gone(process.pid)


def test_devices_fifos_and_huge_modules_are_not_parsed(tmp_path):
    small, big, fifo = tmp_path / "small.py", tmp_path / "big.py", tmp_path / "fifo.py"
    small.write_text("x = 1\n")
    big.write_bytes(b"#" * (jedi_bounds.MAX_MODULE_BYTES + 1))
    os.mkfifo(fifo)
    assert [jedi_bounds.not_parsed(str(p)) for p in (small, big, fifo)] == [False, True, True]
    assert jedi_bounds.not_parsed("/dev/zero") and not jedi_bounds.not_parsed(str(tmp_path / "missing.py"))
