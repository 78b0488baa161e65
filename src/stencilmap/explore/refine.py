"""SODA tile sizes beyond the grid: each tiled candidate's tile grown to the largest that still fits.

SODA §4.5: "the bound of H is monotonically increasing with respect to T in each dimension d for every
given k and q, [so] T_0, …, T_{m−2} can be efficiently searched via branch-and-bound", and §4.2: "the tile
size is only limited by the on-chip storage size". The grid of ``space.tile_candidates`` holds multiples of
a power-of-two step; Table 1's tiles are not such multiples (16,392; 181×182). So after the search every
top candidate of a tiled builder is refined, its (k, q) kept: every inner axis grows by the same d ≥ 0
(clamped to the grid), d the largest for which the resource constraint (SODA eq. 5, ``ResourceTable``:
R_AUX + k·q·R_CP + q·R_FW(k, T) within the device's caps) still holds — bisection, R_FW being
non-decreasing in T (the reuse FIFOs' RAM blocks are a step function of their depth, §4.3) — and then
shrinks, axis by axis, to the smallest tile that cuts the grid into as many tiles (``balanced``: on a
finite grid the last tile would otherwise stream past the edge; SODA's input is "sufficiently large",
§4.2, where the two agree). The grown tile
replaces the candidate when its predicted time (the explorer's model on the explored grid, at the clock
of its utilization) is no worse, to six digits; on a tie the larger tile wins, as H of eq. 2 says.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.analysis.halos import program_halo
from stencilmap.arch import arch as arch_of
from stencilmap.design.common import with_iterate
from stencilmap.explore.evaluate import lane_times
from stencilmap.explore.report import Candidate
from stencilmap.explore.resources import ResourceTable
from stencilmap.explore.space import Space
from stencilmap.explore.tables import arch_tables

Array = npt.NDArray[Any]


def refine_tiles(
    space: Space, top: tuple[Candidate, ...], tables: dict[str, ResourceTable]
) -> tuple[Candidate, ...]:
    """``top`` with every tiled candidate's tile grown (module docstring), re-ranked and without repeats."""
    out: dict[tuple[str, int, int, tuple[int, ...] | None], Candidate] = {}
    for c in top:
        table = tables.get(c.arch)
        r = refine_tile(space, c, table) if table is not None else c
        key = (r.arch, r.lanes, r.iterate, r.tile)
        if key not in out:
            out[key] = r
    return tuple(sorted(out.values(), key=_rank))


def _rank(c: Candidate) -> tuple[float, float]:
    return (_tie(c.predicted_seconds), max((u for _, u in c.utilization), default=0.0))


def refine_tile(space: Space, c: Candidate, table: ResourceTable) -> Candidate:
    """``c`` with its tile grown to the largest that fits (module docstring), or ``c`` as it is."""
    start = c.tile
    if not arch_of(c.arch).tiled or start is None:
        return c
    full = space.shape[1:]
    room = max(n - t for t, n in zip(start, full, strict=True))

    def grown(d: int) -> tuple[int, ...]:
        return tuple(min(n, t + d) for t, n in zip(start, full, strict=True))

    lo, hi = 0, room  # fits(grown(lo)) holds: c fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _utilization(table, c.lanes, c.iterate, grown(mid)) is not None:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return c
    tile = balanced(space, grown(lo), c.iterate)
    util = _utilization(table, c.lanes, c.iterate, tile)
    assert util is not None
    better = _evaluate(space, c, tile, util, table)
    return better if better is not None and _tie(better.predicted_seconds) <= _tie(c.predicted_seconds) else c


def balanced(space: Space, tile: tuple[int, ...], q: int) -> tuple[int, ...]:
    """The smallest tile cutting every axis into as many tiles as ``tile`` does: an axis of n points in
    tiles of T overlapping by the halo H of q stages takes c = 1 + ⌈(n − T)/(T − H)⌉ of them
    (``tables.tile_counts``), and so does every T ≥ (n + (c − 1)·H)/c — the last tile then ends at the
    grid's edge instead of streaming past it, and the tile is no larger than ``tile`` (so it fits)."""
    out = []
    for a, (t, n) in enumerate(zip(tile, space.shape[1:], strict=True), start=1):
        halo = axis_halo(space, a, q)
        if n <= t or t <= halo:
            out.append(t)
            continue
        count = 1 + -(-(n - t) // (t - halo))
        out.append(min(t, -(-(n + (count - 1) * halo) // count)))
    return tuple(out)


def axis_halo(space: Space, axis: int, q: int) -> int:
    """H(q) of ``axis``: the halo of q chained stages, growing by the same amount with every stage."""
    h1 = program_halo(space.program)
    one = h1.low[axis] + h1.high[axis]
    if q == 1:
        return one
    h2 = program_halo(with_iterate(space.program, 2))
    return one + (q - 1) * (h2.low[axis] + h2.high[axis] - one)


def _utilization(table: ResourceTable, lanes: int, q: int, tile: tuple[int, ...]) -> Array | None:
    """used / available of every resource of the (lanes, q, tile) design, None when it does not fit."""
    one, delta = table.affine(lanes, tile)
    avail = table.available
    util: Array = (one + (q - 1) * delta) / np.where(avail > 0, avail, np.inf)
    return util if bool((util <= table.limits).all()) else None


def _evaluate(
    space: Space, c: Candidate, tile: tuple[int, ...], util: Array, table: ResourceTable
) -> Candidate | None:
    """The candidate of ``c``'s (k, q) with ``tile``, predicted as the search predicts (None: no tiling)."""
    untiled = tile == space.shape[1:]
    sub = replace(space, tiles=(space.shape[1:],) if untiled else (space.shape[1:], tile))
    tables = arch_tables(sub, c.arch)
    column = 0 if untiled else 1
    q = c.iterate
    if not bool(tables.valid[q - 1, column]):
        return None
    lane = [int(k) for k in tables.lanes].index(c.lanes)
    cm = space.clock_model
    clock = cm.mhz(float(util[table.names.index(cm.resource)])) if cm is not None else space.clock_mhz
    times = lane_times(sub, tables, lane, np.full(space.q_max, clock), column)
    return replace(
        c,
        tile=None if untiled else tile,
        tiles=int(tables.tile_count[q - 1, column]),
        cycles_per_launch=float(times.cycles[q - 1, 0]),
        launches=int(times.launches[q - 1, 0]),
        predicted_seconds=float(times.seconds[q - 1, 0]),
        scenario="bandwidth" if bool(times.bandwidth_bound[q - 1, 0]) else "compute",
        utilization=tuple((n, float(u)) for n, u in zip(table.names, util, strict=True)),
        clock_mhz=clock,
    )


def _tie(seconds: float) -> float:
    """As the search ranks: equal to six significant digits is a tie."""
    return float(f"{seconds:.6g}")
