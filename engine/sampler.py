"""The denoising loop: refine a batch of canvases in a few parallel passes.

Why not ``model.generate()``: it cannot clamp a suffix, it stops on the mean entropy of the whole
canvas (clamped slots included, so it stops too early for infill), it pads everything after an eos,
clamped suffix included, and it has no cancel hook.  This loop keeps what makes DiffusionGemma's
sampler work - a linear temperature schedule, entropy-bound acceptance (arXiv 2505.24857),
renoising with uniform random tokens and self-conditioning on the previous step's logits - and adds:

* clamping: known slots get one-hot logits (entropy 0), so they are always accepted and never
  renoised;
* a monotone commit: once a hole slot is accepted it stays, and at least ``ceil(open / steps_left)``
  slots are accepted per step, so a fill always ends within ``max_steps`` forwards;
* a stop criterion on hole slots only: the loop ends as soon as every hole slot is committed;
* a cancel check between steps and a draft callback after each step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

# decoder(canvas (B, L), self_conditioning_logits (B, L, V) | None) -> logits (B, L, V)
DecoderFn = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]


class Cancelled(Exception):
    """The caller asked the fill to stop; raised between two denoising steps."""


@dataclass
class SamplerConfig:
    max_steps: int = 12  # hard cap on decoder forwards per canvas
    entropy_bound: float = 0.5  # accept lowest-entropy slots while sum(H) - max(H) <= bound
    t_max: float = 0.8  # temperature at the first step
    t_min: float = 0.1  # temperature at the last step
    greedy: bool = True  # commit argmax tokens (True) or samples (False); entropy still decides when


@dataclass
class DenoiseResult:
    canvas: torch.Tensor  # (B, L) final ids
    token_logprob: torch.Tensor  # (B, L) log-prob of each committed token when it was committed
    steps: int  # decoder forwards; each one runs the whole batch


def temperature_at(step: int, config: SamplerConfig) -> float:
    """Linear schedule from t_max at step 0 to t_min at the last allowed step."""
    if config.max_steps <= 1:
        return config.t_min
    frac = step / (config.max_steps - 1)
    return config.t_max + (config.t_min - config.t_max) * frac


def clamp_logits(logits: torch.Tensor, canvas: torch.Tensor, clamp_mask: torch.Tensor) -> torch.Tensor:
    """One-hot logits at clamped slots: entropy 0, so they are always accepted as they are."""
    one_hot = torch.full_like(logits, -torch.inf)  # (B, L, V)
    one_hot.scatter_(-1, canvas.unsqueeze(-1), 0.0)
    return torch.where(clamp_mask.unsqueeze(-1), one_hot, logits)


def entropy_of(logits: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits, dim=-1)  # (B, L, V)
    p = logp.exp()
    return -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum(-1)  # (B, L)


def choose_accepted(
    entropy: torch.Tensor, open_mask: torch.Tensor, bound: float, min_accept: int
) -> torch.Tensor:
    """Entropy-bound acceptance over the open slots, with at least ``min_accept`` per row.

    Accept the k lowest-entropy open slots with sum(H_1..k) - max(H_1..k) <= bound.
    """
    masked = torch.where(open_mask, entropy, torch.full_like(entropy, torch.inf))  # (B, L)
    sorted_h, order = torch.sort(masked, dim=-1)  # ascending; closed slots last (inf)
    finite = torch.isfinite(sorted_h)
    cumulative = torch.cumsum(torch.where(finite, sorted_h, torch.zeros_like(sorted_h)), dim=-1)
    within_bound = (cumulative - sorted_h <= bound) & finite  # (B, L)
    rank = torch.arange(entropy.shape[-1], device=entropy.device).unsqueeze(0)  # (1, L)
    forced = (rank < min_accept) & finite
    accept_sorted = within_bound | forced
    return torch.zeros_like(open_mask).scatter(-1, order, accept_sorted)  # (B, L)


def denoise(
    decoder: DecoderFn,
    canvas: torch.Tensor,
    clamp_mask: torch.Tensor,
    banned_ids: torch.Tensor,
    vocab_size: int,
    config: SamplerConfig,
    generator: torch.Generator,
    slot_allowed: tuple[int, torch.Tensor] | None = None,
    initially_committed: torch.Tensor | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_step: Callable[[int, torch.Tensor], None] | None = None,
) -> DenoiseResult:
    """Denoise the open slots of ``canvas`` (B, L) until each one is committed.

    ``slot_allowed`` = (slot, allowed (V,) bool), optional: the only tokens allowed at that slot
    (token healing constrains the first hole slot to tokens that extend the partial word).  ``initially_committed`` (B, L): hole slots whose current token is kept from the start
    (an edit that starts from the original text).  ``on_step(step, best)`` gets the current best
    canvas: committed tokens where committed, the argmax elsewhere.
    """
    device = canvas.device
    batch, length = canvas.shape
    committed = clamp_mask.clone()  # (B, L)
    if initially_committed is not None:
        committed |= initially_committed
    noise = torch.randint(0, vocab_size, canvas.shape, generator=generator, device=device)
    current = torch.where(committed, canvas, noise)  # (B, L)
    token_logprob = torch.zeros(batch, length, device=device)
    self_conditioning: torch.Tensor | None = None
    steps = 0
    for step in range(config.max_steps):
        open_mask = ~committed
        if not open_mask.any():
            break
        if should_stop is not None and should_stop():
            raise Cancelled()
        raw = decoder(current, self_conditioning)[..., :vocab_size].float()  # (B, L, V)
        steps += 1
        raw[..., banned_ids] = -torch.inf
        if slot_allowed is not None:
            slot, allowed = slot_allowed
            raw[:, slot, ~allowed] = -torch.inf
        raw = clamp_logits(raw, current, committed)
        # The next step sees this step's un-tempered logits, as in training.
        self_conditioning = raw.masked_fill(torch.isinf(raw), -1e4)
        logits = raw / temperature_at(step, config)

        logp = torch.log_softmax(logits, dim=-1)  # (B, L, V)
        if config.greedy:
            proposal = logits.argmax(-1)  # (B, L)
        else:
            flat = logp.exp().view(-1, logits.shape[-1])
            proposal = torch.multinomial(flat, 1, generator=generator).view(batch, length)
        entropy = entropy_of(logits)  # (B, L)

        steps_left = config.max_steps - step
        open_count = open_mask.sum(-1)  # (B,)
        min_accept = int(math.ceil(open_count.max().item() / steps_left))
        accept = choose_accepted(entropy, open_mask, config.entropy_bound, min_accept) & open_mask
        current = torch.where(accept, proposal, current)
        token_logprob = torch.where(
            accept, logp.gather(-1, proposal.unsqueeze(-1)).squeeze(-1), token_logprob
        )
        committed |= accept
        if on_step is not None:
            on_step(step, torch.where(committed, current, proposal))
        renoise = torch.randint(0, vocab_size, canvas.shape, generator=generator, device=device)
        current = torch.where(committed, current, renoise)
    return DenoiseResult(current, token_logprob, steps)
