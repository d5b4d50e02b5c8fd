"""Load a DiffusionGemma checkpoint into mlx-vlm, or say exactly why not.

mlx and mlx-vlm are an optional extra (``pip install "difill[mlx]"``).  mlx-vlm reads difill's
checkpoint as it ships (config.json with ``global_head_dim`` and ``num_global_key_value_heads``,
safetensors weights), one saved by transformers without those keys (read off the weights here)
and an MLX-converted one (``mlx_vlm.convert``, quantised or not).

dtype: MLX's CPU backend runs the MoE layers' ``gather_mm`` in float32 only, so float16 and
bfloat16 weights are cast to float32 when the device is the CPU; on Metal they stay as stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from difill.engine import disk
from difill.engine.api import ModelLoadError

INSTALL = 'pip install "difill[mlx]"'
# Keys mlx-vlm reads with a default that does not fit DiffusionGemma's full-attention layers
# (it assumes 512-wide heads): a config without them fails on shapes.
REQUIRED_TEXT_KEYS = ("global_head_dim", "num_global_key_value_heads")
DTYPES = ("auto", "float32", "float16", "bfloat16")
VIEW_PREFIX = "difill-mlx-"  # the temporary folder of a checkpoint with its config completed


def require_mlx() -> Any:
    """``mlx.core``, or a ModelLoadError with the install command."""
    try:
        import mlx.core as mx
        import mlx_vlm  # noqa: F401
    except ImportError as err:
        raise ModelLoadError(
            f"the MLX engine needs the mlx and mlx-vlm packages ({err.name} is not installed): {INSTALL}"
        ) from None
    return mx


# config.json keys that make mlx-vlm import a Python file from the checkpoint (``model_file``:
# get_model_and_args execs it) or pick another architecture's module (a drafter's): difill runs
# no checkpoint code, ever, and serves DiffusionGemma only.
CODE_KEYS = ("model_file",)
ARCHITECTURE = "diffusion_gemma"


def refuse_checkpoint_code(config: dict, where: Path) -> None:
    """A ModelLoadError when mlx-vlm would run code the checkpoint brings, or load anything but
    its own DiffusionGemma module (checked before mlx-vlm reads the checkpoint)."""
    from mlx_vlm.utils import get_model_type  # reads the config only: imports no model module

    for scope in (config, config.get("text_config") if isinstance(config.get("text_config"), dict) else {}):
        for key in CODE_KEYS:
            if key in scope:
                raise ModelLoadError(
                    f"{where} declares {key}={scope[key]!r}: mlx-vlm would import and run that Python file "
                    "from the checkpoint, and difill never runs a checkpoint's code (remove the key; "
                    "DiffusionGemma is built into mlx-vlm)"
                )
    model_type = get_model_type(config)
    if model_type != ARCHITECTURE:
        raise ModelLoadError(
            f"{where} names the architecture {model_type!r}, not {ARCHITECTURE!r}: the MLX engine loads "
            "DiffusionGemma checkpoints only"
        )


def completed_config(path: Path) -> dict | None:
    """config.json with the keys mlx-vlm needs read off the weights where it lacks them (as the
    GGUF exporter does: transformers leaves them out of configs it saves); None: nothing missing.
    Raises ModelLoadError naming the keys when the weights cannot tell them either, and when the
    checkpoint would make mlx-vlm run its own code (``refuse_checkpoint_code``)."""
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError) as err:
        raise ModelLoadError(f"cannot read {path / 'config.json'}: {err}") from None
    if not isinstance(config, dict):
        raise ModelLoadError(f"{path / 'config.json'} is not a JSON object")
    refuse_checkpoint_code(config, path / "config.json")
    text = config.get("text_config", config)
    missing = [key for key in REQUIRED_TEXT_KEYS if key not in text]
    if not missing:
        return None
    from safetensors import safe_open

    from difill.engine.native.gguf_export import attention_shapes

    try:
        with safe_open(path / "model.safetensors", "np") as tensors:
            shapes = attention_shapes(tensors, text["layer_types"])
        text.update({key: shapes[key] for key in missing})
    except Exception:  # noqa: BLE001 - no single safetensors file, other weight names, no layer_types
        raise ModelLoadError(
            f"{path / 'config.json'} has no {' or '.join(missing)} in text_config, which mlx-vlm needs "
            "for DiffusionGemma's full-attention layers (it would assume 512), and they could not be "
            "read off model.safetensors: add them to text_config"
        ) from None
    return config


@contextmanager
def mlx_readable(path: Path) -> Iterator[Path]:
    """``path``, or a temporary directory of links to its files with the completed config.json."""
    config = completed_config(path)
    if config is None:
        yield path
        return
    # An OwnedDir, not a TemporaryDirectory: the folder of a server killed while it loaded is
    # removed by the next load (engine/disk.py).
    disk.sweep(VIEW_PREFIX)
    folder = disk.OwnedDir(VIEW_PREFIX)
    try:
        view = Path(folder.path)
        for item in path.iterdir():
            if item.name != "config.json":
                (view / item.name).symlink_to(item.resolve())
        (view / "config.json").write_text(json.dumps(config))
        yield view
    finally:
        folder.remove()


def load_mlx_model(path: Path, dtype: str = "auto") -> Any:
    """mlx-vlm's DiffusionGemma ``Model`` for a checkpoint directory, in a dtype the device runs."""
    mx = require_mlx()
    from mlx_vlm.utils import load_model

    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown MLX dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    try:
        with mlx_readable(path) as readable:
            model = load_model(readable)  # eager: every weight is read before the links go
    except ModelLoadError:
        raise
    except Exception as err:  # noqa: BLE001 - mlx-vlm raises ValueError, KeyError, FileNotFoundError...
        raise ModelLoadError(f"mlx-vlm could not load {path}: {load_failure(err)}") from None
    if not hasattr(model, "diffusion_prefill_cache"):
        raise ModelLoadError(
            f"{path} is not a DiffusionGemma checkpoint (mlx-vlm loaded {type(model).__module__})"
        )
    on_cpu = mx.default_device() == mx.cpu
    if dtype == "auto":
        dtype = "float32" if on_cpu else ""  # "": as stored
    if dtype and on_cpu and dtype != "float32":
        raise ModelLoadError(
            f"MLX on the CPU runs DiffusionGemma's experts (gather_mm) in float32 only, not {dtype}: "
            "use dtype auto or float32, or run on a Mac's GPU (Metal)"
        )
    if dtype:
        model.set_dtype(getattr(mx, dtype))  # floating parameters only: quantised ids stay packed
    mx.eval(model.parameters())
    return model


def load_failure(err: BaseException) -> str:
    """mlx-vlm's error on one line; "Missing N parameters: ..." lists every one, so at most five
    of them are named."""
    text = " ".join(str(err).split()) or type(err).__name__
    head, sep, names = text.partition("parameters: ")
    if sep and names:
        listed = names.split(", ")
        more = f" and {len(listed) - 5} more" if len(listed) > 5 else ""
        return f"{head}{sep}{', '.join(listed[:5])}{more}"
    return text[:500]
