"""SODA reuse buffers shared per producer (SODA §3.2–3.3), placed by an integer-programming schedule.

SODA stores every element once and keeps it on chip until its last use (§3.3.2): a field read by several
stencils gets one reuse buffer over the union of their accesses, not one buffer per reader. The readers do
not start together — a stencil waits for its slowest input (``timing``) — so reader v of producer u reads
u's stream Δ_uv = s_v − t_u cycles after u delivered it (s_v: v's start, t_u: u's first result, both in
cycles). Relative to the least-lagged reader (lag 0), reader v's offset a sits at chain position

    z = a − lag_v · k,        lag_v = Δ_uv − min_w Δ_uw    (beats)

so a late reader reads deeper down the same chain instead of through a delay line of its own. The
positions {z + j : j < k} (SODA §3.2: ∪_l {l + a^(s)}) split by residue mod k into k reuse chains of taps,
consecutive taps z_lo < z_hi joined by a segment of (z_hi − z_lo)/k beats (a register when 1, else a
FIFO): a chain over [lo, hi] stores (hi − lo)/k + 1 elements, the buffer D_r + k − 1 of the shifted
union (§3.2). A tap emits to readers of one lag; where two readers of different lags need the same
position (rare), each gets a tap there (``duplicates``: one extra element each). The chain is fed through
a delay of min_v (Δ_uv − ρ_uv) beats (ρ: the reach, ``timing``; what the least-delayed reader needs).

The starts are chosen as sodac chooses them, exactly, by an integer program (``schedule``): minimise the
storage Σ_u max_v (k·Δ_uv − a_min,uv) — per producer, from the newest element to the oldest one read:
reuse buffer plus delay, up to rounding to whole beats — subject to the data dependencies
s_v ≥ t_u + ρ_uv on every edge and t_v ≤ L (no node's first result later than the as-soon-as-possible
latency L, so the pipeline's latency is unchanged); among optimal schedules, the earliest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from stencilmap.analysis.dag import PassGraph
from stencilmap.analysis.timing import PipelineTiming
from stencilmap.analysis.windows import linear_offsets
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program


@dataclass(frozen=True, slots=True)
class Tap:
    """A chain position ``z`` read by the readers of lag ``lag``: at their firing n it holds the element
    at relative address n·k + ``x`` of their own frame, x = z + lag·k (what the tap module needs)."""

    z: int
    lag: int
    k: int

    @property
    def x(self) -> int:
        return self.z + self.lag * self.k


@dataclass(frozen=True, slots=True)
class SharedChain:
    """One reuse chain: its taps by position, ascending (at one position the later reader's tap lower:
    the earlier reader, which the later one may wait for, is never held up by it)."""

    residue: int
    taps: tuple[Tap, ...]
    k: int
    vectors: int  # V: elements of the lane (one tile): no segment ever holds more

    @property
    def segments(self) -> tuple[tuple[Tap, Tap, int], ...]:
        """(lower, upper, beats) between consecutive taps, (z_hi − z_lo)/k but at most V (a chain carries
        V elements of its lane, so a longer segment would never fill); 0 between taps at one position."""
        return tuple((lo, hi, min((hi.z - lo.z) // self.k, self.vectors)) for lo, hi in pairwise(self.taps))

    @property
    def size(self) -> int:
        """Elements stored: one per tap plus what each FIFO holds beyond its lower tap."""
        return len(self.taps) + sum(max(0, d - 1) for _, _, d in self.segments)


@dataclass(frozen=True, slots=True)
class Reader:
    """A stencil node reading producer ``producer`` as ``field`` at linear ``offsets``, ``lag`` beats deep."""

    consumer: str
    field: str
    offsets: tuple[int, ...]
    lag: int
    delay: int  # Δ_uv − ρ_uv: beats this reader could wait in front of the chain


@dataclass(frozen=True, slots=True)
class SharedBuffer:
    """The one reuse buffer of a producer node: its readers, chains and front delay (beats)."""

    producer: str
    k: int
    readers: tuple[Reader, ...]
    chains: tuple[SharedChain, ...]

    @property
    def positions(self) -> tuple[int, ...]:
        """The shifted union {a − lag·k} of the readers' offsets, ascending."""
        return tuple(sorted({a - r.lag * self.k for r in self.readers for a in r.offsets}))

    @property
    def size(self) -> int:
        """Reuse storage in elements: D_r + k − 1 over ``positions`` plus one per duplicate tap (less
        where a gap between readers exceeds the whole stream, on tiny grids)."""
        return sum(c.size for c in self.chains)

    @property
    def duplicates(self) -> int:
        return sum(len(c.taps) - len({t.z for t in c.taps}) for c in self.chains)

    @property
    def delay(self) -> int:
        """Beats of delay in front of the chains: what the least-delayed reader can wait."""
        return min(r.delay for r in self.readers)

    def tap(self, reader: Reader, x: int) -> Tap:
        """The tap serving ``reader`` its relative address ``x`` (offset + lane)."""
        return Tap(x - reader.lag * self.k, reader.lag, self.k)


