"""Drafts reach serve-http: a remote fill seeds the same draft rows as a local one."""

from __future__ import annotations

from backend_helpers import SERVER_KEY

from difill.engine.api import FillOptions
from difill.engine.backends import RemoteConfig, connect

PREFIX = "def add(a, b):\n    return"
SUFFIX = "\n\n\nprint(add(1, 2))\n"


def test_a_remote_fill_with_drafts_matches_the_local_engine(served, local_engine):
    remote = connect(RemoteConfig(served, api_key=SERVER_KEY))
    try:
        options = FillOptions(seed=3, max_hole_tokens=8, drafts=(" a + b", " b + a"))
        local = local_engine.fill(PREFIX, SUFFIX, options)
        got = remote.fill(PREFIX, SUFFIX, options)
        assert got.stats.draft_rows == local.stats.draft_rows == 2
        assert [(c.text, c.source) for c in got.candidates] == [(c.text, c.source) for c in local.candidates]
    finally:
        remote.close()
