"""The array rules of the denoising loop (engine/sampler.py): which open slots a step accepts,
and when a row is decided.  Pure functions of NumPy arrays, with their shapes; no model here.
"""

from __future__ import annotations

import numpy as np


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """logits (..., V) -> log-probs (..., V), as torch.log_softmax computes them (max-shifted)."""
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def logsumexp(logits: np.ndarray) -> np.ndarray:
    """logits (..., V) -> (...,)."""
    top = logits.max(-1, keepdims=True)
    return (top + np.log(np.exp(logits - top).sum(-1, keepdims=True)))[..., 0]


def entropy_of(logits: np.ndarray) -> np.ndarray:
    return entropy_of_logp(log_softmax(logits))  # (B, L)


def entropy_of_logp(logp: np.ndarray) -> np.ndarray:
    """Entropy from log-probs (B, L, V) -> (B, L): for a caller that has the log-softmax already
    (the sampler's step), so it is not computed twice over the vocabulary."""
    p = np.exp(logp)
    return -(p * np.where(p > 0, logp, 0)).sum(-1)  # (B, L)


def choose_accepted(
    entropy: np.ndarray, open_mask: np.ndarray, bound: float, min_accept: int | np.ndarray
) -> np.ndarray:
    """Entropy-bound acceptance over the open slots, with at least ``min_accept`` per row.

    Accept the k lowest-entropy open slots with sum(H_1..k) - max(H_1..k) <= bound.
    ``min_accept``: an int, or an array that broadcasts against (B, 1) (one per row).
    """
    masked = np.where(open_mask, entropy, np.inf)  # (B, L)
    order = np.argsort(masked, axis=-1, kind="stable")  # ascending; closed slots last (inf)
    sorted_h = np.take_along_axis(masked, order, -1)
    finite = np.isfinite(sorted_h)
    cumulative = np.cumsum(np.where(finite, sorted_h, 0), axis=-1, dtype=sorted_h.dtype)
    within_bound = (cumulative - sorted_h <= bound) & finite  # (B, L)
    rank = np.arange(entropy.shape[-1])[None]  # (1, L)
    forced = (rank < min_accept) & finite
    accepted = np.zeros(open_mask.shape, dtype=bool)
    np.put_along_axis(accepted, order, within_bound | forced, -1)
    return accepted  # (B, L)


def less_than(value: np.ndarray | np.floating, threshold: float) -> bool:
    """``value < threshold`` as Python compares floats.

    NumPy compares a float32 with a Python float in float32 (NEP 50), which rounds the threshold
    to the nearest float32; the smallest float32 not below the threshold gives Python's answer for
    every value.
    """
    exact = np.asarray(value).dtype.type
    bound = exact(threshold)
    if float(bound) < threshold:
        bound = np.nextafter(bound, exact(np.inf))
    return bool(value < bound)


def verified_rows(
    current: np.ndarray,
    seed: np.ndarray,
    committed: np.ndarray,
    hole_mask: np.ndarray,
    confidence: np.ndarray,
    cut_below: float,
) -> np.ndarray:
    """(B,) True where the whole hole is committed, every token as the seed has it, none unsure.

    Strict on purpose: the row's middle is then the seed's, whole, and the ghost-text cut would
    show all of it, so no other row can add to what the model has already confirmed.
    """
    hole_open = (hole_mask & ~committed).any(-1)
    changed = (committed & hole_mask & (current != seed)).any(-1)
    unsure = (committed & hole_mask & (confidence < cut_below)).any(-1)
    return ~hole_open & ~changed & ~unsure


def shows_text(
    current: np.ndarray,
    committed: np.ndarray,
    hole_mask: np.ndarray,
    confidence: np.ndarray,
    cut_below: float,
    filler_id: int | None,
) -> np.ndarray:
    """(B,) True where the row's first hole slot is committed, sure and not filler: a middle
    that would be shown is not empty."""
    first = hole_mask.argmax(-1)[:, None]  # (B, 1) first hole slot of each row
    token = np.take_along_axis(current, first, -1)[:, 0]  # (B,)
    sure = np.take_along_axis(committed, first, -1)[:, 0] & (
        np.take_along_axis(confidence, first, -1)[:, 0] >= cut_below
    )
    return sure & (token != filler_id) if filler_id is not None else sure


def first_end(ends: np.ndarray) -> np.ndarray:
    """ends (B, L) bool -> (B, 1): each row's first True slot, L where there is none."""
    length = ends.shape[-1]
    return np.where(ends.any(-1), ends.argmax(-1), length)[:, None]


def shown_part_decided(
    committed: np.ndarray, hole_mask: np.ndarray, confidence: np.ndarray, cut_below: float
) -> np.ndarray:
    """(B,) True where every hole slot before the row's first unsure committed one is committed.

    Rows hold one hole each (a fill's candidates), so "before" is slot order within the row.
    """
    position = np.arange(committed.shape[-1])[None]  # (1, L)
    unsure = committed & hole_mask & (confidence < cut_below)  # (B, L)
    still_open = hole_mask & ~committed & (position < first_end(unsure))  # (B, L)
    return ~still_open.any(-1)


def filler_constraints(
    current: np.ndarray, committed: np.ndarray, clamp_mask: np.ndarray, filler_id: int
) -> tuple[np.ndarray, np.ndarray]:
    """Where a hole's layout forces or forbids the filler, from what is committed so far.

    A hole holds one middle then filler only.  Returns (after_filler, before_text), both (B, L):
    slots that follow a committed filler in the same hole (they must be filler), and slots that
    precede committed middle text in the same hole (they must not be filler).
    """
    length = current.shape[1]
    hole = ~clamp_mask
    segment = np.cumsum(clamp_mask, axis=-1)  # (B, L) slots of one hole share an id
    position = np.broadcast_to(np.arange(length), current.shape)  # (B, L)
    is_filler = committed & hole & (current == filler_id)
    is_text = committed & hole & (current != filler_id)
    # Last committed filler at or before each slot (-1: none), and its hole.
    last_filler = np.maximum.accumulate(np.where(is_filler, position, -1), axis=-1)  # (B, L)
    filler_segment = np.take_along_axis(segment, np.maximum(last_filler, 0), -1)
    after_filler = hole & (last_filler >= 0) & (last_filler < position) & (filler_segment == segment)
    # Next committed text at or after each slot (length: none), and its hole: a running minimum
    # from the right.
    next_text = np.minimum.accumulate(np.where(is_text, position, length)[:, ::-1], axis=-1)[:, ::-1]
    text_segment = np.take_along_axis(segment, np.minimum(next_text, length - 1), -1)
    before_text = hole & (next_text < length) & (next_text > position) & (text_segment == segment)
    return after_filler, before_text