def shared_buffers(
    program: Program,
    graph: PassGraph,
    timing: PipelineTiming,
    shape: tuple[int, ...],
    latency_free: bool = False,
) -> dict[str, SharedBuffer]:
    """The shared reuse buffer of every producer node with readers in ``graph``, by producer name.

    ``timing``: the as-soon-as-possible timing of ``graph`` with k lanes over the stream ``shape``.
    ``latency_free``: schedule as the SODA paper does, in stream offsets only (every PE latency 0).
    """
    names = {n.name for n in graph.nodes}
    reads = []
    for t in timing.edges:
        stencil = graph.node(t.consumer).stencil if t.consumer in names else None
        if stencil is not None:
            offsets = linear_offsets(program, stencil, t.field, shape)
            reads.append(Read(t.producer, t.consumer, t.field, offsets, t.reach_cycles))
    compute = {n: 0 if latency_free else c for n, c in timing.compute.items()}
    starts = schedule(tuple(reads), compute, timing.lanes)
    out: dict[str, SharedBuffer] = {}
    for producer in dict.fromkeys(r.producer for r in reads):
        mine = [r for r in reads if r.producer == producer]
        lags = {r.consumer: starts[r.consumer] - starts[producer] - compute[producer] for r in mine}
        least = min(lags.values())
        readers = tuple(
            Reader(
                r.consumer,
                r.field,
                r.offsets,
                lags[r.consumer] - least,
                min(lags[r.consumer] - r.reach, timing.vectors - 1 - r.reach),
            )
            for r in mine
        )
        out[producer] = _buffer(producer, timing.lanes, timing.vectors, readers)
    return out


@dataclass(frozen=True, slots=True)
class Read:
    """One edge of the DAG as the schedule sees it: linear offsets and reach ρ (beats)."""

    producer: str
    consumer: str
    field: str
    offsets: tuple[int, ...]
    reach: int


def _buffer(producer: str, k: int, vectors: int, readers: tuple[Reader, ...]) -> SharedBuffer:
    # SODA §3.2: the k PEs of a reader need a + j, j < k; positions split by residue into k chains
    taps = {Tap(a + j - r.lag * k, r.lag, k) for r in readers for a in r.offsets for j in range(k)}
    chains = tuple(
        SharedChain(
            res, tuple(sorted((t for t in taps if t.z % k == res), key=lambda t: (t.z, -t.lag))), k, vectors
        )
        for res in range(k)
    )
    return SharedBuffer(producer, k, readers, chains)


def asap(reads: tuple[Read, ...], compute: Mapping[str, int]) -> dict[str, int]:
    """Earliest start of every node (reads in topological order of their consumers; inputs: 0)."""
    start: dict[str, int] = {}
    for r in reads:
        ready = start.setdefault(r.producer, 0) + compute[r.producer] + r.reach
        start[r.consumer] = max(start.get(r.consumer, 0), ready)
    return start


