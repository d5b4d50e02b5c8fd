"""difill's ``remote`` against a real ``mlx_vlm server`` on the CPU, serving the shipped model.

What mlx-vlm's server is (docs/remote.md): chat only (``/v1/completions`` answers 404), no
``/tokenize`` and so no seeded canvas, its own sampler seeded by ``seed``.  The shipped model is
converted to float32 first (``mlx_vlm convert --dtype float32``): MLX's CPU backend runs the
experts' ``gather_mm`` in float32 only.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from difill.engine.api import FillOptions, RewriteRequest
from difill.engine.backends import RemoteConfig, connect
from difill.engine.backends.openai import DROPPED, ENDS_ANSWER
from difill.engine.model import DEFAULT_MODEL_DIR

if sys.platform not in ("linux", "darwin"):  # the only platforms with MLX wheels
    pytest.skip("MLX has no wheels for this platform", allow_module_level=True)

START_DEADLINE_S = 120.0  # loading the 4M model takes ~6 s here; a 2-core machine under load, more
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture(scope="module")
def float32_model(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mlx") / "difill-default-f32"
    command = [sys.executable, "-m", "mlx_vlm", "convert", "--hf-path", str(DEFAULT_MODEL_DIR),
               "--mlx-path", str(out), "--dtype", "float32"]  # fmt: skip
    done = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def another_model(float32_model, tmp_path_factory) -> Path:
    """A second model folder that sorts before the served one ("cached0" < "mlx0"): mlx-vlm's
    /v1/models lists it too (``MLX_VLM_MODEL_PATHS``), as it lists a user's Hugging Face cache."""
    out = tmp_path_factory.mktemp("cached") / "another-model"
    shutil.copytree(float32_model, out, copy_function=os.link)  # hard links: a path of its own
    assert str(out) < str(float32_model)
    return out


@pytest.fixture(scope="module")
def mlx_vlm_server(float32_model, another_model, tmp_path_factory) -> Iterator[str]:
    port = free_port()
    log = (tmp_path_factory.mktemp("mlx-log") / "server.log").open("w")
    command = [sys.executable, "-m", "mlx_vlm", "server", "--model", str(float32_model),
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    env = {**ENV, "MLX_VLM_MODEL_PATHS": str(another_model)}
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        while True:
            assert proc.poll() is None, (
                f"mlx_vlm server exited with {proc.returncode}: {Path(log.name).read_text()[-2000:]}"
            )
            try:
                if httpx.get(url + "/health", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"mlx_vlm server not healthy in {START_DEADLINE_S:.0f} s"
            time.sleep(0.25)  # polling interval, not a wait for a result: the deadline bounds it
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def assert_no_markers(text: str) -> None:
    for marker in (*ENDS_ANSWER, *DROPPED):
        assert marker not in text


def test_remote_fills_through_mlx_vlms_chat_endpoint(mlx_vlm_server, another_model):
    remote = connect(RemoteConfig(mlx_vlm_server, timeout_s=120.0))
    options = FillOptions(seed=7, max_hole_tokens=8)
    first = remote.fill("def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n", options)
    assert remote.protocol == "openai"  # its /health is not difill's
    assert remote.chosen.fim == "chat"  # /v1/completions answered 404: chat from now on
    assert "HTTP 404" in remote.describe_path()  # no /tokenize: no seeded canvas
    # The model it serves, not the first one /v1/models lists (another-model): asking for that
    # one made the server load it in place of the served one.
    assert remote.chosen.model == str(remote.chosen.model) and remote.chosen.model.endswith(
        "difill-default-f32"
    )
    listed = httpx.get(mlx_vlm_server + "/v1/models", timeout=10.0).json()["data"]
    assert [m["id"] for m in listed][0] == str(another_model)
    assert [m["id"] for m in listed if m["loaded"]] == [remote.chosen.model]
    assert first.candidates and first.stats.hole_tokens <= 8
    assert_no_markers(first.text)
    # Its sampler takes `seed`: the same request gives the same answer.
    again = remote.fill("def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n", options)
    assert again.text == first.text
    remote.close()


def test_remote_rewrites_through_mlx_vlms_chat_endpoint(mlx_vlm_server):
    remote = connect(RemoteConfig(mlx_vlm_server, timeout_s=120.0))
    request = RewriteRequest("def area(w, h):\n", "    return w * h\n", "\n", instruction="use names")
    result = remote.rewrite(request, FillOptions(max_hole_tokens=8))
    assert_no_markers(result.text)
    remote.close()
