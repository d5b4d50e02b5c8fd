"""Shared fixtures: a tiny, randomly initialised DiffusionGemma saved to disk and loaded back
through the real loading path (safetensors + tokenizer.json).

The tiers: ``pytest -m unit`` runs the test files that declare ``pytestmark = pytest.mark.unit``
(pure functions: text rules, shapes, filters, the context index, settings; no model, no server,
no editor) and collects no other file, so torch is never imported; the run fails if it was.
Plain ``pytest`` (the README's command, CI's) runs everything.  docs/testing.md has the times.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

import pytest
from tiers import UNIT_MARK

TINY_CORPUS_MODULES = ("textwrap", "string", "json.encoder", "shlex")

# torch is the reference engine of the tests (engine/backends: DIFILL_ENGINE replaces "auto"), so a
# built llama.cpp worker does not change what they run; tests/engine/native/test_llamacpp.py picks llama.cpp
# itself, and the servers the tests start inherit this.
os.environ.setdefault("DIFILL_ENGINE", "torch")


def _tiny_corpus() -> list[str]:
    import importlib

    texts = [inspect.getsource(importlib.import_module(name)) for name in TINY_CORPUS_MODULES]
    texts.append("한국어 주석 😀 emoji\r\nwindows line\r\n\ttabbed\n")
    return texts


def build_tiny_model(out: Path, seed: int = 0) -> Path:
    """A 2-layer, 32-wide DiffusionGemma with a 600-token BPE, saved like a real checkpoint."""
    import torch  # here, not at the top: the unit tier imports this file and no torch
    from transformers import DiffusionGemmaForBlockDiffusion

    from difill.engine.model import ModelShape, build_config
    from difill.engine.vocab import TokenIds
    from lab.training.tokenizer import save_tokenizer, train_tokenizer

    tokenizer = train_tokenizer(_tiny_corpus(), vocab_size=600)
    ids = TokenIds.from_tokenizer(tokenizer, len(tokenizer))
    shape = ModelShape(hidden_size=32, num_layers=2, num_heads=2, num_kv_heads=1, max_positions=512)
    config = build_config(ids, shape)
    config.difill = {"max_prefix_tokens": 128}
    torch.manual_seed(seed)
    model = DiffusionGemmaForBlockDiffusion(config)
    model.save_pretrained(out)
    save_tokenizer(tokenizer, out)
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny_model"))


@pytest.fixture(scope="session")
def gemma_model_dir(tmp_path_factory) -> Path:
    from real_shape import build_gemma_like_model

    return build_gemma_like_model(tmp_path_factory.mktemp("gemma_like_model"))


def _unit_tier(config: pytest.Config) -> bool:
    return (config.option.markexpr or "").strip() == "unit"


def _is_unit_file(path: Path) -> bool:
    return UNIT_MARK in path.read_text(encoding="utf-8")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With ``-m unit``, a test file is collected only when it declares itself a unit file, and a
    folder only when it holds one: importing the others (or their folder's conftest.py) would
    import torch before the marker could deselect their tests."""
    if not _unit_tier(config):
        return None
    if collection_path.is_dir():
        return not any(_is_unit_file(p) for p in collection_path.rglob("test_*.py"))
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return not _is_unit_file(collection_path)


def pytest_sessionstart(session: pytest.Session) -> None:
    """The whole suite (no paths given) builds the llama.cpp worker first, once, with every core:
    its tests would build it anyway, and a build inside the run (under xdist, while the other
    workers' servers start) starves them.  A run of chosen files builds it only if its tests ask."""
    config = session.config
    whole_suite = config.args_source is pytest.Config.ArgsSource.TESTPATHS
    if hasattr(config, "workerinput") or not whole_suite or _unit_tier(config):
        return  # an xdist worker: the controller built it
    from difill.engine.native.build import BuildError, build_native

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    try:
        result = build_native(log=lambda line: None)
    except BuildError as err:  # its tests fail with the same message
        if reporter is not None:
            reporter.write_line(f"llama.cpp worker: not built ({err})")
        return
    if reporter is not None:
        state = f"built in {result.seconds:.0f} s" if result.built else "current"
        reporter.write_line(f"llama.cpp worker: {state} ({result.binary})")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _unit_tier(session.config) and "torch" in sys.modules:
        print("\nthe unit tier imported torch: a unit file (or its conftest) must not", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
