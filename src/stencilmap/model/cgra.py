"""The triggered-instruction CGRA's worker model and roofline choice of workers (CGRA paper §III, §VI).

A compute worker produces one output point per cycle from a chain of single-instruction PEs: one MUL
and a fused MAC per further product (§III-A, Fig. 5: 3 points → 1 MUL + 2 MACs; §VI: the 17-point
stencil's worker is 16 MACs + 1 MUL, 33 flops per cycle). In general a worker needs one PE per
operation, less one for every addition that absorbs a product into a MAC (``mac_fusions``).

§VI picks the number of workers from the roofline: the bandwidth allows intensity × bandwidth GFLOPS;
the fabric fits ⌊MACs / PEs per worker⌋ workers; the fewest workers whose flops reach the attainable
performance suffice (1-D, r = 8: 6 workers, 237 GFLOPS ≥ 206; 2-D, r = 12: 5 workers, 582 ≥ 559).

§VI's intensity counts the flops of the valid output points only (see ``workload``).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import TYPE_CHECKING

from stencilmap.analysis.ops import is_constant, stencil_ops
from stencilmap.design.cgra.traffic import first_touches, line_fills, load_cache, reads_of, ring_of, stores_of
from stencilmap.device.catalog import Device
from stencilmap.program.dtypes import bits
from stencilmap.program.expr import Binary, Expr, walk
from stencilmap.program.ir import Program, Stencil

if TYPE_CHECKING:
    from stencilmap.design.cgra.mapping import CgraMapping, Fabric
    from stencilmap.design.cgra.plan import Plan
    from stencilmap.design.registry import BuildConfig

__all__ = [
    "CgraPrediction",
    "Workers",
    "choose_workers",
    "drain",
    "mac_fusions",
    "pes_per_worker",
    "predict",
    "reads_of",
    "ring_of",
    "roofline_workers",
    "roofline_workers_of",
    "stencil_pes",
    "stores_of",
]


@dataclass(frozen=True, slots=True)
class Workers:
    """CGRA §VI's choice: ``workers`` of ``pes_per_worker`` PEs, each ``ops_per_cycle`` flops a cycle."""

    pes_per_worker: int
    ops_per_cycle: int
    max_workers: int  # ⌊MACs / PEs per worker⌋
    needed: int  # ⌈attainable / (ops per cycle × f)⌉
    workers: int  # min(needed, max_workers)
    gops: float  # workers × ops per cycle × f

    def to_json(self) -> dict[str, float | int]:
        return {
            "workers": self.workers,
            "pes_per_worker": self.pes_per_worker,
            "ops_per_cycle": self.ops_per_cycle,
            "max_workers": self.max_workers,
            "needed": self.needed,
            "gops": round(self.gops, 6),
        }


def mac_fusions(e: Expr) -> int:
    """Additions (or subtractions) with a non-constant product operand: each becomes one MAC PE with
    that product (every product has one parent, so each is fused at most once)."""
    count = 0
    for node in walk(e):
        if isinstance(node, Binary) and node.op in ("+", "-") and not is_constant(node):
            products = (c for c in (node.lhs, node.rhs) if isinstance(c, Binary) and c.op == "*")
            if any(not is_constant(p) for p in products):
                count += 1
    return count


def stencil_pes(stencil: Stencil) -> int:
    """PEs of one compute worker of ``stencil``: its operations less the MAC fusions."""
    fused = mac_fusions(stencil.expr) + sum(mac_fusions(t.expr) for t in stencil.temps)
    return stencil_ops(stencil).total - fused


def pes_per_worker(program: Program) -> int:
    """PEs a worker needs to compute one point of every stencil of one pass (§III: a worker per stencil)."""
    return sum(stencil_pes(s) for s in program.stencils)


def choose_workers(
    attainable_gops: float, ops_per_cycle: int, pes: int, macs: int, clock_ghz: float, stages: int = 1
) -> Workers:
    """The fewest workers whose flops reach ``attainable_gops``, within the MACs (CGRA §VI).

    ``stages``: layers of workers chained on chip for time steps (§IV), each needing its own PEs.
    """
    per_worker = ops_per_cycle * clock_ghz * stages
    needed = max(1, ceil(attainable_gops / per_worker - 1e-9)) if per_worker > 0 else 1
    max_workers = macs // (pes * stages) if pes > 0 else needed
    workers = min(needed, max_workers)
    return Workers(pes, ops_per_cycle, max_workers, needed, workers, workers * per_worker)


def roofline_workers_of(program: Program, plan: Plan, fab: Fabric) -> int:
    """§VI's choice for a CGRA plan (``design.cgra.plan``): the fewest workers whose flops reach the roofline
    of ``plan.q`` chained steps, within the fabric's MACs (the builder then fits them to the PE grid)."""
    from stencilmap.design.common import concrete_shape
    from stencilmap.model.roofline import roofline_of

    q, pes = plan.q, plan.arith_per_worker()
    ops = sum(s.flops for s in plan.stages)
    attainable = roofline_of(program, concrete_shape(program), fab.device, q).attainable_gops
    return choose_workers(attainable, ops, pes, fab.macs, fab.device.clock_mhz / 1e3, q).workers


def roofline_workers(program: Program, config: BuildConfig) -> int:
    """``roofline_workers_of`` the plan of ``program`` on the device of ``config``: the workers a caller
    passes to ``design.cgra.map_cgra`` (jobs and explore call the model, then the builder)."""
    from stencilmap.design.cgra.mapping import fabric
    from stencilmap.design.cgra.plan import make_plan

    return roofline_workers_of(program, make_plan(program), fabric(config.device))


# ------------------------------------------------------------------------ a mapped design's cycles


