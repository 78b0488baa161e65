"""Scalar types and literals of the generated code, for C++ (HLS, emulation) and OpenCL C: the codegen
names (``cpp``, ``opencl``) of ``scalar.ctypes``'s ``hls`` and ``opencl`` dialects.

Every program dtype maps to one C type per dialect; NumPy's weak literal kinds are emitted as the
concrete type the reference gives them (``dtypes.concrete``). Literals are exact: floats as the shortest decimal
that reads back as the rounded value, integers with an explicit 64-bit suffix where needed.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from stencilmap.errors import StencilmapError
from stencilmap.program import dtypes as dt
from stencilmap.scalar import ctypes_ as sc
from stencilmap.scalar.lower import literal_value

Dialect = Literal["cpp", "opencl"]

#: Short names used in helper-function names (``sm_add_wrap_i32``).
SUFFIX = sc.SUFFIX


def scalar_dialect(dialect: Dialect) -> sc.Dialect:
    return "hls" if dialect == "cpp" else "opencl"


def concrete(t: str) -> str:
    """The stored type of a (possibly weak) type; float16 has no portable C type and is refused."""
    c = dt.concrete(t)
    if c == "float16":
        raise StencilmapError(sc.FLOAT16_REFUSED)
    return c


def ctype(t: str, dialect: Dialect = "cpp") -> str:
    return sc.ctype(concrete(t), scalar_dialect(dialect))


def storage(t: str) -> str:
    """The dtype a value of ``t`` has in memory (NumPy stores bool as one byte)."""
    c = concrete(t)
    return "uint8" if c == "bool" else c


def bits(t: str) -> int:
    return int(np.dtype(storage(t)).itemsize * 8)


def literal(value: float | int | bool, t: str, dialect: Dialect = "cpp") -> str:
    """An exact literal of ``value`` converted to ``t`` as NumPy converts it (``np.asarray(v, t)``)."""
    c = concrete(t)
    return sc.literal(literal_value(value, c), c, scalar_dialect(dialect))
