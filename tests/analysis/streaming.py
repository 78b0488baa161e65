"""A cycle-by-cycle model of a streaming stencil pipeline, the oracle for the delay-buffer rule.

Every node streams the N points of the grid in memory order as ⌈N / P⌉ vectors of P lanes, with
unbounded channels. Input vector q arrives at cycle q. A stencil unit processes vector q once the
previous one is done (one vector per cycle, none before cycle 0) and every producer u has delivered the
vector holding element (q + 1)·P − 1 + f_u (f_u: the largest linearized offset it reads u at; clamped
into the stream: reads outside it are boundary values); the result leaves λ cycles later. The unit's
window absorbs a producer's vectors in lockstep: those holding elements up to (q + 1)·P − 1 + max(0, f_u)
once it processed q, the window of vector 0 while it waits for its first one. A channel holds what was
delivered and not absorbed; the buffer an edge needs is P × the most vectors it ever holds.

Nothing here uses the closed form of ``stencilmap.analysis.timing``/``delays``: only the unrolled DAG,
the reach of each edge (recomputed here) and each stencil's compute latency.
"""

from __future__ import annotations

from math import prod

import numpy as np
import numpy.typing as npt

from stencilmap.analysis.dag import pass_graph
from stencilmap.analysis.latency import OperatorLatencies, stencil_latency
from stencilmap.program.expr import refs
from stencilmap.program.ir import Program, Stencil

Ints = npt.NDArray[np.int64]


def reach(program: Program, st: Stencil, field: str, shape: tuple[int, ...]) -> int:
    """The largest linearized offset at which ``st`` reads ``field`` (temporaries included)."""
    full = [int(prod(shape[a + 1 :])) for a in range(len(shape))]
    axes = program.field_axes(field)
    exprs = [st.expr, *(t.expr for t in st.temps)]
    return max(
        sum(o * full[a] for o, a in zip(r.offset, axes, strict=True))
        for e in exprs
        for r in refs(e)
        if r.field == field
    )


def simulate(
    program: Program, shape: tuple[int, ...], lanes: int, lat: OperatorLatencies
) -> tuple[dict[str, int], dict[str, int]]:
    """(first-result cycle of every node, required depth in elements of every edge's channel)."""
    n = prod(shape)
    nv = -(-n // lanes)
    g = pass_graph(program)
    q = np.arange(nv, dtype=np.int64)
    delivered: dict[str, Ints] = {}
    depth: dict[str, int] = {}
    for node in g.nodes:
        if node.stencil is None:
            delivered[node.name] = q.copy()
            continue
        edges = [(e, reach(program, node.stencil, e.field, shape)) for e in g.into(node.name)]
        ready = np.zeros(nv, dtype=np.int64)
        for e, f in edges:
            need = np.clip((q + 1) * lanes - 1 + f, 0, n - 1) // lanes
            ready = np.maximum(ready, delivered[e.producer][need])
        process = np.maximum.accumulate(ready - q) + q  # C[q] = max(C[q-1] + 1, ready[q]), C[-1] = -1
        for e, f in edges:
            depth[e.key] = lanes * _max_held(delivered[e.producer], process, f, lanes, n)
        delivered[node.name] = process + stencil_latency(node.stencil, lat) + lat.unit
    first = {name: int(t[0]) for name, t in delivered.items()}
    return first, depth


def _max_held(produced_at: Ints, process: Ints, f: int, lanes: int, n: int) -> int:
    """The most vectors ever delivered on a channel and not yet absorbed by the consumer's window."""
    nv = len(process)
    q = np.arange(nv, dtype=np.int64)
    absorbed_upto = np.clip((q + 1) * lanes - 1 + max(0, f), 0, n - 1) // lanes  # after processing q
    horizon = int(max(produced_at[-1], process[-1])) + 2
    t = np.arange(horizon, dtype=np.int64)
    produced = np.searchsorted(produced_at, t, side="right")
    done = np.searchsorted(process, t, side="right") - 1  # last vector processed by t (-1: none)
    absorbed = np.where(
        done >= 0, absorbed_upto[np.maximum(done, 0)] + 1, np.minimum(produced, absorbed_upto[0] + 1)
    )
    return int(np.max(np.maximum(produced - absorbed, 0)))