@dataclass(frozen=True, slots=True)
class CgraPrediction:
    """Cycles of a mapped design (``design.cgra``): the slowest of the readers (one load a cycle each, and
    the line fills of the loads that miss the device's cache), the writers, and the memory (loads and stores
    share the bandwidth), plus the pipeline's depth."""

    reader_cycles: int  # the busiest reader's loads and its share of its field's line fills
    writer_cycles: int  # the busiest writer's stores
    memory_cycles: float  # all loads and stores at the device's bytes per cycle
    latency: int
    bound: str  # which of the three bounds

    @property
    def cycles(self) -> int:
        return ceil(max(self.reader_cycles, self.writer_cycles, self.memory_cycles)) + self.latency


def _depth(m: CgraMapping) -> int:
    """Cycles from a point's load to its output's store: per layer a filter and the PEs on the longest
    path (the last MAC of a chain: its earlier products wait on their way)."""
    pe = max(
        1, *(p.latency for p in m.pes if p.op not in ("AGEN", "LOAD", "FILTER", "STORE", "COUNT", "DONE"))
    )
    if m.linear is not None:
        per_layer = 1 + pe + (pe if m.linear.constant else 0)
    else:
        per_layer = sum(1 + pe * s.flops for s in m.stages) // max(1, len(m.stages)) + 1
    return 2 + m.mem_latency + m.layers * per_layer + 3  # AGEN, load, deliver; layers; store, count, done


def drain(m: CgraMapping) -> float:
    """Cycles the outputs trail the readers' last load: a read beyond the point (a positive offset) holds a
    stage back by that many stream places, and where the boundary is not ``shrink`` the stage still has
    those points to compute after its source's last one — one a cycle per worker, so chained stages
    (a time-step chain, §IV-like) add up their lags. Shrink reads cancel: their output region ends as
    far before the grid's end."""
    from stencilmap.design.cgra.plan import places
    from stencilmap.design.cgra.regions import source

    width = max((b - a for spans in m.spans for a, b in spans), default=1)
    feed = {f: m.stages[k].name for f, k in _feeds(m)}
    lag: dict[tuple[int, int], float] = {}
    for t in range(m.layers):
        for k, st in enumerate(m.stages):
            worst = 0.0
            for f, off, kind in st.reads:
                src = source(m.stages, feed, t, f)
                before = 0.0 if src.layer < 0 else lag[(src.layer, src.stage)]
                filled = kind != "shrink" or (m.preserve and 0 <= src.layer < t)  # preserve: the ring
                ahead = max(0.0, places(off, width, m.shape[1], m.workers)) if filled else 0.0
                worst = max(worst, before + ahead)
            lag[(t, k)] = worst
    return max((lag[(m.layers - 1, k)] for k in m.outputs()), default=0.0)


def _feeds(m: CgraMapping) -> list[tuple[str, int]]:
    """(input, output stage) pairs of an iterated program (§IV): output i feeds input i."""
    if m.layers < 2:
        return []
    outs = [k for k, _ in enumerate(m.stages) if m.stages[k].output]
    return list(zip((f for f, _, _ in m.inputs), outs, strict=False))


def predict(m: CgraMapping, device: Device, clock_mhz: float | None = None) -> CgraPrediction:
    """The cycles of ``m`` on ``device`` at ``clock_mhz`` (default: the device's; see ``CgraPrediction``)."""
    w = m.workers
    reads = [(reads_of(m, i, r), bits(m.inputs[i][1]) // 8) for i in range(len(m.inputs)) for r in range(w)]
    stores = [stores_of(m, k, c) for k in m.outputs() for c in range(w)]
    stores += [n for n in (ring_of(m, k, c) for k in m.outputs() for c in range(w)) if n]
    per_cycle = device.practical_bandwidth_gbs * 1e9 / ((clock_mhz or device.clock_mhz) * 1e6)
    memory = (sum(n * b for n, b in reads) + sum(stores) * bits(m.dtype) // 8) / per_cycle
    # the first loads wait the memory's latency before any store competes, the last stores drain after the
    # last load: those two stretches move at most w points a cycle, not the whole bandwidth
    cache = load_cache(device)
    fills = [line_fills(m, i, cache) * cache.fill_cycles if cache else 0 for i in range(len(m.inputs))]
    loads = sum(n for n, _ in reads)
    pace = loads / (loads + sum(fills)) if loads else 1.0  # a reader's loads a cycle, its line fills taken
    share = min(1.0, pace * sum(b for _, b in reads) / per_cycle)
    memory += 2 * m.mem_latency * (1.0 - share)
    busiest = max((n for n, _ in reads), default=0)
    if cache is not None:  # CGRA §VIII: a miss holds its reader's port for the line's fill
        # a line is missed once, by the first of the field's w readers to reach it: the one running ahead,
        # so the fills fall where there is slack and the field's readers share its loads and fills
        # — after a start in step, where the misses fall on the readers that reach each line's first column:
        # where those are a few of the w (6 readers, 8 words a line: readers 0, 2, 4), they fall behind
        # until the others, at most a response queue and a PE queue ahead, take their share
        for i in range(len(m.inputs)):
            first = first_touches(m, i, cache)
            uneven = (max(first) - sum(first) / w) * cache.fill_cycles
            lag = min(uneven, m.mem_latency + 4 + m.queue_entries)
            busiest = max(busiest, ceil((sum(reads_of(m, i, r) for r in range(w)) + fills[i]) / w + lag))
    bounds = {"readers": busiest, "writers": max(stores, default=0), "memory": memory}
    bound = max(bounds, key=lambda k: bounds[k])
    return CgraPrediction(busiest, max(stores, default=0), memory, _depth(m) + ceil(drain(m)), bound)
