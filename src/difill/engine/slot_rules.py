"""The tensor rules of the denoising loop (engine/sampler.py): which open slots a step accepts,
and when a row is decided.  Pure functions of tensors, with their shapes; no model here.
"""

from __future__ import annotations

import numpy as np
import torch


def entropy_of(logits: torch.Tensor) -> torch.Tensor:
    return entropy_of_logp(torch.log_softmax(logits, dim=-1))  # (B, L)


def entropy_of_logp(logp: torch.Tensor) -> torch.Tensor:
    """Entropy from log-probs (B, L, V) -> (B, L): for a caller that has the log-softmax already
    (the sampler's step), so it is not computed twice over the vocabulary."""
    p = logp.exp()
    return -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum(-1)  # (B, L)


def choose_accepted(
    entropy: torch.Tensor, open_mask: torch.Tensor, bound: float, min_accept: int | torch.Tensor
) -> torch.Tensor:
    """Entropy-bound acceptance over the open slots, with at least ``min_accept`` per row.

    Accept the k lowest-entropy open slots with sum(H_1..k) - max(H_1..k) <= bound.
    ``min_accept``: an int, or a tensor that broadcasts against (B, 1) (a 0-d one, or one per
    row), so the caller need not read it back to the host.
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


def less_than(value: torch.Tensor, threshold: float) -> torch.Tensor:
    """``value < threshold`` as Python compares floats, computed on ``value``'s device.

    A tensor compares with a Python float in its own dtype, which rounds the threshold to the
    nearest value; the smallest value of that dtype not below the threshold gives Python's answer
    for every value, with no float64 on the device (MPS has none).  The bound is found with
    NumPy on the host, which reads nothing back from the device.
    """
    exact = NUMPY_FLOATS.get(value.dtype)
    if exact is None:  # bfloat16: NumPy has no such type; the nearest value will do
        return value < threshold
    bound = exact(threshold)
    if float(bound) < threshold:  # in float64: NumPy would compare a float32 with a Python float as float32
        bound = np.nextafter(bound, exact(np.inf))
    return value < float(bound)


NUMPY_FLOATS = {torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64}


def verified_rows(
    current: torch.Tensor,
    seed: torch.Tensor,
    committed: torch.Tensor,
    hole_mask: torch.Tensor,
    confidence: torch.Tensor,
    cut_below: float,
) -> torch.Tensor:
    """(B,) True where the whole hole is committed, every token as the seed has it, none unsure.

    Strict on purpose: the row's middle is then the seed's, whole, and the ghost-text cut would
    show all of it, so no other row can add to what the model has already confirmed.
    """
    hole_open = (hole_mask & ~committed).any(-1)
    changed = (committed & hole_mask & (current != seed)).any(-1)
    unsure = (committed & hole_mask & (confidence < cut_below)).any(-1)
    return ~hole_open & ~changed & ~unsure


def shows_text(
    current: torch.Tensor,
    committed: torch.Tensor,
    hole_mask: torch.Tensor,
    confidence: torch.Tensor,
    cut_below: float,
    filler_id: int | None,
) -> torch.Tensor:
    """(B,) True where the row's first hole slot is committed, sure and not filler: a middle
    that would be shown is not empty."""
    first = hole_mask.long().argmax(-1, keepdim=True)  # (B, 1) first hole slot of each row
    token = current.gather(-1, first).squeeze(-1)  # (B,)
    sure = committed.gather(-1, first).squeeze(-1) & (confidence.gather(-1, first).squeeze(-1) >= cut_below)
    return sure & (token != filler_id) if filler_id is not None else sure


def shown_part_decided(
    committed: torch.Tensor, hole_mask: torch.Tensor, confidence: torch.Tensor, cut_below: float
) -> torch.Tensor:
    """(B,) True where every hole slot before the row's first unsure committed one is committed.

    Rows hold one hole each (a fill's candidates), so "before" is slot order within the row.
    """
    length = committed.shape[-1]
    position = torch.arange(length, device=committed.device).expand_as(committed)  # (B, L)
    unsure = committed & hole_mask & (confidence < cut_below)  # (B, L)
    first_unsure = torch.where(unsure, position, length).min(-1, keepdim=True).values  # (B, 1)
    still_open = hole_mask & ~committed & (position < first_unsure)  # (B, L)
    return ~still_open.any(-1)


def filler_constraints(
    current: torch.Tensor, committed: torch.Tensor, clamp_mask: torch.Tensor, filler_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Where a hole's layout forces or forbids the filler, from what is committed so far.

    A hole holds one middle then filler only.  Returns (after_filler, before_text), both (B, L):
    slots that follow a committed filler in the same hole (they must be filler), and slots that
    precede committed middle text in the same hole (they must not be filler).
    """
    length = current.shape[1]
    hole = ~clamp_mask
    segment = torch.cumsum(clamp_mask.long(), dim=-1)  # (B, L) slots of one hole share an id
    position = torch.arange(length, device=current.device).expand_as(current)  # (B, L)
    is_filler = committed & hole & (current == filler_id)
    is_text = committed & hole & (current != filler_id)
    # Last committed filler at or before each slot (-1: none), and its hole.
    last_filler = torch.cummax(torch.where(is_filler, position, -1), dim=-1).values  # (B, L)
    filler_segment = segment.gather(-1, last_filler.clamp_min(0))
    after_filler = hole & (last_filler >= 0) & (last_filler < position) & (filler_segment == segment)
    # Next committed text at or after each slot (length: none), and its hole.
    flipped = torch.where(is_text, position, length).flip(-1)
    next_text = (-torch.cummax(-flipped, dim=-1).values).flip(-1)  # (B, L) running minimum from the right
    text_segment = segment.gather(-1, next_text.clamp_max(length - 1))
    before_text = hole & (next_text < length) & (next_text > position) & (text_segment == segment)
    return after_filler, before_text
