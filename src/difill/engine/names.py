"""The registries of engine names: the one list of each, read by the settings, the command line and
the backends, and tied by tests to the editors' manifests and the README
(tests/test_registries.py).  A leaf module: importing it loads nothing (the CLI parses its
arguments before any engine or remote client is imported).
"""

from __future__ import annotations

# Which in-process engine runs the model (the ``engine`` setting, ``--engine``).
ENGINES = ("auto", "torch", "llamacpp", "mlx")
# How the status names the engine that runs the model (``About.engine``; "ar" is the
# autoregressive baseline `difill bench` serves, never chosen by a setting).
ENGINE_LABELS = {"torch": "torch", "llamacpp": "llama.cpp", "mlx": "MLX", "ar": "the AR baseline"}
# How fills reach a vLLM remote (the ``remoteCanvas`` setting; engine/backends/vllm.py).
CANVAS_MODES = ("auto", "seeded", "plain")
