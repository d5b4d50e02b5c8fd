"""Where fills run: in this process (local) or on a server (remote).  engine/api.py holds the interface.

``BackendSpec`` says where, once (server/config.py builds it from the settings, `difill fill` from
its command line); ``make_backend`` makes that backend: ``local_backend`` for an engine in this
process, ``connect`` (engine/backends/connect.py) for a server, one class per wire protocol.

Importing this package loads no torch: the local engine is imported only when one is made.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, replace
from importlib import import_module
from pathlib import Path

from difill.engine.api import BackendError, InfillBackend, ModelLoadError
from difill.engine.backends.connect import connect
from difill.engine.backends.remote import API_KEY_ENV, RemoteBackend, RemoteConfig
from difill.engine.names import CANVAS_MODES, ENGINES, LOCAL_ENGINES, REMOTE_KINDS
from difill.engine.native.build import patched_worker_built

__all__ = [
    "API_KEY_ENV", "BackendError", "BackendSpec", "EngineChoice", "InfillBackend", "RemoteBackend",
    "RemoteConfig", "connect", "is_ar_checkpoint", "load_torch_engine", "local_backend", "make_backend",
]  # fmt: skip
ENGINE_ENV = "DIFILL_ENGINE"  # replaces "auto" where it is set
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineChoice:
    """Which in-process engine runs the model (``--engine``, setting ``engine``).

    ``auto``: llama.cpp where a GGUF is named, or for the shipped model once `difill build-native`
    has built a current worker with difill's patches; else torch (and torch if llama.cpp fails).
    ``llamacpp`` also runs the shipped model (its GGUF is exported on first use), and fails with
    what to build or export.  ``mlx`` runs the checkpoint in mlx-vlm (``difill[mlx]``, docs/mlx.md):
    difill's own directory or an MLX-converted one; never chosen by ``auto``.
    """

    name: str = "auto"
    gguf: str | None = None  # the checkpoint's GGUF (llama.cpp); None: the shipped model's own
    worker: str | None = None  # difill-llama-worker; None: the one `difill build-native` built
    threads: int | None = None  # llama.cpp threads; None: half the cores, as torch takes
    gpu_layers: int = 0  # layers llama.cpp offloads to a GPU


@dataclass(frozen=True)
class BackendSpec:
    """Where fills run: on the server at ``remote``, else ``model`` in this process.

    Built once from the settings (server/config.py ``backend_spec``) or the command line and
    handed whole to ``make_backend``: equal specs make the same backend, so a settings change
    that leaves the spec as it was needs no reload.  Checked when made (ValueError).
    """

    model: str | None = None  # a checkpoint directory; None: the shipped model
    device: str = "auto"  # torch's device (the llama.cpp and MLX engines pick their own)
    remote: str | None = None  # a server's URL; None: run the model in this process
    remote_canvas: str = "auto"  # how fills reach a vLLM remote (engine/backends/vllm.py CANVAS_MODES)
    engine: EngineChoice = EngineChoice()  # which in-process engine (unused with a remote)
    remote_kind: str = "auto"  # the remote's wire protocol (engine/backends/remote.py PROTOCOLS)

    def __post_init__(self) -> None:
        if self.remote_canvas not in CANVAS_MODES:
            raise ValueError(
                f"unknown remote canvas {self.remote_canvas!r}; use one of {', '.join(CANVAS_MODES)}"
            )
        if self.engine.name not in ENGINES:
            raise ValueError(f"unknown engine {self.engine.name!r}; use one of {', '.join(ENGINES)}")
        if self.remote_kind not in REMOTE_KINDS:
            raise ValueError(f"unknown remote kind {self.remote_kind!r}; use one of {', '.join(REMOTE_KINDS)}")


def local_backend(
    model: str | None = None, device: str = "auto", engine: EngineChoice | None = None
) -> InfillBackend:
    """The in-process engine; raises ModelLoadError (with how to fix it) if the model cannot load.

    A Llama checkpoint is the autoregressive baseline (difill bench runs it through the server).
    Every other engine is made by its loader in engine/names.py ``LOCAL_ENGINES``: the one place
    that names engines (a new engine touches no branch here).
    """
    engine = engine or EngineChoice()
    if engine.name == "auto" and os.environ.get(ENGINE_ENV):  # the test suite pins its reference engine
        engine = replace(engine, name=os.environ[ENGINE_ENV])
    if engine.name not in ENGINES:
        raise ValueError(f"unknown engine {engine.name!r}; use one of {', '.join(ENGINES)}")
    if model and is_ar_checkpoint(model):
        try:
            from difill.engine.ar_baseline import ARBackend  # transformers' modeling code: seconds
        except ModuleNotFoundError as err:
            raise missing_extra("the AR baseline", "torch", err) from err
        return ARBackend(model)
    if engine.name != "auto":
        return _load(engine.name, model, device, engine)
    # auto: llama.cpp where a GGUF is named (only it reads one), and for the shipped model where the
    # patched worker is built: the faster engine on this 2-core CPU with the same suggestions
    # (docs/llamacpp.md: typing p95 0.88x, a fill 0.78-0.84x torch's).  The stock PR's worker is
    # slower than torch, and building takes minutes, so neither is chosen for the user.
    if engine.gguf is not None or (model is None and engine.worker is None and patched_worker_built()):
        try:
            return _load("llamacpp", model, device, engine)
        except BackendError as err:
            log.warning("the llama.cpp engine did not start (%s); using torch", err)
    return _load("torch", model, device, engine)


def is_ar_checkpoint(path: str | os.PathLike) -> bool:
    """Whether ``path`` holds the autoregressive baseline (a Llama): read from its config alone,
    so that choosing an engine imports no model code."""
    config = Path(path) / "config.json"
    return config.is_file() and json.loads(config.read_text()).get("model_type") == "llama"


def _load(name: str, model: str | None, device: str, engine: EngineChoice) -> InfillBackend:
    """The engine ``name`` made by its loader (engine/names.py), imported only now."""
    module, function = LOCAL_ENGINES[name].loader.split(":")
    try:
        return getattr(import_module(module), function)(model, device, engine)
    except ModuleNotFoundError as err:  # a loader imports its engine's modules when it runs
        extra = "mlx" if name == "mlx" else "torch"
        raise missing_extra(f"the {LOCAL_ENGINES[name].label} engine", extra, err) from err


def missing_extra(what: str, extra: str, err: ModuleNotFoundError) -> Exception:
    """What to install when an engine's modules are missing from a base install (docs/install.md).

    Only the torch engine and the AR baseline need torch: the denoising loop is NumPy's, so a base
    install serves the llama.cpp engine (once its worker is built) and remotes."""
    if err.name != "torch":  # the MLX engine names its own packages (engine/mlx/runtime.py)
        return err
    return ModelLoadError(
        f"{what} needs {err.name}, which is not installed: "
        f'pip install "difill[{extra}]", or build the llama.cpp engine (difill build-native), or serve a '
        "remote (setting `remote`; docs/install.md)"
    )


def load_torch_engine(model: str | None, device: str, engine: EngineChoice) -> InfillBackend:
    """The reference engine (``LOCAL_ENGINES["torch"]``): the checkpoint's weights in torch."""
    from difill.engine.infill import InfillEngine
    from difill.engine.model import load_model

    return InfillEngine(load_model(model, device))


def make_backend(spec: BackendSpec) -> InfillBackend:
    """The backend ``spec`` names: a remote one for its URL (the protocol's class, chosen once in
    ``connect``), else the local engine; raises ModelLoadError or BackendError saying how to fix it."""
    if spec.remote:
        return connect(RemoteConfig(spec.remote, protocol=spec.remote_kind, canvas=spec.remote_canvas))
    return local_backend(spec.model, spec.device, spec.engine)
