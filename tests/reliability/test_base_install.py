"""Issue 66 (item 1) and issue 64 (item 4): the base install, `pip install difill`, has no torch
and serves a remote and the llama.cpp engine.  A fresh venv gets the package built from this tree
(pip reads the wheels the machine has, or PyPI), then `difill serve` from that venv answers ghost
text from the fake vLLM (lab/fake_vllm.py) and from the llama.cpp worker (the shipped model,
its sampler in NumPy), and the torch engine says what to install in one line.

Beside it, in the suite's own venv (which has torch): a served remote never imports torch or
transformers, read from the server's own ``-X importtime`` (PYTHONPROFILEIMPORTTIME), as are
``difill --version`` and the way to ``initialize``'s answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
from stdio_client import StdioServer

from difill.engine.native.build import build_native
from lab.fake_vllm import FakeVllm, serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = "def add(a, b):\n    return \n\nprint(add(1, 2))\n"
HEAVY = ("torch", "transformers")


@pytest.fixture(scope="module")
def base_venv(tmp_path_factory) -> Path:
    """A venv with `pip install <this tree>` and nothing else: its python."""
    folder = tmp_path_factory.mktemp("base-install")
    venv.create(folder / "venv", with_pip=True)
    python = folder / "venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", str(ROOT)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return python


@pytest.fixture()
def fake_url() -> Iterator[str]:
    url, stop = serve_in_thread(FakeVllm(canvas_length=256))
    yield url
    stop()


def imported(stderr: str) -> set[str]:
    """The top-level packages an ``-X importtime`` log says were imported."""
    return {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in stderr.splitlines() if "|" in line}


def ghost_text(server: StdioServer, url: str, root: Path) -> str:
    server.initialize(options={"remote": url}, root_uri=root.as_uri())
    ready = server.wait_ready(120)["params"]
    assert ready["state"] == "ready", ready
    return inline_completion(server, root)["items"][0]["insertText"]


def inline_completion(server: StdioServer, root: Path) -> dict:
    """Open add.py and ask for ghost text after its `return `, as an invoked ask: the result."""
    uri = (root / "add.py").as_uri()
    server.notify("textDocument/didOpen", {
        "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": DOCUMENT}})  # fmt: skip
    answer = server.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": 1, "character": 11},
        "context": {"triggerKind": 1}})  # fmt: skip
    return answer["result"]


@pytest.mark.slow
def test_the_base_install_has_no_torch_and_serves_a_remote_and_llama_cpp(base_venv, fake_url, tmp_path):
    no_path = {"PYTHONPATH": "", "DIFILL_API_KEY": ""}  # the venv's difill, not this tree's
    probe = subprocess.run([base_venv, "-c", "import difill, torch"], capture_output=True, text=True)
    assert "No module named 'torch'" in probe.stderr  # before: torch was a dependency of difill
    server = StdioServer(None, tmp_path / "stderr.txt", env=no_path, python=base_venv)
    try:
        assert ghost_text(server, fake_url, tmp_path) == "a + b"
    finally:
        server.close()
    # The llama.cpp engine serves without torch too: the sampler is NumPy's (engine/sampler.py).
    build_native(log=lambda line: None)  # the worker, into the cache the venv's server reads
    server = StdioServer(None, tmp_path / "stderr-llamacpp.txt", env=no_path, python=base_venv)
    try:
        server.initialize(options={"engine": "llamacpp"}, root_uri=tmp_path.as_uri())
        status = server.wait_ready(120)["params"]
        assert status["state"] == "ready" and "(llama.cpp)" in status["message"], status
        assert "items" in inline_completion(server, tmp_path)  # an answer, shown or gated
    finally:
        server.close()
    (tmp_path / "add.py").write_text(DOCUMENT)
    fill = subprocess.run(
        [base_venv, "-m", "difill", "fill", f"{tmp_path / 'add.py'}:2:12", "--engine", "llamacpp", "--json"],
        capture_output=True, text=True, env={**os.environ, **no_path}, cwd=tmp_path,
    )  # fmt: skip
    assert fill.returncode == 0 and json.loads(fill.stdout)["candidates"], fill.stderr
    # The torch engine says what to install, in one line, and fails.
    fill = subprocess.run(
        [base_venv, "-m", "difill", "fill", f"{tmp_path / 'add.py'}:2:12", "--engine", "torch"],
        capture_output=True, text=True, env={**os.environ, **no_path}, cwd=tmp_path,
    )  # fmt: skip
    assert fill.returncode != 0
    assert 'pip install "difill[torch]"' in fill.stderr and "Traceback" not in fill.stderr, fill.stderr


def test_a_served_remote_imports_no_torch(fake_url, tmp_path):
    server = StdioServer(
        None, tmp_path / "stderr.txt", env={"PYTHONPROFILEIMPORTTIME": "1", "DIFILL_API_KEY": ""}
    )
    try:
        assert ghost_text(server, fake_url, tmp_path) == "a + b"
    finally:
        server.close()
    assert imported(server.stderr_text()).isdisjoint(HEAVY)


def test_version_and_initialize_import_no_torch(tmp_path):
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    version = subprocess.run(
        [sys.executable, "-m", "difill", "--version"], capture_output=True, text=True, env=env
    )
    assert version.stdout.startswith("difill ") and imported(version.stderr).isdisjoint(HEAVY)
    # initialize alone: the model loads after `initialized`, which is never sent, so what is
    # imported is the way to the answer.
    server = StdioServer(None, tmp_path / "stderr.txt", env={"PYTHONPROFILEIMPORTTIME": "1"})
    try:
        answer = server.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert "capabilities" in answer["result"]
        server.stop_reading()
        before_load = server.stderr_text()
    finally:
        server.close()
    assert imported(before_load).isdisjoint(HEAVY)


def test_the_llama_cpp_engine_loads_no_modeling_code():
    """Its forwards run in the worker: transformers' modeling code (with torch's compiler and
    scipy, about 120 MB resident and seconds to import) is the torch engine's alone."""
    probe = (
        "import sys, difill.engine.native.engine, difill.engine.infill; "
        "print(sorted(m for m in sys.modules if m.startswith(('transformers.modeling_utils', 'torch._dynamo', 'scipy'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"  # before: modeling_utils, torch._dynamo and scipy


@pytest.mark.slow
def test_the_installed_package_leaves_the_lab_out(base_venv, tmp_path):
    # Issue 65 item 7: the wheel ships what users run; the lab's commands say, in one line, where
    # they run (a clone), instead of failing on an import.
    env = {**os.environ, "PYTHONPATH": ""}
    files = subprocess.run(
        [base_venv, "-c", "import importlib.metadata as m; print('\\n'.join(str(f) for f in m.files('difill')))"],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=True,
    ).stdout.split()  # fmt: skip
    assert "difill/cli.py" in files and not [f for f in files if "lab" in f.split("/")], files
    for command in ("eval", "bench", "train"):
        done = subprocess.run([base_venv, "-m", "difill", command], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert done.returncode != 0 and done.stderr.count("\n") == 1, done.stderr
        assert f"difill {command} needs the lab" in done.stderr and "clone" in done.stderr, done.stderr


def test_the_llama_cpp_engine_reads_its_checkpoint_without_transformers():
    """``difill fill`` on the llama.cpp engine reads the shipped checkpoint's tokenizer and configs
    without transformers: importing it builds its registry of every model (0.4 s), and
    DiffusionGemmaConfig's validators import torch.distributed.tensor (0.6 s), of a 2.7 s fill
    (docs/install.md).  The worker runs the weights; the tokenizer is engine/file_tokenizer.py's."""
    probe = (
        "import sys; from difill.engine.native.engine import load_checkpoint_meta; load_checkpoint_meta(); "
        "print(sorted(m for m in sys.modules if m.startswith('transformers') or m == 'torch.distributed.tensor'))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"  # before: transformers, its models, torch.distributed.tensor
