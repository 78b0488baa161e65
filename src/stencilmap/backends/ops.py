"""Scalar operations on NumPy arrays under C (SODA) or NumPy (StencilFlow) semantics.

Every function takes operands already typed by ``program.typecheck`` and returns an array of exactly the
inferred type, so typing and evaluation cannot drift apart. C specifics, chosen and documented:
integer ``/`` truncates toward zero and ``%`` takes the dividend's sign; integer overflow wraps (two's
complement, as the hardware does); integer division by zero yields 0, and an integer raised to a negative
power 0; float→integer conversion truncates
toward zero; ``round`` rounds half away from zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.program import dtypes as dt
from stencilmap.program.expr import COMPARE_OPS

Array = npt.NDArray[Any]


def as_type(x: Array, t: str) -> Array:
    """Convert to a (possibly weak) type; C and NumPy agree here: wrap integers, truncate floats."""
    target = np.dtype(dt.concrete(t))
    if x.dtype == target:
        return x
    with np.errstate(all="ignore"):
        if target == np.bool_:
            return np.not_equal(x, 0)
        if x.dtype.kind == "f" and target.kind in "iu" and target.itemsize < 8:
            return _float_to_narrow_int(x, target)
        out: Array = x.astype(target)
        return out


def _float_to_narrow_int(x: Array, target: np.dtype[Any]) -> Array:
    """Float → 8/16/32-bit integer: truncate toward zero, then wrap modulo 2**bits; NaN and ±inf give 0.

    C leaves out-of-range conversions undefined (NumPy's result depends on the CPU); stencilmap defines
    them as this wrap-around, which every executor implements."""
    bits = target.itemsize * 8
    t = np.trunc(x.astype(np.float64))
    t = np.where(np.isfinite(t), t, 0.0)
    span = float(2**bits)
    wrapped = t - span * np.floor(t / span)
    if target.kind == "i":
        wrapped = np.where(wrapped >= span / 2, wrapped - span, wrapped)
    out: Array = wrapped.astype(target)
    return out


def _truthy(x: Array) -> Array:
    return np.not_equal(x, 0)


def _c_div(a: Array, b: Array) -> Array:
    if a.dtype.kind == "f":
        return np.divide(a, b)
    zero = b == 0
    safe_b = np.where(zero, np.ones_like(b), b)
    q = np.floor_divide(a, safe_b)
    adjust = (np.remainder(a, safe_b) != 0) & ((a < 0) != (safe_b < 0))
    q = q + adjust.astype(q.dtype)
    out: Array = np.where(zero, np.zeros_like(q), q)
    return out


def _c_mod(a: Array, b: Array) -> Array:
    zero = b == 0
    safe_b = np.where(zero, np.ones_like(b), b)
    return np.where(zero, np.zeros_like(a), np.fmod(a, safe_b))


_ARITH: dict[str, Callable[[Array, Array], Array]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "&": np.bitwise_and,
    "|": np.bitwise_or,
    "^": np.bitwise_xor,
    "**": np.power,
}
_COMPARE: dict[str, Callable[[Array, Array], Array]] = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def binary(op: str, a: Array, b: Array, ta: str, tb: str, result: str, semantics: dt.Semantics) -> Array:
    """``a op b`` with operand types ``ta``, ``tb`` and the inferred result type."""
    with np.errstate(all="ignore"):
        if op in ("&&", "||"):
            fn = np.logical_and if op == "&&" else np.logical_or
            return as_type(fn(_truthy(a), _truthy(b)), result)
        if op in COMPARE_OPS:
            common = dt.c_common(ta, tb) if semantics == "c" else dt.np_common(ta, tb)
            return as_type(_COMPARE[op](as_type(a, common), as_type(b, common)), result)
        x, y = as_type(a, result), as_type(b, result)
        if op == "/":
            return as_type(_c_div(x, y) if semantics == "c" else np.true_divide(x, y), result)
        if op == "%":
            return as_type(_c_mod(x, y) if semantics == "c" else np.mod(x, y), result)
        if op == "//":
            return as_type(np.floor_divide(x, y), result)
        if op == "**" and x.dtype.kind in "iu":
            return as_type(_int_power(x, y), result)
        return as_type(_ARITH[op](x, y), result)


def _int_power(x: Array, y: Array) -> Array:
    """Integer ``x ** y``, wrapping; a negative exponent gives 0 (NumPy raises; every executor's choice)."""
    negative = y < 0
    out = np.power(x, np.where(negative, np.zeros_like(y), y))
    return np.where(negative, np.zeros_like(out), out)


def unary(op: str, a: Array, result: str) -> Array:
    with np.errstate(all="ignore"):
        if op == "!":
            return as_type(np.logical_not(_truthy(a)), result)
        x = as_type(a, result)
        if op == "-":
            return as_type(np.negative(x), result)
        if op == "~":
            return as_type(np.invert(x), result)
        return x


def select(cond: Array, a: Array, b: Array, result: str) -> Array:
    return as_type(np.where(_truthy(cond), as_type(a, result), as_type(b, result)), result)


def _round_half_away(x: Array) -> Array:
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _vectorized(fn: Callable[[float], float]) -> Callable[[Array], Array]:
    ufunc = np.frompyfunc(fn, 1, 1)

    def apply(x: Array) -> Array:
        return np.asarray(ufunc(x), dtype=x.dtype)

    return apply


_MATH1: dict[str, Callable[[Array], Array]] = {
    "sqrt": np.sqrt,
    "cbrt": np.cbrt,
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "fabs": np.fabs,
    "abs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "erf": _vectorized(math.erf),
    "erfc": _vectorized(math.erfc),
}
_MATH2: dict[str, Callable[[Array, Array], Array]] = {
    "pow": np.power,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "fmod": np.fmod,
    "fmin": np.fmin,
    "fmax": np.fmax,
    "copysign": np.copysign,
    "fdim": lambda a, b: np.maximum(a - b, 0),
}


def call(func: str, args: list[Array], result: str, semantics: dt.Semantics) -> Array:
    """A math function applied to arguments converted to the result type."""
    with np.errstate(all="ignore"):
        xs = [as_type(a, result) for a in args]
        if func in ("min", "max"):
            fn = np.minimum if func == "min" else np.maximum
            out = xs[0]
            for x in xs[1:]:
                out = fn(out, x)
            return as_type(out, result)
        if func == "round":
            return as_type(_round_half_away(xs[0]) if semantics == "c" else np.round(xs[0]), result)
        if func == "fma":
            return as_type(xs[0] * xs[1] + xs[2], result)
        if func in _MATH1:
            return as_type(_MATH1[func](xs[0]), result)
        return as_type(_MATH2[func](xs[0], xs[1]), result)
