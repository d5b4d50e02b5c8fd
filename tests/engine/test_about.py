"""Issue 48, item 4: a backend says what it is (``InfillBackend.about``); the server never probes
its attributes.  The shipped model's engine, and a remote that has not connected yet."""

from __future__ import annotations

from difill.engine.api import UNKNOWN, About, about, runs_jobs_between_steps
from difill.engine.backends import RemoteConfig, connect
from difill.engine.infill import InfillEngine
from difill.engine.model import DEFAULT_MODEL_DIR, load_model


def test_the_shipped_engine_and_a_remote_say_what_they_are():
    engine = InfillEngine(load_model(DEFAULT_MODEL_DIR, device="cpu"))
    said = about(engine)
    assert (said.engine, said.drafts, said.one_fill_state, said.scores_names) == ("torch", "show", False, True)
    assert said.where == str(engine.loaded.path) and said.languages == tuple(engine.loaded.languages)
    assert runs_jobs_between_steps(engine)
    remote = connect(RemoteConfig("http://user:secret@127.0.0.1:9/", protocol="difill"))
    try:
        said = about(remote)
        assert said.engine == "remote" and "secret" not in said.where and not said.scores_names
    finally:
        remote.close()
    assert about(object()) is UNKNOWN and isinstance(UNKNOWN, About)
