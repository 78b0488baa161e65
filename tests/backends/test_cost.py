"""The cost model's exact mean: NumPy's result bit for bit, so that every choice stays the same."""

from __future__ import annotations

import random

import numpy as np
import pytest

from stencilmap.backends.cost import mean


@pytest.mark.parametrize("n", [*range(1, 70), 127, 128, 129, 300])
def test_mean_is_numpys_bit_for_bit(n: int) -> None:
    rng = random.Random(n)
    for _ in range(200):
        values = [rng.uniform(1, 2) ** rng.randint(1, 40) for _ in range(n)]
        assert mean(values) == float(np.mean(values)), values
