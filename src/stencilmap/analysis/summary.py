"""``analyze_program``: every fact of ``analysis`` for one program, shape and design point, in one value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from stencilmap.analysis.buffers import InternalBuffer, init_phase, internal_buffers
from stencilmap.analysis.dag import node_name, pass_graph
from stencilmap.analysis.delays import delay_buffers
from stencilmap.analysis.halos import Halo, accumulated_halos, program_halo, stencil_halo
from stencilmap.analysis.intensity import bytes_per_point, operational_intensity
from stencilmap.analysis.latency import OperatorLatencies, stencil_latency
from stencilmap.analysis.ops import OpCounts, ops_per_point, stencil_ops
from stencilmap.analysis.reuse import ReuseBuffer, stencil_reuse_buffers
from stencilmap.analysis.timing import PipelineTiming, grid_points, pipeline_timing, runtime_cycles
from stencilmap.analysis.windows import FieldWindow, linear_offsets, reuse_distance, stencil_windows
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program, Stencil

JsonValue = int | float | str | bool | None | list["JsonValue"] | dict[str, "JsonValue"]


@dataclass(frozen=True, slots=True)
class FieldFacts:
    """One field read by one stencil: its window, linearized offsets and reuse distance D_r."""

    window: FieldWindow
    linear: tuple[int, ...]
    reuse_distance: int


@dataclass(frozen=True, slots=True)
class StencilFacts:
    """Facts of one stencil (one pass; ``accumulated_halo`` is that of its last ``iterate`` copy)."""

    name: str
    fields: tuple[FieldFacts, ...]
    halo: Halo
    accumulated_halo: Halo
    ops: OpCounts
    compute_latency: int
    internal_buffers: tuple[InternalBuffer, ...]
    init_phase: int


@dataclass(frozen=True, slots=True)
class ProgramAnalysis:
    """All analysis facts of a program bound to ``shape`` for k = ``unroll`` PEs and W = ``vector`` lanes.

    Buffer totals count every ``iterate`` copy. ``total_buffer_elements`` = reuse buffers (SODA, the
    minimal window storage for k) + delay buffers.
    """

    program: str
    shape: tuple[int, ...]
    unroll: int
    vector: int
    iterate: int
    stencils: tuple[StencilFacts, ...]
    reuse_buffers: Mapping[str, Mapping[str, ReuseBuffer]]
    timing: PipelineTiming
    delay_buffers: Mapping[str, int]
    latency_cycles: int
    runtime_cycles: int
    points: int
    ops: OpCounts  # per point of the iteration space, all stencils, all iterations
    bytes_per_point: float
    operational_intensity: float
    halo: Halo

    @property
    def lanes(self) -> int:
        return self.unroll * self.vector

    @property
    def reuse_buffer_elements(self) -> int:
        per_pass = sum(b.size for bufs in self.reuse_buffers.values() for b in bufs.values())
        return per_pass * self.iterate

    @property
    def internal_buffer_elements(self) -> int:
        return sum(b.size for s in self.stencils for b in s.internal_buffers) * self.iterate

    @property
    def delay_buffer_elements(self) -> int:
        return sum(self.delay_buffers.values())

    @property
    def total_buffer_elements(self) -> int:
        return self.reuse_buffer_elements + self.delay_buffer_elements

    def to_json(self) -> dict[str, JsonValue]:
        """A JSON-ready dict (sorted keys where order is free)."""
        return {
            "program": self.program,
            "shape": list(self.shape),
            "unroll": self.unroll,
            "vector": self.vector,
            "iterate": self.iterate,
            "points": self.points,
            "reuse_buffers": {
                s: {f: _reuse_json(b) for f, b in sorted(bufs.items())}
                for s, bufs in sorted(self.reuse_buffers.items())
            },
            "delay_buffers": dict(sorted(self.delay_buffers.items())),
            "latency_cycles": self.latency_cycles,
            "runtime_cycles": self.runtime_cycles,
            "operational_intensity": self.operational_intensity,
            "bytes_per_point": self.bytes_per_point,
            "ops": dict(self.ops.as_dict()),
            "ops_per_point": self.ops.total,
            "halo": _halo_json(self.halo),
            "reuse_buffer_elements": self.reuse_buffer_elements,
            "internal_buffer_elements": self.internal_buffer_elements,
            "delay_buffer_elements": self.delay_buffer_elements,
            "total_buffer_elements": self.total_buffer_elements,
            "stencils": {s.name: _stencil_json(s) for s in self.stencils},
        }


def analyze_program(
    program: Program,
    shape: tuple[int, ...] | None = None,
    *,
    unroll: int | None = None,
    vector: int | None = None,
    latencies: OperatorLatencies | None = None,
) -> ProgramAnalysis:
    """Analyse ``program`` over ``shape`` (default: its own, which must then be fully known).

    ``unroll`` (k) and ``vector`` (W) default to the program's hints.
    """
    shape = _concrete_shape(program, shape)
    k = unroll if unroll is not None else program.hints.unroll
    w = vector if vector is not None else program.hints.vectorization
    lat = latencies if latencies is not None else OperatorLatencies.default()
    graph = pass_graph(program)
    timing = pipeline_timing(program, shape, k * w, lat, graph)
    acc = accumulated_halos(program)
    q = max(1, program.iterate)
    stencils = tuple(
        _stencil_facts(program, s, shape, w, lat, acc[node_name(s.name, q, q)]) for s in program.stencils
    )
    points = grid_points(shape)
    return ProgramAnalysis(
        program=program.name,
        shape=shape,
        unroll=k,
        vector=w,
        iterate=q,
        stencils=stencils,
        reuse_buffers={s.name: stencil_reuse_buffers(program, s, shape, k) for s in program.stencils},
        timing=timing,
        delay_buffers=delay_buffers(timing),
        latency_cycles=timing.latency,
        runtime_cycles=runtime_cycles(timing.latency, points, k * w),
        points=points,
        ops=ops_per_point(program),
        bytes_per_point=bytes_per_point(program, shape),
        operational_intensity=operational_intensity(program, shape),
        halo=program_halo(program),
    )


def _concrete_shape(program: Program, shape: tuple[int, ...] | None) -> tuple[int, ...]:
    if shape is None:
        if any(n is None for n in program.shape):
            raise StencilmapError(f"program '{program.name}' has a run-time dimension: give a shape")
        shape = tuple(int(n) for n in program.shape if n is not None)
    if len(shape) != program.rank or any(n < 1 for n in shape):
        raise StencilmapError(f"shape {list(shape)} does not fit a {program.rank}-D program")
    return shape


def _stencil_facts(
    program: Program, st: Stencil, shape: tuple[int, ...], vector: int, lat: OperatorLatencies, acc: Halo
) -> StencilFacts:
    fields = []
    for w in stencil_windows(program, st):
        lin = linear_offsets(program, st, w.field, shape)
        fields.append(FieldFacts(w, lin, reuse_distance(lin)))
    buffers = internal_buffers(program, st, shape, vector)
    return StencilFacts(
        name=st.name,
        fields=tuple(fields),
        halo=stencil_halo(program, st),
        accumulated_halo=acc,
        ops=stencil_ops(st),
        compute_latency=stencil_latency(st, lat),
        internal_buffers=buffers,
        init_phase=init_phase(buffers),
    )


def _reuse_json(b: ReuseBuffer) -> dict[str, JsonValue]:
    return {
        "size": b.size,
        "reuse_distance": b.reuse_distance,
        "chains": [list(c.offsets) for c in b.chains],
        "fifo_depths": list(b.fifo_depths),
        "registers": b.registers,
    }


def _halo_json(h: Halo) -> dict[str, JsonValue]:
    return {"low": list(h.low), "high": list(h.high)}


def _stencil_json(s: StencilFacts) -> dict[str, JsonValue]:
    return {
        "reads": {
            f.window.field: {
                "offsets": [list(o) for o in f.window.offsets],
                "window": list(f.window.window),
                "linear_offsets": list(f.linear),
                "reuse_distance": f.reuse_distance,
                "halo": {"low": list(f.window.halo_low), "high": list(f.window.halo_high)},
            }
            for f in s.fields
        },
        "halo": _halo_json(s.halo),
        "accumulated_halo": _halo_json(s.accumulated_halo),
        "ops": dict(s.ops.as_dict()),
        "compute_latency": s.compute_latency,
        "internal_buffers": {b.field: b.size for b in s.internal_buffers},
        "init_phase": s.init_phase,
    }
