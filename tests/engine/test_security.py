"""The engine never runs foreign code and never touches the network."""

from __future__ import annotations

import socket

import pytest

from difill.engine import model as model_module
from difill.engine.api import FillOptions
from difill.engine.infill import InfillEngine


@pytest.fixture()
def no_network(monkeypatch):
    attempts = []

    def refuse(self, address):
        attempts.append(address)
        raise OSError(f"network access attempted: {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


def test_loading_and_filling_make_no_network_connection(tiny_model_dir, no_network):
    engine = InfillEngine(model_module.load_model(tiny_model_dir))
    engine.fill("x = ", "\n", FillOptions(max_steps=2))
    assert no_network == []


def test_trust_remote_code_is_never_enabled(tiny_model_dir, monkeypatch):
    import transformers  # the model class is imported where it loads (engine/model.py), not at the top

    seen = []
    for name in ("AutoTokenizer", "DiffusionGemmaForBlockDiffusion"):
        cls = getattr(transformers, name)
        original = cls.from_pretrained

        def spy(*args, _original=original, **kwargs):
            seen.append(kwargs.get("trust_remote_code"))
            return _original(*args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", spy)
    model_module.load_model(tiny_model_dir)
    assert seen == [False, False]


def test_weights_are_read_as_safetensors_only(tiny_model_dir, monkeypatch):
    import torch

    def no_pickle(*args, **kwargs):
        raise AssertionError("torch.load (pickle) was called")

    monkeypatch.setattr(torch, "load", no_pickle)
    model_module.load_model(tiny_model_dir)
