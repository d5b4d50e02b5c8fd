"""engine/noise.py: NumPy draws torch's CPU generator's stream, so a seed gives the noise the
sampler drew when it ran in torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from difill.engine.noise import Noise


@pytest.mark.parametrize("seed", [0, 3, 1234, 2**40 + 7])
def test_tokens_and_uniforms_are_torchs_own_draws_in_order(seed):
    generator, noise = torch.Generator().manual_seed(seed), Noise(seed)
    for vocab, shape in [(262144, (2, 40)), (5000, (3, 7)), (7, (100,)), (600, (1, 1))]:
        want = torch.randint(0, vocab, shape, generator=generator).numpy()
        have = noise.tokens(vocab, shape)
        assert have.dtype == np.int64 and np.array_equal(have, want)
        # Interleaved with uniforms, as a rewrite draws its kept slots before the loop's noise.
        assert np.array_equal(noise.uniform(13), torch.rand(13, generator=generator).numpy())


def test_a_sample_follows_the_distribution_and_never_takes_a_zero():
    noise = Noise(0)
    probs = np.array([[0.0, 0.25, 0.75, 0.0]] * 4000, dtype=np.float32)  # (N, V)
    picked = noise.sample(probs)
    assert set(picked.tolist()) == {1, 2}
    assert abs((picked == 2).mean() - 0.75) < 0.03  # 4000 draws: the standard error is 0.007
    one_hot = np.eye(5, dtype=np.float32)
    assert noise.sample(one_hot).tolist() == [0, 1, 2, 3, 4]
