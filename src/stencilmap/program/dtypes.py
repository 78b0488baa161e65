"""Scalar types and the two typing disciplines of the formats.

SODA programs follow C/C++ (``semantics="c"``):

* operands narrower than ``int`` (8- and 16-bit integers, bool) are promoted to ``int32`` before arithmetic;
* the usual arithmetic conversions pick the common type of two operands (double > float > integers by
  rank, an unsigned operand of equal or greater rank wins; ``half`` is computed as ``float``);
* comparisons and ``&& || !`` yield ``int32``; ``<cmath>`` functions keep ``float``/``double`` and turn
  integers into ``double``;
* the value is converted to the declared type on assignment (integers wrap, floats truncate toward zero).

StencilFlow programs follow NumPy 2 (``semantics="numpy"``): literals are *weak* Python scalars
(``float32_array * 0.25`` stays float32), comparisons give bool, ``/`` is true division, and the result is
cast to the stencil's ``data_type``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

Semantics = Literal["c", "numpy"]

#: Canonical dtype names (NumPy spelling).
INT_TYPES = ("int8", "int16", "int32", "int64")
UINT_TYPES = ("uint8", "uint16", "uint32", "uint64")
FLOAT_TYPES = ("float16", "float32", "float64")
DTYPES = ("bool", *INT_TYPES, *UINT_TYPES, *FLOAT_TYPES)

#: Weak (Python literal) kinds used by NumPy semantics; never stored in a field.
WEAK_INT = "pyint"
WEAK_FLOAT = "pyfloat"
WEAK_BOOL = "pybool"
WEAK_TYPES = (WEAK_BOOL, WEAK_INT, WEAK_FLOAT)

_SODA_ALIASES = {"float": "float32", "double": "float64", "half": "float16"}
_SODA_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def is_float(t: str) -> bool:
    return t in FLOAT_TYPES or t == WEAK_FLOAT


def is_integer(t: str) -> bool:
    return t in INT_TYPES or t in UINT_TYPES or t in (WEAK_INT, "bool", WEAK_BOOL)


def is_unsigned(t: str) -> bool:
    return t in UINT_TYPES


def bits(t: str) -> int:
    if t in ("bool", WEAK_BOOL):
        return 1
    return int(np.dtype(t).itemsize * 8)


def parse_dtype(name: str) -> str | None:
    """Canonical name of a dtype spelled in either format, or None if unknown."""
    name = name.strip()
    if name in _SODA_ALIASES:
        return _SODA_ALIASES[name]
    if name in DTYPES:
        return name
    return None


def soda_name(t: str) -> str:
    """The SODA spelling of a canonical dtype."""
    return _SODA_NAMES.get(t, t)


# ---------------------------------------------------------------------------------------------- C rules


def c_promote(t: str) -> str:
    """Integer promotion (C11 §6.3.1.1): ranks below int become int; half is computed as float."""
    if t in ("bool", "int8", "int16", "uint8", "uint16"):
        return "int32"
    if t == "float16":
        return "float32"
    return t


def c_common(a: str, b: str) -> str:
    """Usual arithmetic conversions (C11 §6.3.1.8) of two operand types."""
    a, b = c_promote(a), c_promote(b)
    for f in ("float64", "float32"):
        if f in (a, b):
            return f
    if a == b:
        return a
    sa, sb = not is_unsigned(a), not is_unsigned(b)
    if sa == sb:
        return a if bits(a) >= bits(b) else b
    signed, unsigned = (a, b) if sa else (b, a)
    if bits(unsigned) >= bits(signed):
        return unsigned
    return signed  # a wider signed type represents every value of the narrower unsigned one


def c_literal_int_type(value: int, suffix: str, decimal: bool) -> str:
    """Type of a C integer literal (C11 §6.4.4.1) from its value and suffix."""
    suffix = suffix.lower()
    unsigned = "u" in suffix
    long_ = "l" in suffix
    if unsigned:
        candidates = ["uint64"] if long_ else ["uint32", "uint64"]
    elif decimal:
        candidates = ["int64"] if long_ else ["int32", "int64"]
    else:
        candidates = ["int64", "uint64"] if long_ else ["int32", "uint32", "int64", "uint64"]
    for c in candidates:
        info = np.iinfo(c)
        if int(info.min) <= value <= int(info.max):
            return c
    return candidates[-1]


# ------------------------------------------------------------------------------------------ NumPy rules


def _np_repr(t: str) -> np.dtype[np.generic] | bool | int | float:
    if t == WEAK_BOOL:
        return False
    if t == WEAK_INT:
        return 0
    if t == WEAK_FLOAT:
        return 0.0
    return np.dtype(t)


def np_common(a: str, b: str) -> str:
    """NumPy 2 (NEP 50) result type of two operands; Python literals are weak."""
    if a in WEAK_TYPES and b in WEAK_TYPES:
        return max(a, b, key=WEAK_TYPES.index)
    return str(np.result_type(_np_repr(a), _np_repr(b)))


def np_true_divide(a: str, b: str) -> str:
    """Result type of ``/`` under NumPy: integers divide into float64."""
    t = np_common(a, b)
    if t in (WEAK_INT, WEAK_BOOL):
        return WEAK_FLOAT
    if is_integer(t):
        return "float64"
    return t


def np_float_result(t: str) -> str:
    """Result type of a NumPy ufunc like sqrt: floats keep their width, integers become float64."""
    if t in (WEAK_INT, WEAK_FLOAT, WEAK_BOOL):
        return WEAK_FLOAT
    if t in ("bool", "int8", "uint8"):
        return "float16"
    if t in ("int16", "uint16"):
        return "float32"
    if is_integer(t):
        return "float64"
    return t


def concrete(t: str) -> str:
    """The stored dtype of a (possibly weak) type: weak ints are int64, weak floats float64."""
    return {WEAK_INT: "int64", WEAK_FLOAT: "float64", WEAK_BOOL: "bool"}.get(t, t)
