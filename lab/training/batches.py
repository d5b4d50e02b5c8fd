"""Tokenise infill examples into training batches for both models.

Diffusion batch: the prefix goes to the encoder (with a next-token loss, so every prefix token
teaches the shared weights), the canvas is built by ``engine.canvas.build_canvas`` exactly as at
inference, hole slots are corrupted with uniform random tokens at a random rate, and the loss is
taken on corrupted hole slots only (loss on clean slots teaches the model to copy its input, the
failure research.md section 7 recorded).  Draft-seeded rows (``draft_share``) are the exception
the engine's seeded rows call for: every hole slot starts from a draft and carries the loss, so
the model learns to keep a draft's right tokens and mend its wrong ones (``drafts.py``).

AR batch: the same examples in PSM order (prefix, suffix, middle), loss on every token.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from difill.engine.canvas import Segment, build_canvas, seeded_canvas
from difill.engine.tokens import encode, encode_prefix_window, encode_suffix_window
from difill.engine.vocab import SpecialTokens, TokenIds
from lab.training.drafts import training_draft
from lab.training.examples import InfillExample, sample_example

FILLER_WEIGHT = 0.3  # filler targets are easy and many; they should not dominate the loss


@dataclass
class DiffusionBatch:
    prefix: torch.Tensor  # (B, P) left-padded with pad
    prefix_mask: torch.Tensor  # (B, P) 1 = real token
    canvas: torch.Tensor  # (B, C) target ids
    clamp_mask: torch.Tensor  # (B, C) True at clamped slots
    target_tokens: int  # hole slots in the batch (what the denoiser is asked to predict)
    # Draft-seeded rows (None: none in the batch): the canvas the engine's seeded row starts from
    # (engine.canvas.seeded_canvas: the draft, then filler, in the hole) and its seeded slots.
    seed: torch.Tensor | None = None  # (B, C) input ids at seeded slots
    seeded: torch.Tensor | None = None  # (B, C) True at the hole slots of draft-seeded rows

    def to(self, device: torch.device) -> DiffusionBatch:
        def move(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t.to(device)

        return replace(self, prefix=self.prefix.to(device), prefix_mask=self.prefix_mask.to(device),
                       canvas=self.canvas.to(device), clamp_mask=self.clamp_mask.to(device),
                       seed=move(self.seed), seeded=move(self.seeded))  # fmt: skip


@dataclass
class ARBatch:
    ids: torch.Tensor  # (B, T) right-padded
    mask: torch.Tensor  # (B, T)

    def to(self, device: torch.device) -> ARBatch:
        return ARBatch(self.ids.to(device), self.mask.to(device))


def example_segments(
    ex: InfillExample, tok: PreTrainedTokenizerBase, canvas_length: int, rng: random.Random
) -> tuple[list[Segment], list[list[int]], bool] | None:
    """Canvas segments of an example (holes sized to their middle plus random slack), the middles
    as token lists, and whether the document ends inside the canvas."""
    middles = [encode(tok, m) for m in ex.middles]
    if any(not m for m in middles):
        return None
    segments: list[Segment] = []
    for i, middle in enumerate(middles):
        slack = 0 if rng.random() < 0.3 else rng.randint(1, 16)
        segments.append(len(middle) + slack)
        if i < len(ex.betweens):
            segments.append(encode(tok, ex.betweens[i]))
    used = sum(s if isinstance(s, int) else len(s) for s in segments)
    room = canvas_length - used
    if room < 0 or (len(middles) > 1 and room < 1):
        return None
    suffix_ids, suffix_complete = encode_suffix_window(tok, ex.suffix, room)
    segments.append(suffix_ids)
    return segments, middles, suffix_complete and len(suffix_ids) < room


def diffusion_batch(
    texts: list[str],
    tok: PreTrainedTokenizerBase,
    ids: TokenIds,
    batch_size: int,
    layout: tuple[int, int],
    rng: random.Random,
    draft_share: float = 0.0,
) -> DiffusionBatch:
    """``batch_size`` canvas examples of ``layout`` (prefix tokens, canvas slots); a ``draft_share``
    of the one-hole ones are draft-seeded: their hole starts from a draft (``drafts.training_draft``)
    exactly as the engine's seeded rows do, and their targets are the true middle as everywhere."""
    prefix_length, canvas_length = layout
    prefixes, canvases, clamps, seeds, seeded_masks = [], [], [], [], []
    target_tokens = 0
    while len(canvases) < batch_size:
        ex = sample_example(rng.choice(texts), rng)
        if ex is None:
            continue
        laid = example_segments(ex, tok, canvas_length, rng)
        if laid is None:
            continue
        segments, middles, doc_ends = laid
        canvas = build_canvas(segments, canvas_length, ids, doc_ends)
        prefix_ids = encode_prefix_window(tok, ids, ex.prefix, prefix_length)
        seed, seeded = canvas.ids.copy(), np.zeros_like(canvas.clamp_mask)  # (C,), (C,): no draft
        if draft_share > 0 and len(middles) == 1 and rng.random() < draft_share:
            donor = prefix_ids + segments[-1]  # the prefix window and the suffix: elsewhere in the file
            draft = training_draft(ex, middles[0], donor, tok, ids, rng)
            seeded_row, seeded = seeded_canvas(canvas, draft)  # before the middle is written in
            seed = seeded_row.ids
        for (start, _end), middle in zip(canvas.holes, middles, strict=True):
            canvas.ids[start : start + len(middle)] = middle
        seeds.append(seed)
        seeded_masks.append(seeded)
        prefixes.append(prefix_ids)
        canvases.append(canvas.ids)
        clamps.append(canvas.clamp_mask)
        target_tokens += int((~canvas.clamp_mask).sum())
    width = max(1, max(len(p) for p in prefixes))
    prefix = torch.full((batch_size, width), ids.pad, dtype=torch.long)
    prefix_mask = torch.zeros(batch_size, width, dtype=torch.long)
    for row, p in enumerate(prefixes):
        if p:
            prefix[row, width - len(p) :] = torch.tensor(p)
            prefix_mask[row, width - len(p) :] = 1
    # An empty prefix (cursor at the start of a file) still needs one cached token: a masked pad.
    # The engine's canvases are NumPy (engine/canvas.py); training takes them as tensors here.
    seeded = torch.from_numpy(np.stack(seeded_masks))  # (B, C)
    return DiffusionBatch(
        prefix, prefix_mask, torch.from_numpy(np.stack(canvases)), torch.from_numpy(np.stack(clamps)),
        target_tokens, seed=torch.from_numpy(np.stack(seeds)) if seeded.any() else None,
        seeded=seeded if seeded.any() else None,
    )  # fmt: skip


