"""Turn holes and the code around them into a seeded, clamped DiffusionGemma canvas.

A canvas is a row of ``length`` token slots.  Hole slots start as noise and are denoised; every
other slot is *clamped*: it holds known text (the nearest suffix, the code between two holes) and
is accepted at every step, never renoised.  A middle shorter than its hole is right-padded by the
model with the filler token.  When the document ends inside the canvas, an eos token follows the
suffix and pad tokens fill the rest, exactly as in training.

Training and inference build canvases with the same function, so the model sees at inference
the layout it was trained on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from difill.engine.vocab import TokenIds

# One canvas segment: an int is a hole of that many slots, a list of ints is clamped text.
Segment = int | list[int]


@dataclass
class Canvas:
    ids: np.ndarray  # (L,) int64: clamped ids at clamped slots, filler (or pad) at hole slots (noise)
    clamp_mask: np.ndarray  # (L,) True where the slot holds known text
    holes: list[tuple[int, int]]  # [start, end) of each hole, in order

    @property
    def length(self) -> int:
        return self.ids.shape[0]


def build_canvas(segments: list[Segment], length: int, ids: TokenIds, document_ends: bool) -> Canvas:
    """Lay ``segments`` out left to right in ``length`` slots.

    Clamped text that does not fit is cut (it is the far end of the suffix, the least useful part).
    If ``document_ends`` and everything fits, an eos slot marks the end of the file; pad fills the rest.
    """
    slots: list[int] = []
    clamp: list[bool] = []
    holes: list[tuple[int, int]] = []
    for segment in segments:
        if isinstance(segment, int):
            start = len(slots)
            size = min(segment, length - start)
            if size <= 0:
                raise ValueError(f"canvas of {length} slots has no room for hole {len(holes) + 1}")
            slots.extend([ids.filler[0] if ids.filler else ids.pad] * size)
            clamp.extend([False] * size)
            holes.append((start, start + size))
        else:
            room = length - len(slots)
            slots.extend(segment[:room])
            clamp.extend([True] * min(len(segment), room))
    if document_ends and len(slots) < length:
        slots.append(ids.eos)
        clamp.append(True)
    slots.extend([ids.pad] * (length - len(slots)))
    clamp.extend([True] * (length - len(clamp)))
    return Canvas(np.array(slots, dtype=np.int64), np.array(clamp, dtype=bool), holes)


def seeded_canvas(canvas: Canvas, draft: list[int]) -> tuple[Canvas, np.ndarray]:
    """A copy of a one-hole ``canvas`` whose hole starts from ``draft`` instead of noise.

    The draft's tokens fill the hole from its start; a draft shorter than the hole is a whole
    middle, so filler follows it (pad when the vocabulary has no filler).  Returns the canvas and
    its seeded mask (L,): the hole slots, every one of which starts from the seed.
    """
    start, end = canvas.holes[0]
    seed = draft[: end - start]
    ids = canvas.ids.copy()  # hole slots hold filler (pad without one): what follows a short draft
    ids[start : start + len(seed)] = seed
    seeded = np.zeros_like(canvas.clamp_mask)
    seeded[start:end] = True
    return Canvas(ids, canvas.clamp_mask.copy(), list(canvas.holes)), seeded


def used_length(segments: list[Segment], document_ends: bool) -> int:
    """Slots the segments need, with the eos slot; a canvas longer than this is only padding."""
    total = sum(s if isinstance(s, int) else len(s) for s in segments)
    return total + (1 if document_ends else 0)


def hole_tokens(canvas_ids: np.ndarray, hole: tuple[int, int], filler: tuple[int, ...]) -> list[int]:
    """The middle written in one hole: its tokens up to the first filler."""
    out: list[int] = []
    for token in canvas_ids[hole[0] : hole[1]].tolist():
        if token in filler:
            break
        out.append(token)
    return out
