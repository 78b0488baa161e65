"""``run``'s inputs: arrays read from ``--input`` files that already have the program's dtype, shape and C
order are used as they are (no copy); the others are converted or refused as ``make_inputs`` does."""

from __future__ import annotations

import numpy as np
import pytest

from stencilmap.errors import StencilmapError
from stencilmap.jobs.run import host_values
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.soda import parse_soda

TWO = """kernel: two
input float: a(8, *)
input float: b(8, *)
output float: c(0, 0) = a(0, 0) + b(0, 1)
"""


def program() -> object:
    return bind_shape(parse_soda(TWO, "two.soda"), {}, (5, 8))


def test_ready_arrays_are_not_copied() -> None:
    p = program()
    a = np.random.default_rng(0).random((5, 8), dtype=np.float32)
    got = host_values(p, {"a": a}, 0)  # type: ignore[arg-type]
    assert got["a"] is a
    np.testing.assert_array_equal(got["b"], make_inputs(p, {}, 0)["b"])  # type: ignore[arg-type]
    assert list(got) == ["a", "b"]


def test_others_go_through_make_inputs() -> None:
    p = program()
    a16 = np.arange(40, dtype=np.int16).reshape(5, 8)
    got = host_values(p, {"a": a16, "b": np.asfortranarray(np.ones((5, 8), np.float32))}, 0)  # type: ignore[arg-type]
    assert got["a"].dtype == np.float32 and got["b"].flags.c_contiguous
    with pytest.raises(StencilmapError, match="expected"):
        host_values(p, {"a": np.ones((5, 8), np.float64)}, 0)  # type: ignore[arg-type]
