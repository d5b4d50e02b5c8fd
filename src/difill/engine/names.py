"""The registries of engine names: the one list of each, read by the settings, the command line,
the backends and the status, and tied by tests to the editors' manifests and the README
(tests/test_registries.py).  A leaf module: importing it loads nothing (the CLI parses its
arguments before any engine or remote client is imported).

An engine is one row of ``LOCAL_ENGINES``: its status label and where its loader is.  The
loader is named as ``"module:function"`` and imported only when that engine is made
(engine/backends ``local_backend``), so that naming an engine here costs no torch, no MLX and no
llama.cpp; ``function(model, device, choice)`` takes the checkpoint directory (None: the shipped
model), torch's device and the whole ``EngineChoice``, and returns an ``InfillBackend`` or raises
``ModelLoadError`` saying how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LocalEngine:
    label: str  # how the status names it (keyed by About.engine)
    loader: str  # "module:function", imported when the engine is chosen


# Which in-process engine runs the model (the ``engine`` setting, ``--engine``; "auto" picks one).
LOCAL_ENGINES = {
    "torch": LocalEngine("torch", "difill.engine.backends:load_torch_engine"),
    "llamacpp": LocalEngine("llama.cpp", "difill.engine.native.engine:load_engine"),
    "mlx": LocalEngine("MLX", "difill.engine.mlx.engine:load_engine"),
}
ENGINES = ("auto", *LOCAL_ENGINES)
# How the status names the engine that runs the model (``About.engine``; "ar" is the
# autoregressive baseline `difill bench` serves, never chosen by a setting).
ENGINE_LABELS = {name: engine.label for name, engine in LOCAL_ENGINES.items()} | {"ar": "the AR baseline"}
# How fills reach a vLLM remote (the ``remoteCanvas`` setting; engine/backends/vllm.py).
CANVAS_MODES = ("auto", "seeded", "plain")
# A remote's wire protocol (engine/backends/remote.py; the remoteKind setting).
REMOTE_KINDS = ("auto", "difill", "openai", "mercury")
