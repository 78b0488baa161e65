"""Validation: exactness, the stated tolerance, the first mismatch, undefined points ignored."""

from __future__ import annotations

import numpy as np
import pytest

from stencilmap.sim.validate import RTOL, check_output, tolerance, validate


def test_identical_outputs_are_bit_exact_and_valid() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    v = validate("done", {"o": a.copy()}, {"o": a}, {"o": np.ones_like(a, bool)})
    assert v.valid and v.bit_exact and v.max_abs_error == 0 and v.first_mismatch is None
    assert v.outputs[0].points == 12


def test_undefined_points_are_not_compared() -> None:
    expected = np.array([1.0, np.nan, 3.0])
    got = np.array([1.0, 1234.5, 3.0])  # the simulator leaves garbage where the reference is undefined
    defined = np.array([True, False, True])
    c = check_output("o", got, expected, defined)
    assert c.within_tolerance and c.bit_exact and c.points == 2


def test_nan_matches_nan_on_defined_points() -> None:
    expected = np.array([np.nan, 2.0], dtype=np.float32)
    assert check_output("o", expected.copy(), expected, np.ones(2, bool)).bit_exact


def test_integers_are_exact_and_report_the_first_mismatch_in_c_order() -> None:
    expected = np.arange(12, dtype=np.int16).reshape(3, 4)
    got = expected.copy()
    got[2, 1] += 1
    got[1, 3] -= 5
    c = check_output("o", got, expected, np.ones((3, 4), bool))
    assert c.tolerance.exact and not c.within_tolerance and c.mismatches == 2
    assert c.first_mismatch is not None
    assert (c.first_mismatch.index, c.first_mismatch.got, c.first_mismatch.expected) == ((1, 3), 2, 7)
    assert c.max_abs_error == 5


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_floats_within_relative_tolerance_are_valid_but_not_bit_exact(dtype: str) -> None:
    expected = np.linspace(1, 2, 10).astype(dtype)
    got = expected * (1 + RTOL[dtype] / 4)
    c = check_output("o", got.astype(dtype), expected, np.ones(10, bool))
    assert c.within_tolerance and not c.bit_exact and 0 < c.max_rel_error <= RTOL[dtype]


def test_floats_beyond_tolerance_are_mismatches() -> None:
    expected = np.ones(4, np.float32)
    got = expected.copy()
    got[3] = 1.001
    v = validate("done", {"o": got}, {"o": expected}, {"o": np.ones(4, bool)})
    assert not v.valid
    assert v.first_mismatch is not None and v.first_mismatch[0] == "o" and v.first_mismatch[1].index == (3,)


def test_absolute_floor_scales_with_the_output() -> None:
    """A 1-ulp difference of a large term after cancellation is tolerated (see the module docstring)."""
    expected = np.array([1e4, 1e-3], np.float32)
    got = np.array([1e4, 1e-3 + 1e-3], np.float32)  # 100% relative error, 1e-7 of the output's scale
    tol = tolerance(expected.dtype, expected)
    assert tol.atol == pytest.approx(RTOL["float32"] * 1e4, rel=1e-3)
    assert check_output("o", got, expected, np.ones(2, bool)).within_tolerance


def test_a_nan_where_a_number_is_expected_is_a_mismatch() -> None:
    c = check_output("o", np.array([np.nan]), np.array([1.0]), np.ones(1, bool))
    assert not c.within_tolerance and c.max_abs_error == np.inf


def test_a_deadlocked_simulation_is_never_valid() -> None:
    a = np.zeros(3)
    assert not validate("deadlock", {"o": a}, {"o": a}, {"o": np.ones(3, bool)}).valid
    assert not validate("limit", {"o": a}, {"o": a}, {"o": np.ones(3, bool)}).valid
