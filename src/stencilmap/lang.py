"""Names a Python stencil program imports (``from stencilmap.lang import float32, sqrt``) so that an IDE or a
type checker resolves them. stencilmap reads such a file with ``ast`` and never runs it
(``program.python``); nothing here computes anything.

* dtypes (annotations and casts): ``int8 … int64``, ``uint8 … uint64``, ``float16``, ``float32``,
  ``float64`` (``bool`` is Python's own). A field annotated ``float32`` reads as ``v[-1, 0]``.
* math functions as in the other front ends (``sqrt``, ``exp``, ``fmin`` …; ``min``, ``max``, ``abs``,
  ``round`` and ``pow`` are Python's builtins).
* ``literal(0.2, float32)``: a literal of that type (SODA's ``0.2f``); a bare literal takes the
  semantics' type (``numpy``: a weak Python scalar; ``c``: C's rules, ``int32``/``int64``/``float64``).
* boundary conditions, as a parameter's default: ``def w(v: float32 = constant(0.0))``, ``= copy``,
  ``= shrink``.
* module-level declarations: ``a: float32 = Input(axes=(1,), data="a.dat")`` (an input spanning some
  axes, with a data source: a path, ``constant(v)``, ``random(lo, hi)``, a number, a list),
  ``c: float32 = Param(3, 3)`` (a small constant array, read as ``c[i, j]``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Input",
    "Param",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "ceil",
    "constant",
    "copy",
    "copysign",
    "cos",
    "cosh",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "fabs",
    "fdim",
    "float16",
    "float32",
    "float64",
    "floor",
    "fma",
    "fmax",
    "fmin",
    "fmod",
    "hypot",
    "int8",
    "int16",
    "int32",
    "int64",
    "literal",
    "log",
    "log1p",
    "log2",
    "log10",
    "random",
    "rint",
    "shrink",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]


class _DType(Any):  # type: ignore[misc]
    """A scalar type: an annotation (``v: float32``) or a cast (``float32(x)``). Subclassing ``Any`` lets a
    type checker accept ``v[-1, 0] * 0.5`` on a field annotated with it."""

    def __new__(cls, *args: Any, **kwargs: Any) -> _DType:
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


class int8(_DType):
    pass


class int16(_DType):
    pass


class int32(_DType):
    pass


class int64(_DType):
    pass


class uint8(_DType):
    pass


class uint16(_DType):
    pass


class uint32(_DType):
    pass


class uint64(_DType):
    pass


class float16(_DType):
    pass


class float32(_DType):
    pass


class float64(_DType):
    pass


def _describes(*args: Any, **kwargs: Any) -> Any:
    """Every function here only describes a stencil; the program is read, never run."""
    return None


literal = Input = Param = random = constant = _describes
copy: Any = None
shrink: Any = None
sqrt = cbrt = exp = exp2 = expm1 = log = log2 = log10 = log1p = _describes
sin = cos = tan = asin = acos = atan = sinh = cosh = tanh = asinh = acosh = atanh = _describes
fabs = floor = ceil = trunc = rint = erf = erfc = _describes
atan2 = hypot = fmod = fmin = fmax = copysign = fdim = fma = _describes
