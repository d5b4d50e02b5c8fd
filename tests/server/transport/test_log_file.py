"""The ``logFile`` setting: the server also logs to that file (issue 40: :DifillLog, the output
channel), creating its folder; another file replaces it; None stops it; a bad path says why."""

from __future__ import annotations

import logging

from difill.server.transport.log_messages import use_log_file


def test_the_log_file_setting_writes_there_and_can_be_moved_and_stopped(tmp_path):
    first, second = tmp_path / "a" / "server.log", tmp_path / "b" / "c" / "server.log"
    log = logging.getLogger("difill.server")
    level = log.level
    log.setLevel(logging.INFO)
    try:
        assert use_log_file(str(first)) is None
        log.info("one")
        assert use_log_file(str(second)) is None
        log.info("two")
        assert use_log_file(None) is None
        log.info("three")
    finally:
        use_log_file(None)
        log.setLevel(level)
    assert "one" in first.read_text() and "two" not in first.read_text()
    assert "two" in second.read_text() and "three" not in second.read_text()


def test_a_log_file_that_cannot_be_written_is_named_with_why(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    problem = use_log_file(str(blocker / "server.log"))  # a folder that is a file
    assert problem is not None and str(blocker) in problem
