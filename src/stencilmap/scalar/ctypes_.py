"""C types and exact literals of each dialect (``render.Dialect``).

``c99`` (the cpu backend, gcc with ``-fwrapv``) and ``cuda`` (NVRTC) store bool as ``uint8_t`` and write
float literals in hexadecimal; ``c99`` has ``_Float16``. ``hls`` (C++, Vitis HLS and g++ C-simulation) and
``opencl`` (OpenCL C, also compiled as C++ by the emulation) have ``bool`` and write floats as the
shortest decimal that reads back as the value. float16 is refused outside ``c99``.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from stencilmap.errors import StencilmapError
from stencilmap.program import dtypes as dt

Dialect = Literal["c99", "cuda", "hls", "opencl"]
DIALECTS: tuple[Dialect, ...] = ("c99", "cuda", "hls", "opencl")

_C = {
    "bool": "uint8_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "float16": "_Float16",
    "float32": "float",
    "float64": "double",
}
_CPP = {**_C, "bool": "bool"}
del _CPP["float16"]
_OPENCL = {
    "bool": "bool",
    "int8": "char",
    "int16": "short",
    "int32": "int",
    "int64": "long",
    "uint8": "uchar",
    "uint16": "ushort",
    "uint32": "uint",
    "uint64": "ulong",
    "float32": "float",
    "float64": "double",
}
TYPES: dict[Dialect, dict[str, str]] = {"c99": _C, "cuda": _C, "hls": _CPP, "opencl": _OPENCL}

#: Short names used in helper-function names (``sm_add_wrap_i32``).
SUFFIX = {
    "bool": "b",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
}

FLOAT16_REFUSED = "code generation does not support float16 (half) values"


def c_family(dialect: Dialect) -> bool:
    """True for the dialects of the host backends (``uint8_t`` bools; hexadecimal float literals in C99)."""
    return dialect in ("c99", "cuda")


def ctype(t: str, dialect: Dialect) -> str:
    c = dt.concrete(t)
    if c == "float16" and dialect != "c99":
        raise StencilmapError(FLOAT16_REFUSED)
    return TYPES[dialect][c]


def literal(value: int | float | bool, t: str, dialect: Dialect) -> str:
    """An exact literal of ``value`` (already of concrete type ``t``), of C type ``ctype(t)``."""
    if c_family(dialect):
        return _c_literal(value, t, dialect)
    return _cpp_literal(value, t, dialect)


def _c_literal(x: int | float | bool, t: str, dialect: Dialect) -> str:
    c = _C[t]
    if dt.is_float(t):
        f = float(x)
        if math.isnan(f):
            return f"(({c})NAN)"
        if math.isinf(f):
            return f"(({c})({'-' if f < 0 else ''}INFINITY))"
        # NVRTC (CuPy's CUDA compiler) reads no hexadecimal floats: there the shortest decimal that reads
        # back as the same double (Python's repr), equally exact
        return f"(({c}){repr(f) if dialect == 'cuda' else f.hex()})"
    i = int(x)
    if t == "bool":
        return f"((uint8_t){1 if i else 0})"
    if i < 0:
        return f"(({c})({i + 1}LL - 1))" if i == -(2**63) else f"(({c})({i}LL))"
    return f"(({c}){i}ULL)"


def _cpp_literal(value: int | float | bool, t: str, dialect: Dialect) -> str:
    name = ctype(t, dialect)
    if t == "bool":
        return "true" if bool(value) else "false"
    if dt.is_float(t):
        v = float(value)
        if math.isnan(v):
            return f"(({name})NAN)"
        if math.isinf(v):
            return f"(({name})INFINITY)" if v > 0 else f"(-({name})INFINITY)"
        return repr(v) + ("f" if t == "float32" else "")  # the shortest decimal that reads back exactly
    v = int(value)
    if t == "int64" and v == int(np.iinfo(np.int64).min):
        return "((long)(-9223372036854775807L - 1))" if dialect == "opencl" else "(INT64_MIN)"
    suffix = "UL" if dt.is_unsigned(t) else "L"
    if t in ("int64", "uint64"):
        return f"(({name}){v}{suffix})"
    return f"(({name}){v})" if v >= 0 else f"(({name})({v}))"