def corrupt(
    canvas: torch.Tensor, clamp_mask: torch.Tensor, vocab_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Replace each hole slot by a uniform random token with a per-row rate r ~ U(0, 1)."""
    batch, length = canvas.shape
    device = canvas.device
    rate = torch.rand(batch, 1, generator=generator, device=device)  # (B, 1)
    corrupted = (torch.rand(batch, length, generator=generator, device=device) < rate) & ~clamp_mask  # (B, C)
    # At least one corrupted slot per row, so every row carries a loss.
    first_hole = (~clamp_mask).float().argmax(-1)  # (B,)
    rows = torch.arange(batch, device=device)
    corrupted[rows, first_hole] |= ~clamp_mask[rows, first_hole]
    noise = torch.randint(0, vocab_size, canvas.shape, generator=generator, device=device)
    return torch.where(corrupted, noise, canvas), corrupted


def ar_batch(
    texts: list[str],
    tok: PreTrainedTokenizerBase,
    ids: TokenIds,
    batch_size: int,
    prefix_length: int,
    canvas_length: int,
    rng: random.Random,
) -> ARBatch:
    """PSM fill-in-the-middle: <fim_prefix> prefix <fim_suffix> suffix <fim_middle> middle <eos>."""
    names = SpecialTokens()
    vocab = tok.get_vocab()
    fim_p, fim_s, fim_m = vocab[names.fim_prefix], vocab[names.fim_suffix], vocab[names.fim_middle]
    rows: list[list[int]] = []
    while len(rows) < batch_size:
        ex = sample_example(rng.choice(texts), rng)
        if ex is None or len(ex.middles) != 1:
            continue
        middle = encode(tok, ex.middles[0])
        if not middle or len(middle) > canvas_length:
            continue
        suffix_ids, complete = encode_suffix_window(tok, ex.suffix, canvas_length - len(middle))
        if complete:
            suffix_ids = suffix_ids + [ids.eos]
        prefix_ids = encode_prefix_window(tok, ids, ex.prefix, prefix_length)
        rows.append([fim_p, *prefix_ids, fim_s, *suffix_ids, fim_m, *middle, ids.eos])
    width = max(len(r) for r in rows)
    out = torch.full((batch_size, width), ids.pad, dtype=torch.long)
    mask = torch.zeros(batch_size, width, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
    return ARBatch(out, mask)
