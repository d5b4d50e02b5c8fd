"""`difill bench --team`'s replay counts what goes over the wire (lab/bench_team.py)."""

from __future__ import annotations

from difill.engine.backends import RemoteConfig, connect
from lab.bench_team import format_team, replay, typed_document
from lab.fake_vllm import FakeVllm


def test_the_typed_line_is_put_back_where_it_was():
    document, offset, typed = typed_document()
    assert len(typed) > 30 and document[offset] == "\n" and typed not in document


def test_replay_counts_round_trips_and_bytes_per_keystroke(fake_server):
    figures = {}
    for name, contract in (("vllm-seeded", True), ("vllm-plain", False)):
        fake = FakeVllm(contract=contract, numbered=True)
        remote = connect(RemoteConfig(fake_server(fake)))
        try:
            figures[name] = replay(remote, keystrokes=3)
        finally:
            remote.close()
        after_setup = len(fake.requests) - figures[name]["setup_round_trips"]
        assert after_setup == 3 * figures[name]["round_trips_per_keystroke"]  # the fake saw them all
    seeded, plain = figures["vllm-seeded"], figures["vllm-plain"]
    assert seeded["setup_paths"][:4] == ["/health", "/version", "/v1/models", "/tokenize"]
    assert seeded["round_trips_per_keystroke"] == 1.0  # the completion: the suffix's ids and text are cached
    assert plain["round_trips_per_keystroke"] == 1.0  # the chat prompt
    assert 0 < seeded["bytes_sent_per_keystroke"] < plain["bytes_sent_per_keystroke"]
    table = format_team({"rtt_ms": 20.0, "mbit_s": 20.0, "serve-http": seeded, **figures})
    assert "| round trips per keystroke | 1.0 | 1.0 | 1.0 |" in table
