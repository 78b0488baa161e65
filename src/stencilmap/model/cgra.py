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

from stencilmap.analysis.ops import is_constant, stencil_ops
from stencilmap.program.expr import Binary, Expr, walk
from stencilmap.program.ir import Program, Stencil


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
