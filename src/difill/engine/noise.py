"""The denoising loop's random numbers, in NumPy: every engine draws the same noise for a seed.

The draws are those a CPU ``torch.Generator`` gave the sampler when it ran in torch: both are
the 32-bit Mersenne Twister seeded by ``init_genrand(seed)`` (NumPy's legacy ``RandomState``,
whose stream NEP 19 freezes), and torch took a token as ``draw % vocab`` and a uniform as the
draw's low 24 bits over 2**24.  So the torch engine's fills for a seed are what they were before
the sampler left torch, and the llama.cpp and MLX engines, which never import torch, draw them
too (tests/engine/test_noise.py compares both streams).
"""

from __future__ import annotations

import numpy as np

UINT32_RANGE = 2**32
FLOAT_BITS = 24  # a float32's mantissa, as torch.rand takes it


class Noise:
    def __init__(self, seed: int) -> None:
        self.state = np.random.RandomState(seed % UINT32_RANGE)

    def draws(self, count: int) -> np.ndarray:
        """(count,) raw 32-bit draws, in the generator's order."""
        return self.state.randint(0, UINT32_RANGE, size=count, dtype=np.uint32)

    def tokens(self, vocab_size: int, shape: tuple[int, ...]) -> np.ndarray:
        """Uniform token ids in [0, vocab_size), int64, of ``shape`` (row-major draws)."""
        count = int(np.prod(shape))
        return (self.draws(count).astype(np.int64) % vocab_size).reshape(shape)

    def uniform(self, count: int) -> np.ndarray:
        """(count,) float32 in [0, 1)."""
        low = self.draws(count) & np.uint32((1 << FLOAT_BITS) - 1)
        return low.astype(np.float32) * np.float32(2.0**-FLOAT_BITS)

    def sample(self, probs: np.ndarray) -> np.ndarray:
        """probs (N, V) -> one index per row (N,), drawn by the exponential race (argmax p / q,
        q ~ Exp(1)), the trick torch.multinomial uses for one sample; not torch's own draws."""
        u = self.uniform(probs.size).reshape(probs.shape)
        q = np.maximum(-np.log1p(-u), np.finfo(np.float32).tiny)  # (N, V) Exp(1), never 0
        return np.argmax(probs / q, axis=-1)
