"""Operational intensity: operations per byte of off-chip traffic, with perfect on-chip reuse.

Perfect reuse (SODA §3.1 objective 3, StencilFlow §II-A): every input element is read from off-chip
memory once and every output element written once; intermediate fields never leave the chip. A
lower-dimensional input (or a param) contributes its own size in bytes divided by the number of points
of the iteration space. ``iterate: q`` multiplies the operations but not the traffic (the q stages are
chained on chip).
"""

from __future__ import annotations

from math import prod

import numpy as np

from stencilmap.analysis.ops import ops_per_point
from stencilmap.program.graph import reads
from stencilmap.program.ir import Program


def itemsize(dtype: str) -> int:
    """Bytes of one element of a canonical dtype (``bool`` is one byte)."""
    return int(np.dtype(dtype).itemsize)


def bytes_per_point(program: Program, shape: tuple[int, ...]) -> float:
    """Off-chip bytes per point of the iteration space: inputs read once, outputs written once."""
    points = prod(shape)
    used = {f for s in program.stencils for f in reads(s)}
    total = 0.0
    for inp in program.inputs:
        if inp.name in used:
            total += itemsize(inp.dtype) * prod(shape[a] for a in inp.axes) / points
    for par in program.params:
        total += itemsize(par.dtype) * prod(par.shape) / points
    for out in program.outputs:
        total += itemsize(program.field_dtype(out))
    return total


def operational_intensity(program: Program, shape: tuple[int, ...]) -> float:
    """Operations per off-chip byte: (ops per point × iterate) ÷ bytes per point; 0 with no traffic."""
    traffic = bytes_per_point(program, shape)
    return ops_per_point(program).total / traffic if traffic else 0.0
