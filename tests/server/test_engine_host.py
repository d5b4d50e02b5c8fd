"""Which backend the server runs: the remote setting and the AR baseline's checkpoints."""

from __future__ import annotations

import logging

import pytest

from difill.engine.backends import BackendError, BackendSpec, RemoteBackend
from difill.engine.infill import InfillEngine
from difill.server import engine_host
from difill.server.engine_host import EngineHost, LoadProgress, ModelState, _load_engine


def test_local_model_gives_the_in_process_engine(tiny_model_dir):
    assert isinstance(_load_engine(BackendSpec(str(tiny_model_dir), "cpu")), InfillEngine)


def test_remote_setting_gives_the_remote_backend_and_its_clear_error():
    # Nothing listens on this port: the backend must say so in one message, never hang.
    # Built outside pytest.raises, so an error while building it fails the test instead of passing it.
    backend = _load_engine(BackendSpec(None, "cpu", "http://127.0.0.1:9"))
    assert isinstance(backend, RemoteBackend)
    try:
        with pytest.raises(BackendError) as err:
            backend.fill("x = ", "\n")
    finally:
        backend.close()
    assert "127.0.0.1:9" in str(err.value)


def _broken_checkpoint(spec):
    raise KeyError("model.decoder.layers.0.weight")  # what a checkpoint missing a tensor raises


async def test_a_load_failure_is_logged_with_its_traceback(monkeypatch, caplog):
    monkeypatch.setattr(engine_host, "_import_engine", lambda: None)
    monkeypatch.setattr(engine_host, "_load_engine", _broken_checkpoint)
    statuses = []
    host = EngineHost(lambda state, message, latency: statuses.append((state, message)))
    try:
        with caplog.at_level(logging.ERROR, logger="difill.server"):
            await host.load(BackendSpec("/no/such/model", "cpu"), LoadProgress())
    finally:
        host.shutdown()
    assert host.state == ModelState.ERROR
    assert statuses[-1] == ("error", "KeyError: 'model.decoder.layers.0.weight'")
    [record] = [r for r in caplog.records if "could not load its model" in r.getMessage()]
    assert record.exc_info is not None and record.exc_info[0] is KeyError
    assert "_broken_checkpoint" in caplog.text  # the traceback names where it failed
