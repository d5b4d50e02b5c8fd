"""What travels with a training run's weights: its counters (``TrainState``), the EMA weights and
the optimizer state, as safetensors and JSON (no pickle), so compute adds up across sessions."""

from __future__ import annotations

import json
import os
import resource
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import PreTrainedModel


@dataclass
class TrainState:
    step: int = 0
    target_tokens: int = 0  # supervised tokens (hole slots + prefix next-token targets)
    tokens: int = 0  # tokens through the model
    cpu_hours: float = 0.0  # cumulative over every session that trained these weights
    gpu_hours: float = 0.0  # wall time of GPU runs (lab/scripts/gpu_recipe.sh), counted apart
    history: list[dict] = field(default_factory=list)  # eval results appended by `difill eval --record`


def save_checkpoint(
    model: PreTrainedModel, ema: dict[str, torch.Tensor], opt, state: TrainState, tok, out: Path
):
    """EMA weights as the model (fp16 safetensors), optimizer state beside it (fp32 safetensors)."""
    out.mkdir(parents=True, exist_ok=True)
    live = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model.load_state_dict(ema, strict=False)
    model.to(torch.float16).save_pretrained(out, max_shard_size="15MB")
    model.to(torch.float32)
    model.load_state_dict(live)
    tok.save_pretrained(out)
    optimizer_tensors = {}
    names = {id(p): n for n, p in model.named_parameters()}
    for group in opt.param_groups:
        for p in group["params"]:
            for key, value in opt.state.get(p, {}).items():
                if torch.is_tensor(value) and value.dim() > 0:
                    optimizer_tensors[f"{key}::{names[id(p)]}"] = value.detach().cpu().contiguous()
    save_file(optimizer_tensors, out / "optimizer.safetensors")
    save_file({k: v.float().cpu().contiguous() for k, v in ema.items()}, out / "ema_fp32.safetensors")
    (out / "training_state.json").write_text(json.dumps(asdict(state), indent=1) + "\n")


def load_optimizer_state(model: PreTrainedModel, opt, path: Path, step: int, device: torch.device) -> None:
    tensors = {k: v.to(device) for k, v in load_file(path).items()}
    params = dict(model.named_parameters())
    for key, value in tensors.items():
        slot, name = key.split("::", 1)
        if name in params:
            opt.state[params[name]][slot] = value
    for p in params.values():
        if p in opt.state:
            opt.state[p]["step"] = torch.tensor(float(step))


def optimizer_and_ema(
    lr_and_decay: tuple[float, float],
    model: PreTrainedModel,
    state: TrainState,
    init: Path | None,
    device: torch.device,
) -> tuple[torch.optim.AdamW, dict[str, torch.Tensor]]:
    """AdamW at ``lr_and_decay`` (the peak rate, the weight decay; none on norms and biases) and
    the EMA weights, each resumed from ``init`` where it was saved there."""
    lr, weight_decay = lr_and_decay
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.98),
    )  # fmt: skip
    if init and (init / "optimizer.safetensors").exists():
        load_optimizer_state(model, opt, init / "optimizer.safetensors", state.step, device)
    ema_path = init / "ema_fp32.safetensors" if init else None
    ema = {k: v.detach().clone().float() for k, v in model.state_dict().items() if v.is_floating_point()}
    if ema_path and ema_path.exists():
        ema.update({k: v.to(device) for k, v in load_file(ema_path).items()})
    return opt, ema


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def spend(model, state: TrainState, cpu_start: float, wall_start: float) -> None:
    """Add the time since the last save to the state's budget (before ``save_latest`` writes it)."""
    if next(model.parameters()).is_cuda:  # the process's CPU time is not what a GPU run costs
        state.gpu_hours += (time.time() - wall_start) / 3600
    else:
        state.cpu_hours += (cpu_seconds() - cpu_start) / 3600


def save_latest(model, ema, opt, state: TrainState, tok, out: Path) -> None:
    """Save to ``out/latest`` atomically."""
    tmp = out.with_name(out.name + ".tmp")
    save_checkpoint(model, ema, opt, state, tok, tmp / "latest")
    final = out / "latest"
    if final.exists():
        for p in final.iterdir():
            p.unlink()
        final.rmdir()
    os.replace(tmp / "latest", final)
    tmp.rmdir()
