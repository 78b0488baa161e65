"""Operation semantics: C integer division, remainder, wrap-around, conversions; NumPy's Python-style ones."""

from __future__ import annotations

import numpy as np

from stencilmap.backends import ops


def arr(values: list[int], dtype: str) -> np.ndarray:
    return np.array(values, dtype=dtype)


def test_c_division_truncates_toward_zero_and_remainder_follows_dividend() -> None:
    a, b = arr([7, -7, 7, -7], "int32"), arr([2, 2, -2, -2], "int32")
    assert ops.binary("/", a, b, "int32", "int32", "int32", "c").tolist() == [3, -3, -3, 3]
    assert ops.binary("%", a, b, "int32", "int32", "int32", "c").tolist() == [1, -1, 1, -1]


def test_numpy_division_floors_and_mod_follows_divisor() -> None:
    a, b = arr([7, -7], "int64"), arr([2, 2], "int64")
    assert ops.binary("//", a, b, "int64", "int64", "int64", "numpy").tolist() == [3, -4]
    assert ops.binary("%", a, b, "int64", "int64", "int64", "numpy").tolist() == [1, 1]
    assert ops.binary("/", a, b, "int64", "int64", "float64", "numpy").tolist() == [3.5, -3.5]


def test_c_integer_division_by_zero_is_zero() -> None:
    a, b = arr([5, 5], "int32"), arr([0, 1], "int32")
    assert ops.binary("/", a, b, "int32", "int32", "int32", "c").tolist() == [0, 5]
    assert ops.binary("%", a, b, "int32", "int32", "int32", "c").tolist() == [0, 0]


def test_overflow_wraps_and_assignment_truncates() -> None:
    big = arr([2**31 - 1], "int32")
    assert ops.binary("+", big, arr([1], "int32"), "int32", "int32", "int32", "c").tolist() == [-(2**31)]
    # int16 sum computed in int (no overflow), then converted to int16 on assignment
    s = ops.binary("+", arr([30000], "int16"), arr([30000], "int16"), "int16", "int16", "int32", "c")
    assert s.tolist() == [60000]
    assert ops.as_type(s, "int16").tolist() == [60000 - 65536]
    assert ops.as_type(np.array([-2.7, 2.7]), "int32").tolist() == [-2, 2]
    assert ops.as_type(np.array([70000]), "uint16").tolist() == [70000 - 65536]


def test_comparisons_and_logic_yield_int_in_c() -> None:
    a, b = arr([1, 2], "int32"), arr([2, 2], "int32")
    out = ops.binary("<", a, b, "int32", "int32", "int32", "c")
    assert out.dtype == np.int32 and out.tolist() == [1, 0]
    assert ops.binary("&&", a, out, "int32", "int32", "int32", "c").tolist() == [1, 0]
    assert ops.unary("!", out, "int32").tolist() == [0, 1]


def test_round_half_away_from_zero_in_c_but_even_in_numpy() -> None:
    x = np.array([0.5, 1.5, -0.5, 2.5])
    assert ops.call("round", [x], "float64", "c").tolist() == [1.0, 2.0, -1.0, 3.0]
    assert ops.call("round", [x], "float64", "numpy").tolist() == [0.0, 2.0, -0.0, 2.0]


def test_float32_stays_float32() -> None:
    f = np.array([0.1], dtype=np.float32)
    out = ops.binary("*", f, np.asarray(0.2), "float32", "pyfloat", "float32", "numpy")
    assert out.dtype == np.float32 and out[0] == np.float32(0.1) * np.float32(0.2)


def test_nary_min_and_functions() -> None:
    xs = [np.array([3.0, 1.0]), np.array([2.0, 5.0]), np.array([4.0, 0.0])]
    assert ops.call("min", xs, "float64", "c").tolist() == [2.0, 0.0]
    assert ops.call("max", xs, "float64", "c").tolist() == [4.0, 5.0]
    assert ops.call("sqrt", [np.array([4.0])], "float64", "c").tolist() == [2.0]


def test_integer_power_wraps_and_a_negative_exponent_gives_zero() -> None:
    """NumPy raises for a negative integer exponent (found by ``benchmarks/difffuzz.py``: the reference
    crashed); the generated code's ``ipow`` gives 0, and so does the reference now."""
    a, e = arr([2, -3, 1, -1, 5, 0, 7], "int32"), arr([3, 3, -1, -2, 40, -5, 0], "int32")
    got = ops.binary("**", a, e, "int32", "int32", "int32", "numpy")
    assert got.dtype == np.int32
    assert got.tolist() == [
        8,
        -27,
        0,
        0,
        int(np.int32(5**40 % 2**32 - 2**32 * (5**40 % 2**32 >= 2**31))),
        0,
        1,
    ]
    u = ops.binary("**", arr([3], "uint8"), arr([5], "uint8"), "uint8", "uint8", "uint8", "numpy")
    assert u.tolist() == [243]
