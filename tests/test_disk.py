"""Issue 62: stamps are written whole or not at all; temporary folders of killed processes are
found and removed, and a live process's never."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

from difill.engine import disk

pytestmark = pytest.mark.unit  # torch-free: `pytest -m unit` (tests/conftest.py; tests/engine/conftest.py loads a model)


def test_a_file_written_atomically_leaves_no_temporary_file(tmp_path):
    disk.write_atomically(tmp_path / "stamp.json", "{}")
    disk.write_atomically(tmp_path / "stamp.json", '{"a": 1}')
    assert (tmp_path / "stamp.json").read_text() == '{"a": 1}'
    assert os.listdir(tmp_path) == ["stamp.json"]


OWNER = """
import sys, time
from difill.engine import disk
print(disk.OwnedDir(sys.argv[1]).path, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(disk.fcntl is None, reason="no flock on this platform: nothing is swept")
def test_a_killed_owners_folder_is_swept_and_a_live_ones_is_not(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir reads TMPDIR again
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    owners = [
        subprocess.Popen(
            [sys.executable, "-c", OWNER, "difill-test-"], stdout=subprocess.PIPE, env=env, text=True
        )
        for _ in range(2)
    ]
    try:
        dead, live = (owner.stdout.readline().strip() for owner in owners)
        mine = disk.OwnedDir("difill-test-")  # this process's own: locked from another description
        owners[0].kill()
        owners[0].wait()
        assert disk.sweep("difill-test-") == [dead]
        assert not os.path.exists(dead) and os.path.isdir(live) and os.path.isdir(mine.path)
        mine.remove()
        assert not os.path.exists(mine.path)
    finally:
        for owner in owners:
            owner.kill()
            owner.wait()


def test_the_mlx_view_of_a_checkpoint_is_an_owned_folder_removed_after_use(tmp_path, monkeypatch):
    from difill.engine.mlx import runtime

    (tmp_path / "model.safetensors").write_bytes(b"")
    monkeypatch.setattr(runtime, "completed_config", lambda path: {"completed": True})
    with runtime.mlx_readable(tmp_path) as view:
        assert view.name.startswith(runtime.VIEW_PREFIX) and (view / disk.LOCK).is_file()
        assert (view / "model.safetensors").resolve() == (tmp_path / "model.safetensors").resolve()
    assert not view.exists()
