"""Issue 50: scoring the workspace's undecided names on a vLLM remote adds one round trip to a
ghost-text request (lab/bench_remote_names.py, against the fake vLLM 0.33.0)."""

from __future__ import annotations

from lab.bench_remote_names import run


def test_scoring_adds_one_round_trip():
    rows = run(requests=5)
    assert rows["no names"]["round_trips_max"] == 1
    assert rows["three undecided names"]["round_trips_median"] == 2  # the read, then the fill
