"""Delay buffers on the DAG edges (StencilFlow §IV-B): the channel depths that make every DAG deadlock-free.

With the timing of ``timing`` (edge e = u → v lets v start at ``arrival_e`` = t_u + ⌈r_uv / P⌉, v starts
at s_v = max over its edges), the channel u → v must hold what u delivers before v needs it: u delivers
one vector per cycle from t_u, v absorbs u's vectors in lockstep with its own points (its internal buffer
holds the window, filled before its first point, nothing more), so in steady state the channel holds
s_v − arrival_e vectors — but never more than the stream minus the window fill, N_v − 1 − ρ_e:

    depth(u → v) = P · min(s_v − arrival_e, N_v − 1 − ρ_e) elements

= (the largest delay into v) − (this edge's delay) whenever the grid is longer than the delays (the cap
only bites on tiny grids), so every node has an incoming edge of depth 0.
Depths are counted in stream positions: for a lower-dimensional input, positions of its broadcast.
``tests/analysis/test_delays.py`` checks the rule against a cycle-by-cycle simulation of that model.

StencilFlow's published rule charges each node one initialization phase max_i B_i whatever the producer,
so an edge's delay is the producer's completion time alone (``published_delay_buffers``). It is wrong
when a stencil reads its producers at different reach (corpus ``horidiff_min.json``: k2 reads k0 at
+J·K and k1 at 0, both completing together; the published rule gives k1 → k2 depth 0, the
channel needs J·K).

Chained lines (a replayed input read by every iterated copy, FDTD's C1–C4): a delay line may continue
another edge's line from the same producer instead of starting at the producer. Past the tap — the
other line's end, whose consumer w pulls one element a cycle from ``absorbs`` = s_w − ρ — the new
line must hold what w has taken before v needs it: by the same steady-state argument as above,

    relay(tap → v) = P · min(absorbs_v − absorbs_w, N_v − 1 − ρ_e) elements

— the difference of the *uncapped* delays, capped by v's own stream (not the difference of two capped
depths: on a grid shorter than the lag between copies, the earlier copy drains the whole stream before
the later one starts, and the line must hold all of it).
"""

from __future__ import annotations

from stencilmap.analysis.buffers import init_cycles, internal_buffers
from stencilmap.analysis.dag import pass_graph
from stencilmap.analysis.latency import OperatorLatencies, stencil_latency
from stencilmap.analysis.timing import EdgeTiming, PipelineTiming
from stencilmap.program.ir import Program


def delay_buffers(timing: PipelineTiming) -> dict[str, int]:
    """Depth in elements of the delay buffer on every edge, keyed ``"producer->consumer"``."""
    return {e.key: timing.lanes * _vectors(timing, e) for e in timing.edges}


def _vectors(timing: PipelineTiming, e: EdgeTiming) -> int:
    return min(timing.start[e.consumer] - e.arrival, timing.vectors - 1 - e.reach_cycles)


def absorbs(timing: PipelineTiming, e: EdgeTiming) -> int:
    """The cycle at which the consumer of ``e`` takes the producer's element 0 in steady state,
    s_v − ρ_e (it takes element m at s_v − ρ_e + m): later edges of one producer need deeper lines."""
    return timing.start[e.consumer] - e.reach_cycles


def relay_delay(timing: PipelineTiming, tap: EdgeTiming, e: EdgeTiming) -> int:
    """Depth in elements of a delay line continuing the line of ``tap`` (same producer) to feed ``e``;
    see the module docstring. 0 when ``e`` takes its elements no later than ``tap``'s consumer."""
    lag = absorbs(timing, e) - absorbs(timing, tap)
    return timing.lanes * max(0, min(lag, timing.vectors - 1 - e.reach_cycles))


def published_delay_buffers(
    program: Program,
    shape: tuple[int, ...],
    vector: int = 1,
    latencies: OperatorLatencies | None = None,
) -> dict[str, int]:
    """Delay buffers by StencilFlow's published rule (§IV-B), for comparison; see the module docstring.

    Completion d_v = max_u d_u + ⌈max_i B_i / W⌉ + λ_v (inputs: 0); depth(u → v) = W · (max_w d_w − d_u).
    """
    lat = latencies if latencies is not None else OperatorLatencies.default()
    g = pass_graph(program)
    done: dict[str, int] = {}
    out: dict[str, int] = {}
    for node in g.nodes:
        if node.stencil is None:
            done[node.name] = 0
            continue
        into = g.into(node.name)
        latest = max((done[e.producer] for e in into), default=0)
        for e in into:
            out[e.key] = vector * (latest - done[e.producer])
        init = init_cycles(internal_buffers(program, node.stencil, shape, vector), vector)
        done[node.name] = latest + init + stencil_latency(node.stencil, lat)
    return out
