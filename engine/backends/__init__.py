"""Where fills run: in this process (local) or on a server (remote).  engine/api.py holds the interface.

Importing this package loads no torch: the local engine is imported only when one is made.
"""

from __future__ import annotations

from difill.engine.api import BackendError, InfillBackend
from difill.engine.backends.remote import API_KEY_ENV, RemoteBackend

__all__ = ["API_KEY_ENV", "BackendError", "InfillBackend", "RemoteBackend", "local_backend", "make_backend"]


def local_backend(model: str | None = None, device: str = "auto") -> InfillBackend:
    """The in-process engine; raises ModelLoadError (with how to fix it) if the model cannot load.

    A Llama checkpoint is the autoregressive baseline (difill bench runs it through the server).
    """
    from difill.engine.ar_baseline import ARBackend, is_ar_checkpoint
    from difill.engine.infill import InfillEngine
    from difill.engine.model import load_model

    if model and is_ar_checkpoint(model):
        return ARBackend(model)
    return InfillEngine(load_model(model, device))


def make_backend(
    remote: str | None = None, model: str | None = None, device: str = "auto", remote_canvas: str = "auto"
) -> InfillBackend:
    """A RemoteBackend for the ``remote`` URL if one is given (``remote_canvas``: how it reaches a
    vLLM server, engine/backends/vllm.py), else the local engine."""
    if remote:
        return RemoteBackend(remote, canvas=remote_canvas)
    return local_backend(model, device)