def schedule(reads: tuple[Read, ...], compute: Mapping[str, int], k: int) -> dict[str, int]:
    """Start cycle of every node (inputs included: a reader may start late), minimising the shared
    buffers' storage (see the module docstring).

    Variables: s_v per node (integer), M_u per producer (its storage bound). Constraints, with
    t_u = s_u + λ_u: s_v − t_u ≥ ρ_uv; t_v ≤ L; M_u ≥ k·(s_v − t_u) − a_min,uv. Solved exactly by a
    mixed-integer solver (HiGHS through ``scipy.optimize.milp``): first the least Σ M_u, then among
    those schedules the least Σ s_v (the earliest).

    Where the as-soon-as-possible schedule already gives every read its least lag (s_v − t_u = ρ_uv:
    every chain, every node with one producer), it is the answer without a solve: each M_u is then at its
    lower bound max_v (k·ρ_uv − a_min,uv), and every feasible schedule is componentwise no earlier, so it is
    the one earliest optimum. Explore asks for the same problem many times (the design points of one stream
    shape), so solutions are also kept per (reads, compute, k); ``solve_count`` counts the solves.
    """
    return dict(_schedule(reads, tuple(sorted(compute.items())), k))


@lru_cache(maxsize=4096)
def _schedule(
    reads: tuple[Read, ...], compute_items: tuple[tuple[str, int], ...], k: int
) -> tuple[tuple[str, int], ...]:
    compute = dict(compute_items)
    early = asap(reads, compute)
    nodes = list(early)
    if all(early[r.consumer] == early[r.producer] + compute[r.producer] + r.reach for r in reads):
        return tuple(early.items())  # least lags and earliest at once (see ``schedule``); no reads too
    latency = max(early[v] + compute[v] for v in nodes)
    producers = list(dict.fromkeys(r.producer for r in reads))
    col = {v: i for i, v in enumerate(nodes)}
    mcol = {u: len(nodes) + i for i, u in enumerate(producers)}
    n = len(nodes) + len(producers)
    rows, lows = [], []
    for r in reads:
        lam = compute[r.producer]
        dep, store = np.zeros(n), np.zeros(n)
        dep[col[r.consumer]], dep[col[r.producer]] = 1, -1
        store[mcol[r.producer]], store[col[r.consumer]], store[col[r.producer]] = 1, -k, k
        rows += [dep, store]
        lows += [r.reach + lam, -k * lam - min(r.offsets)]
    bounds = Bounds(
        np.array([0.0] * len(nodes) + [-np.inf] * len(producers)),
        np.array([float(latency - compute[v]) for v in nodes] + [np.inf] * len(producers)),
    )
    integral = np.array([1] * len(nodes) + [0] * len(producers))
    storage = np.array([0.0] * len(nodes) + [1.0] * len(producers))
    feasible = LinearConstraint(np.array(rows), np.array(lows), np.inf)
    best = _solve(storage, [feasible], integral, bounds)
    # among the schedules of least storage, the earliest (lexicographic, exact: no weights mixed)
    least = LinearConstraint(storage[None, :], -np.inf, round(float(storage @ best)))
    earliest = np.array([1.0] * len(nodes) + [0.0] * len(producers))
    x = _solve(earliest, [feasible, least], integral, bounds)
    return tuple((v, round(float(x[col[v]]))) for v in nodes)


_SOLVES = [0]


def solve_count() -> int:
    """Integer programs solved in this process (two per schedule neither cached nor as soon as possible)."""
    return _SOLVES[0]


def _solve(cost: Any, constraints: list[LinearConstraint], integral: Any, bounds: Bounds) -> Any:
    _SOLVES[0] += 1
    res = milp(cost, constraints=constraints, integrality=integral, bounds=bounds)
    if res.x is None:  # the as-soon-as-possible schedule is feasible: only the solver can fail here
        raise StencilmapError(f"the shared reuse buffers' schedule failed: {res.message}")
    return res.x
