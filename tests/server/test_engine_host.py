"""Which backend the server runs: the remote setting and the AR baseline's checkpoints."""

from __future__ import annotations

import pytest

from difill.engine.backends import BackendError, RemoteBackend
from difill.engine.infill import InfillEngine
from difill.server.engine_host import _load_engine


def test_local_model_gives_the_in_process_engine(tiny_model_dir):
    assert isinstance(_load_engine(str(tiny_model_dir), "cpu"), InfillEngine)


def test_remote_setting_gives_the_remote_backend_and_its_clear_error():
    # Nothing listens on this port: the backend must say so in one message, never hang.
    # Built outside pytest.raises, so an error while building it fails the test instead of passing it.
    backend = _load_engine(None, "cpu", "http://127.0.0.1:9")
    assert isinstance(backend, RemoteBackend)
    try:
        with pytest.raises(BackendError) as err:
            backend.fill("x = ", "\n")
    finally:
        backend.close()
    assert "127.0.0.1:9" in str(err.value)
