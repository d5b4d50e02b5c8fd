"""Where fills run: in this process (local) or on a server (remote).  engine/api.py holds the interface.

Importing this package loads no torch: the local engine is imported only when one is made.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace

from difill.engine.api import BackendError, InfillBackend
from difill.engine.backends.remote import API_KEY_ENV, RemoteBackend

__all__ = [
    "API_KEY_ENV", "BackendError", "EngineChoice", "InfillBackend", "RemoteBackend", "local_backend",
    "make_backend",
]  # fmt: skip
ENGINES = ("auto", "torch", "llamacpp", "mlx")
ENGINE_ENV = "DIFILL_ENGINE"  # replaces "auto" where it is set
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineChoice:
    """Which in-process engine runs the model (``--engine``, setting ``engine``).

    ``auto``: llama.cpp where a GGUF is named (and its worker is built), else torch.
    ``llamacpp`` also runs the shipped model (its GGUF is exported on first use), and fails with
    what to build or export.  ``mlx`` runs the checkpoint in mlx-vlm (``difill[mlx]``, docs/mlx.md):
    difill's own directory or an MLX-converted one; never chosen by ``auto``.
    """

    name: str = "auto"
    gguf: str | None = None  # the checkpoint's GGUF (llama.cpp); None: the shipped model's own
    worker: str | None = None  # difill-llama-worker; None: the one `difill build-native` built
    threads: int | None = None  # llama.cpp threads; None: half the cores, as torch takes
    gpu_layers: int = 0  # layers llama.cpp offloads to a GPU


def local_backend(
    model: str | None = None, device: str = "auto", engine: EngineChoice | None = None
) -> InfillBackend:
    """The in-process engine; raises ModelLoadError (with how to fix it) if the model cannot load.

    A Llama checkpoint is the autoregressive baseline (difill bench runs it through the server).
    """
    from difill.engine.ar_baseline import ARBackend, is_ar_checkpoint

    engine = engine or EngineChoice()
    if engine.name == "auto" and os.environ.get(ENGINE_ENV):  # the test suite pins its reference engine
        engine = replace(engine, name=os.environ[ENGINE_ENV])
    if engine.name not in ENGINES:
        raise ValueError(f"unknown engine {engine.name!r}; use one of {', '.join(ENGINES)}")
    if model and is_ar_checkpoint(model):
        return ARBackend(model)
    # auto: llama.cpp where a GGUF is named (only it reads one).  The shipped model stays on torch:
    # side by side on a 2-core CPU at the same thread count llama.cpp is no faster (docs/llamacpp.md).
    if engine.name == "llamacpp" or (engine.name == "auto" and engine.gguf is not None):
        try:
            return _llamacpp_backend(model, engine)
        except BackendError as err:
            if engine.name == "llamacpp":
                raise
            log.warning("the llama.cpp engine did not start (%s); using torch", err)
    if engine.name == "mlx":  # MLX picks its own device: Metal on a Mac, else the CPU
        from difill.engine.mlx.engine import load_mlx_engine

        return load_mlx_engine(model)
    from difill.engine.infill import InfillEngine
    from difill.engine.model import load_model

    return InfillEngine(load_model(model, device))


def _llamacpp_backend(model: str | None, engine: EngineChoice) -> InfillBackend:
    """llama.cpp picks its own device: the CPU, or a GPU for ``gpu_layers`` (``device`` is torch's)."""
    from difill.engine.native.engine import load_llamacpp_engine

    return load_llamacpp_engine(
        model, engine.gguf, engine.worker, threads=engine.threads, gpu_layers=engine.gpu_layers
    )


def make_backend(
    remote: str | None = None,
    model: str | None = None,
    device: str = "auto",
    remote_canvas: str = "auto",
    engine: EngineChoice | None = None,
) -> InfillBackend:
    """A RemoteBackend for the ``remote`` URL if one is given (``remote_canvas``: how it reaches a
    vLLM server, engine/backends/vllm.py), else the local engine ``engine`` names."""
    if remote:
        return RemoteBackend(remote, canvas=remote_canvas)
    return local_backend(model, device, engine)
