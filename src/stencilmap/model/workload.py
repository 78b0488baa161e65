"""What one time step of a program asks of any machine: points, operations, off-chip bytes, intensity.

The facts come from ``analysis`` (op counts, bytes per point with perfect reuse); this module only
counts *which* points are computed. With every boundary ``shrink`` only the interior is: the points
whose accumulated window lies in the grid, ∏(n_d − (S_d − 1)) of them. CGRA §VI counts exactly that
(17-point stencil on 194,400 points: 33 flops × 194,384 points over (194,400 + 194,400) × 8 bytes =
2.06 flop/B); with ``constant`` or ``copy`` boundaries every point is computed. So the work intensity
is ``analysis.operational_intensity`` × computed / N, equal to it for non-shrinking programs and
within 2r/n of it otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod

from stencilmap.analysis.halos import program_halo
from stencilmap.analysis.intensity import bytes_per_point, itemsize, operational_intensity
from stencilmap.analysis.ops import merged, program_ops
from stencilmap.program.graph import reads
from stencilmap.program.ir import Program


@dataclass(frozen=True, slots=True)
class Workload:
    """One time step (one pass, ``iterate`` 1) of a shape-bound program."""

    program: Program
    shape: tuple[int, ...]
    points: int
    computed_points: int
    ops_per_point: int
    bytes_per_point: float  # inputs read once, outputs written once (analysis.bytes_per_point)
    output_bytes_per_point: float
    dtype: str  # float32 or float64: which peak the arithmetic runs at

    @property
    def input_bytes(self) -> float:
        return (self.bytes_per_point - self.output_bytes_per_point) * self.points

    @property
    def output_bytes(self) -> float:
        return self.output_bytes_per_point * self.points

    def ops(self, steps: int = 1) -> float:
        """Operations of ``steps`` time steps: ops per point × computed points × steps."""
        return float(self.ops_per_point) * self.computed_points * steps

    def intensity(self, steps_on_chip: int = 1) -> float:
        """Work intensity (op/B) with ``steps_on_chip`` time steps chained between memory accesses."""
        traffic = self.bytes_per_point * self.points
        return self.ops(steps_on_chip) / traffic if traffic else 0.0

    @property
    def analysis_intensity(self) -> float:
        """``analysis.operational_intensity`` of one pass: every point's operations."""
        return operational_intensity(self.program, self.shape)


def workload(program: Program, shape: tuple[int, ...]) -> Workload:
    """The workload of one pass of ``program`` over ``shape``."""
    one = replace(program, iterate=1)
    points = prod(shape)
    out = sum(itemsize(program.field_dtype(o)) for o in program.outputs)
    return Workload(
        program=one,
        shape=shape,
        points=points,
        computed_points=computed_points(one, shape),
        ops_per_point=merged(program_ops(one)).total,
        bytes_per_point=bytes_per_point(one, shape),
        output_bytes_per_point=float(out),
        dtype=compute_dtype(program),
    )


def computed_points(program: Program, shape: tuple[int, ...]) -> int:
    """Points a run computes: the interior when every read of every stencil is ``shrink``, else all."""
    if all(st.boundary_of(f).kind == "shrink" for st in program.stencils for f in reads(st)):
        sizes = program_halo(program).size
        return prod(max(0, n - h) for n, h in zip(shape, sizes, strict=True))
    return prod(shape)


def compute_dtype(program: Program) -> str:
    """``float64`` when a stencil or an input is double precision, else ``float32``."""
    dtypes = {s.dtype for s in program.stencils} | {i.dtype for i in program.inputs}
    return "float64" if "float64" in dtypes else "float32"
