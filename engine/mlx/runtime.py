"""Load a DiffusionGemma checkpoint into mlx-vlm, or say exactly why not.

mlx and mlx-vlm are an optional extra (``pip install "difill[mlx]"``).  mlx-vlm reads difill's
checkpoint as it ships (config.json with ``global_head_dim`` and ``num_global_key_value_heads``,
safetensors weights) and an MLX-converted one (``mlx_vlm.convert``, quantised or not).

dtype: MLX's CPU backend runs the MoE layers' ``gather_mm`` in float32 only, so float16 and
bfloat16 weights are cast to float32 when the device is the CPU; on Metal they stay as stored.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from difill.engine.api import ModelLoadError

INSTALL = 'pip install "difill[mlx]"'
# Keys mlx-vlm reads with a default that does not fit DiffusionGemma's full-attention layers
# (it assumes 512-wide heads): a config without them fails on shapes, so name them first.
REQUIRED_TEXT_KEYS = ("global_head_dim", "num_global_key_value_heads")
DTYPES = ("auto", "float32", "float16", "bfloat16")


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


def check_mlx_config(path: Path) -> None:
    """Raise ModelLoadError naming the config keys mlx-vlm needs and ``path`` lacks."""
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError) as err:
        raise ModelLoadError(f"cannot read {path / 'config.json'}: {err}") from None
    text = config.get("text_config", config)
    missing = [key for key in REQUIRED_TEXT_KEYS if key not in text]
    if missing:
        raise ModelLoadError(
            f"{path / 'config.json'} has no {' or '.join(missing)} in text_config, which mlx-vlm needs "
            "for DiffusionGemma's full-attention layers (it would assume 512): add them as the "
            "checkpoint's weights have them (its full-attention k_proj rows / heads)"
        )


def load_mlx_model(path: Path, dtype: str = "auto") -> Any:
    """mlx-vlm's DiffusionGemma ``Model`` for a checkpoint directory, in a dtype the device runs."""
    mx = require_mlx()
    from mlx_vlm.utils import load_model

    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown MLX dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    check_mlx_config(path)
    try:
        model = load_model(path)
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
    """The first line of mlx-vlm's error, with the parameter it names kept in view."""
    text = str(err).strip() or type(err).__name__
    first = text.splitlines()[0]
    if len(first) > 400:  # "Missing N parameters: a, b, ..." lists every one: name the first few
        names = re.findall(r"[\w.]+\.(?:weight|bias|scales|biases)", first)
        first = first[:200] + (f"... ({', '.join(names[:3])} ...)" if names else "...")
    return first
