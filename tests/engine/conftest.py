from __future__ import annotations

import pytest

from difill.engine.infill import InfillEngine
from difill.engine.model import load_model


@pytest.fixture(scope="session")
def loaded(tiny_model_dir):
    return load_model(tiny_model_dir, device="cpu")


@pytest.fixture()
def engine(loaded):
    # A fresh engine per test: the prefix cache must not leak between tests.
    return InfillEngine(loaded)


@pytest.fixture(scope="session")
def gemma_loaded(gemma_model_dir):
    return load_model(gemma_model_dir, device="cpu")
