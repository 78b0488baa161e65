"""Streaming timing of the whole pipeline: when each unit starts, the latency L and the runtime C.

Model (StencilFlow §II-A, §IV-B; all stencils run concurrently, initiation interval 1). Every node
streams the points of the iteration space in memory order, P = k·W of them per cycle (SODA's k PEs
times StencilFlow's vector width W; each format sets one of them). A lower-dimensional input is
streamed as its broadcast over the iteration space, so a linearized offset (``windows``) is a distance
in every stream. From first principles: a stencil unit can process point p once every input u has
delivered element p + f_u, where f_u is the largest linearized offset at which it reads u — and it never
runs ahead of its own input streams, so the reach it waits for is r_u = max(0, f_u). With P lanes that
is ρ_u = ⌈r_u / P⌉ cycles, and never past the stream's last vector: ρ_u ≤ N_v − 1 with N_v = ⌈N / P⌉
(reads beyond the stream are boundary values). If node u delivers its first result at cycle t_u (inputs:
t_u = 0), the consumer v processes its first point at

    s_v = max_u (t_u + ρ_uv)                       (0 for a stencil reading nothing)
    t_v = s_v + λ_v                                (λ_v: compute latency, the expression's critical path)

and thereafter one vector per cycle. The reach replaces StencilFlow's per-node initialization phase
max_i B_i (§IV-A): it is the part of the window fill the unit must wait for, and unlike the node-wide
init phase it depends on the producer — which is what makes the delay buffers right when one stencil
reads producers at different reach (see ``delays``). L = max_v t_v; C = L + ⌈N / P⌉ (StencilFlow §VIII-A,
eq. 1 with I = 1: C = L + I·N, the N points streamed over P lanes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import prod

from stencilmap.analysis.dag import PassGraph, pass_graph
from stencilmap.analysis.latency import OperatorLatencies, stencil_latency
from stencilmap.analysis.windows import max_forward_offset
from stencilmap.program.ir import Program


@dataclass(frozen=True, slots=True)
class EdgeTiming:
    """One DAG edge: the consumer reads the producer up to ``reach`` elements ahead of its point.

    ``arrival``: the earliest cycle at which this edge lets the consumer process its first point.
    """

    producer: str
    consumer: str
    field: str
    reach: int  # f: largest linearized offset (elements), may be negative
    reach_cycles: int  # ρ = min(⌈max(0, f) / P⌉, N_v − 1)
    arrival: int  # t_producer + reach_cycles

    @property
    def key(self) -> str:
        return f"{self.producer}->{self.consumer}"


@dataclass(frozen=True, slots=True)
class PipelineTiming:
    """When every node of the unrolled DAG starts (``start``) and delivers its first result (``done``)."""

    lanes: int
    vectors: int  # N_v = ⌈N / P⌉: vectors in every stream
    compute: Mapping[str, int]  # λ_v, 0 for inputs
    start: Mapping[str, int]  # s_v
    done: Mapping[str, int]  # t_v = s_v + λ_v
    edges: tuple[EdgeTiming, ...]

    @property
    def latency(self) -> int:
        """L: the cycle the last node delivers its first result (the critical path, fills included)."""
        return max(self.done.values(), default=0)


def pipeline_timing(
    program: Program,
    shape: tuple[int, ...],
    lanes: int = 1,
    latencies: OperatorLatencies | None = None,
    graph: PassGraph | None = None,
    extra: Mapping[str, int] | None = None,
) -> PipelineTiming:
    """Start and first-result cycles of every node, for ``lanes`` points per cycle. ``extra``: cycles
    an edge (keyed ``"producer->consumer"``) adds to its arrival — a network link between two devices
    (StencilFlow §VI-B), which the delay buffers of the other edges into the consumer must absorb."""
    if lanes < 1:
        raise ValueError(f"lanes must be at least 1, got {lanes}")
    lat = latencies if latencies is not None else OperatorLatencies.default()
    g = graph if graph is not None else pass_graph(program)
    compute: dict[str, int] = {}
    start: dict[str, int] = {}
    done: dict[str, int] = {}
    edges: list[EdgeTiming] = []
    by_stencil: dict[str, int] = {}
    vectors = -(-grid_points(shape) // lanes)
    for node in g.nodes:
        if node.stencil is None:
            compute[node.name] = start[node.name] = done[node.name] = 0
            continue
        st = node.stencil
        mine = []
        for e in g.into(node.name):
            f = max_forward_offset(program, st, e.field, shape)
            cycles = min(-(-max(0, f) // lanes), vectors - 1)
            hop = extra.get(f"{e.producer}->{e.consumer}", 0) if extra else 0
            arrival = done[e.producer] + hop + cycles
            mine.append(EdgeTiming(e.producer, e.consumer, e.field, f, cycles, arrival))
        edges.extend(mine)
        if st.name not in by_stencil:
            by_stencil[st.name] = stencil_latency(st, lat) + lat.unit
        compute[node.name] = by_stencil[st.name]
        start[node.name] = max((m.arrival for m in mine), default=0)
        done[node.name] = start[node.name] + compute[node.name]
    return PipelineTiming(lanes, vectors, compute, start, done, tuple(edges))


def grid_points(shape: tuple[int, ...]) -> int:
    """N: points of the iteration space."""
    return prod(shape)


def runtime_cycles(latency: int, points: int, lanes: int = 1) -> int:
    """C = L + ⌈N / P⌉ cycles (StencilFlow §VIII-A, eq. 1, I = 1; N points over P lanes)."""
    return latency + -(-points // lanes)
