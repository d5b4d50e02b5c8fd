from __future__ import annotations

import pytest

from difill.engine.model import load_model


@pytest.fixture(scope="session")
def loaded(tiny_model_dir):
    """The tiny model, loaded as the trainer loads a checkpoint."""
    return load_model(tiny_model_dir, device="cpu")
