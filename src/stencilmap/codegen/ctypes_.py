"""Scalar types and literals of the generated code, for C++ (HLS, emulation) and OpenCL C.

Every program dtype maps to one C type per dialect; NumPy's weak literal kinds are emitted as the
concrete type the reference gives them (``dtypes.concrete``). Literals are exact: floats as the shortest decimal
that reads back as the rounded value, integers with an explicit 64-bit suffix where needed.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from stencilmap.errors import StencilmapError
from stencilmap.program import dtypes as dt

Dialect = Literal["cpp", "opencl"]

_CPP = {
    "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float32": "float", "float64": "double",
}  # fmt: skip
_OPENCL = {
    "bool": "bool", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
    "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
    "float32": "float", "float64": "double",
}  # fmt: skip
#: Short names used in helper-function names (``sm_add_i32``).
SUFFIX = {
    "bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "float32": "f32", "float64": "f64",
}  # fmt: skip


def concrete(t: str) -> str:
    """The stored type of a (possibly weak) type; float16 has no portable C type and is refused."""
    c = dt.concrete(t)
    if c == "float16":
        raise StencilmapError("code generation does not support float16 (half) values")
    return c


def ctype(t: str, dialect: Dialect = "cpp") -> str:
    return (_CPP if dialect == "cpp" else _OPENCL)[concrete(t)]


def storage(t: str) -> str:
    """The dtype a value of ``t`` has in memory (NumPy stores bool as one byte)."""
    c = concrete(t)
    return "uint8" if c == "bool" else c


def bits(t: str) -> int:
    return int(np.dtype(storage(t)).itemsize * 8)


def literal(value: float | int | bool, t: str, dialect: Dialect = "cpp") -> str:
    """An exact literal of ``value`` converted to ``t`` as NumPy converts it (``np.asarray(v, t)``)."""
    c = concrete(t)
    name = ctype(c, dialect)
    if c == "bool":
        return "true" if bool(value) else "false"
    if dt.is_float(c):
        v = float(np.asarray(value, dtype=c))
        if math.isnan(v):
            return f"(({name})NAN)"
        if math.isinf(v):
            return f"(({name})INFINITY)" if v > 0 else f"(-({name})INFINITY)"
        text = repr(v)  # the shortest decimal that reads back as exactly this value
        return text + ("f" if c == "float32" else "")
    with np.errstate(all="ignore"):
        v = int(np.asarray(value).astype(c)) if not isinstance(value, int) else int(value)
    info = np.iinfo(c)
    span = int(info.max) - int(info.min) + 1
    v = (v - int(info.min)) % span + int(info.min)
    if c == "int64" and v == int(info.min):
        return "((long)(-9223372036854775807L - 1))" if dialect == "opencl" else "(INT64_MIN)"
    suffix = "UL" if dt.is_unsigned(c) else "L"
    if c in ("int64", "uint64"):
        return f"(({name}){v}{suffix})"
    return f"(({name}){v})" if v >= 0 else f"(({name})({v}))"
