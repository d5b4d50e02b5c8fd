"""Where fills run, said once: BackendSpec and RemoteConfig check themselves, and make_backend
and connect choose the class once (no server is started here)."""

from __future__ import annotations

import pytest

from difill.engine.backends import (
    BackendError,
    BackendSpec,
    EngineChoice,
    RemoteConfig,
    connect,
    make_backend,
)
from difill.engine.backends.connect import AutoRemote
from difill.engine.backends.difill_remote import DifillRemote
from difill.engine.backends.openai_remote import OpenAIRemote

DEAD = "http://127.0.0.1:9"  # nothing listens there; making a backend asks the server nothing


def test_a_backend_spec_refuses_an_unknown_engine_or_canvas_mode():
    with pytest.raises(ValueError, match="unknown engine 'tpu'"):
        BackendSpec(engine=EngineChoice("tpu"))
    with pytest.raises(ValueError, match="auto, seeded, plain"):
        BackendSpec(remote=DEAD, remote_canvas="always")
    assert BackendSpec() == BackendSpec(None, "auto", None, "auto", EngineChoice())


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"protocol": "grpc"}, "unknown remote protocol 'grpc'"),
        ({"fim": "prefix"}, "unknown fim mode 'prefix'"),
        ({"canvas": "always"}, "unknown remote canvas mode 'always'"),
        ({"url": "ftp://host/"}, "must start with http:// or https://"),
    ],
)
def test_a_remote_config_refuses_what_no_server_speaks(fields, message):
    with pytest.raises(BackendError, match=message):
        RemoteConfig(**{"url": DEAD, **fields})


def test_a_remote_configs_repr_shows_neither_the_key_nor_the_urls_password():
    config = RemoteConfig("http://alice:PASSWORD7@gpu:8765/?token=QUERY7", api_key="KEY7-0123456789")
    assert "PASSWORD7" not in repr(config) and "QUERY7" not in repr(config) and "KEY7" not in repr(config)


@pytest.mark.parametrize(
    "protocol,cls", [("difill", DifillRemote), ("openai", OpenAIRemote), ("auto", AutoRemote)]
)
def test_connect_chooses_the_protocols_class_once(protocol, cls):
    backend = connect(RemoteConfig(DEAD, protocol=protocol))
    try:
        assert type(backend) is cls and backend.protocol == protocol
    finally:
        backend.close()


def test_make_backend_connects_to_the_specs_remote_with_its_canvas_mode():
    backend = make_backend(BackendSpec(remote=DEAD, remote_canvas="plain"))
    try:
        assert isinstance(backend, AutoRemote) and backend.config == RemoteConfig(DEAD, canvas="plain")
        assert backend.describe_path() == "protocol found on the first fill"
    finally:
        backend.close()


def test_every_protocol_a_config_takes_has_its_class():
    from difill.engine.backends.connect import PROTOCOL_CLASSES
    from difill.engine.backends.remote import PROTOCOLS

    assert set(PROTOCOLS) == {"auto", *PROTOCOL_CLASSES}
    assert all(cls.protocol == name for name, cls in PROTOCOL_CLASSES.items())
