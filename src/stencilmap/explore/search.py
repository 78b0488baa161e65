"""The search: every candidate's time at once, then branch-and-bound on the resources (SODA §4.5).

1. **Evaluate.** For each builder and lanes value the predicted time of every (q, tile) point
   (``evaluate.lane_times``): vectorized, no design built.
2. **Branch.** A branch is one (builder, lanes, tile): its points differ only in q. Its bound is the
   fastest time of its points whose PEs alone fit the device (``pe_bound``: R_AUX + q·P·Σ R_CP, SODA
   eq. 5 without the forwarding term) — a relaxation, so no feasible point of the branch does better.
3. **Bound.** Branches are taken fastest bound first. A branch whose bound cannot beat the ``top``-th best
   feasible point found so far is pruned: its resources are never computed. For the others the resource
   model (``resources.ResourceTable``: affine in q, SODA eq. 5 / OpenCL eq. 10) decides which q fit the
   device (SODA §4.5: "q is bounded by the constraint in Formula 5"), and the fitting points compete
   for the top list.

4. **Refine.** Every tiled (SODA) candidate of the top list grows its tile to the largest that fits
   (``refine.refine_tiles``, SODA §4.5's branch-and-bound over T): tiles off the grid's power-of-two steps.

``ExploreConfig.exhaustive`` checks every branch (the OpenCL paper's exhaustive search, §4).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from math import floor, isfinite
from time import perf_counter
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.design.common import live_graph
from stencilmap.device.catalog import Cost
from stencilmap.errors import StencilmapError
from stencilmap.explore.evaluate import LaneTimes, lane_times
from stencilmap.explore.refine import refine_tiles
from stencilmap.explore.report import Candidate, Cloud, ExploreResult
from stencilmap.explore.resources import ResourceTable
from stencilmap.explore.space import ExploreConfig, Space, design_space
from stencilmap.explore.tables import ArchTables, arch_tables
from stencilmap.explore.winner import check_winner
from stencilmap.model.resources import pe_cost

Array = npt.NDArray[Any]
#: ``progress(what, done, total)``: called as the search advances
Progress = Callable[[str, int, int], None]
#: the design-space picture keeps at most this many points
CLOUD_POINTS = 40_000


@dataclass(frozen=True)
class _Branch:
    tables: ArchTables
    times: LaneTimes
    lane: int
    tile: int
    bound: float

    @property
    def seconds(self) -> Array:
        col: Array = self.times.seconds[:, self.tile]
        return col


def explore(
    config: ExploreConfig, progress: Progress | None = None, notify: Callable[[str], None] | None = None
) -> ExploreResult:
    """Search the space of ``config`` and simulate its winner (unless ``config.simulate`` is off);
    ``notify(line)`` is told before the simulator compiles anything."""
    report = progress if progress is not None else _quiet
    space = design_space(config)
    start = perf_counter()
    branches, notes = _evaluate(space, report)
    search = _Search(space, config, report)
    for branch in sorted(branches, key=lambda b: b.bound):
        search.visit(branch)
    top = refine_tiles(space, search.top(), search.resources)
    elapsed = perf_counter() - start
    winner = None
    if config.simulate and top:
        winner = check_winner(space, top[0], config.sim_points, report, notify)
    return ExploreResult(
        space=space,
        top=top,
        space_size=space.size,
        points_evaluated=sum(b.seconds.size for b in branches),
        points_checked=search.checked,
        points_pruned=search.pruned,
        points_feasible=search.feasible,
        designs_built=sum(t.builds for t in search.resources.values()),
        seconds=elapsed,
        cloud=search.cloud(),
        winner=winner,
        notes=(*notes, *search.notes),
    )


def _quiet(what: str, done: int, total: int) -> None:
    return None


def _evaluate(space: Space, report: Progress) -> tuple[list[_Branch], list[str]]:
    """Step 1: the time of every point; one branch per (builder, lanes, tile)."""
    branches: list[_Branch] = []
    notes: list[str] = []
    done = 0
    for arch in space.archs:
        try:
            tables = arch_tables(space, arch)
        except StencilmapError as exc:
            notes.append(f"{arch}: not explored: {exc.message}")
            continue
        for lane in range(len(tables.lanes)):
            times = lane_times(space, tables, lane)
            q_fit = pe_bound(space, int(tables.lanes[lane]))
            for tile in range(len(tables.tiles)):
                bound = float(times.seconds[:q_fit, tile].min()) if q_fit else float("inf")
                branches.append(_Branch(tables, times, lane, tile, bound))
            done += times.seconds.size
            report("evaluating", done, space.size)
    return branches, notes


def pe_bound(space: Space, lanes: int) -> int:
    """The largest q whose PEs alone fit: every design holds P lanes of every stencil per stage plus the
    auxiliary modules, R ≥ R_AUX + q·P·Σ R_CP (SODA eq. 5 without the forwarding term)."""
    model = space.device.resource_model
    assert model is not None
    per_stage = Cost()
    for node in live_graph(space.program).stencils:
        assert node.stencil is not None
        per_stage = per_stage + pe_cost(node.stencil, space.device).scaled(lanes)
    q = space.q_max
    for name, avail in space.device.resources:
        room = model.limit(name) * avail - model.base[name]
        if per_stage[name] > 0:
            q = min(q, max(0, floor(room / per_stage[name])))
        elif room < 0:
            q = 0
    return q


class _Search:
    """Steps 2–3: branches fastest bound first, pruned against the ``top``-th best feasible point."""

    def __init__(self, space: Space, config: ExploreConfig, report: Progress) -> None:
        self.space, self.config, self.report = space, config, report
        self.resources: dict[str, ResourceTable] = {}
        #: max-heap of the best by (-seconds, -utilization): on a tie (equal to 6 digits) the design using
        #: less of the chip ranks first (issue 25)
        self.heap: list[tuple[float, float, int, Candidate]] = []
        self.checked = self.pruned = self.feasible = 0
        self.notes: list[str] = []
        self.failed: set[tuple[str, int]] = set()
        self.parts: list[tuple[Array, Array, int, Array]] = []
        self.count = 0

    @property
    def worst(self) -> float:
        """The time a point must beat to enter the top list (inf while it is not full)."""
        if len(self.heap) < self.config.top:
            return float("inf")
        return -self.heap[0][0]

    def visit(self, b: _Branch) -> None:
        n = b.seconds.size
        lanes = int(b.tables.lanes[b.lane])
        hopeless = not isfinite(b.bound) or (b.tables.arch, lanes) in self.failed
        if hopeless or (not self.config.exhaustive and _tie(b.bound) > self.worst):
            self.pruned += n
        else:
            self._check(b, lanes)
        self.report("bounding", self.checked + self.pruned, self.space.size)

    def _check(self, b: _Branch, lanes: int) -> None:
        arch, tile = b.tables.arch, b.tables.tiles[b.tile]
        table = self.resources.setdefault(
            arch,
            ResourceTable(
                arch,
                self.space.program,
                self.space.device,
                self.space.q_max,
                device_ref=self.space.builder_device,
            ),
        )
        try:
            one, delta = table.affine(lanes, tile)
        except StencilmapError as exc:
            self.failed.add((arch, lanes))
            self.notes.append(f"{arch} with {lanes} lanes: not built: {exc.message}")
            self.pruned += b.seconds.size
            return
        stages = np.arange(self.space.q_max)[:, None]  # q − 1: the stages beyond the first
        avail = table.available
        util = (one[None, :] + stages * delta[None, :]) / np.where(avail > 0, avail, np.inf)
        fits = (util <= table.limits[None, :]).all(axis=1) & b.tables.valid[:, b.tile]
        self.checked += fits.size
        self.feasible += int(fits.sum())
        times, column, clocks = self._clocked(b, util, table)
        seconds: Array = times.seconds[:, column]
        self.parts.append((seconds, util.max(axis=1), self.space.archs.index(arch), fits))
        order = np.flatnonzero(fits)
        for i in order[np.argsort(seconds[order], kind="stable")][: self.config.top]:
            if _tie(float(seconds[i])) > self.worst:
                break
            self._offer(self._candidate(b, int(i), util[i], table, times, column, float(clocks[i])))

    def _clocked(self, b: _Branch, util: Array, table: ResourceTable) -> tuple[LaneTimes, int, Array]:
        """The branch's times at each q's clock: the device's clock model at the point's utilization of
        its logic resource (OpenCL §5.1, Fig. 10), else the one explored clock. Returns the times, the
        column of the branch's tile in them, and the clock of every q."""
        cm = self.space.clock_model
        if cm is None:
            return b.times, b.tile, np.full(self.space.q_max, self.space.clock_mhz)
        clocks = cm.mhz_array(util[:, table.names.index(cm.resource)])
        return lane_times(self.space, b.tables, b.lane, clocks, b.tile), 0, clocks

    def _offer(self, c: Candidate) -> None:
        self.count += 1
        item = (-_tie(c.predicted_seconds), -max((u for _, u in c.utilization), default=0.0), -self.count, c)
        if len(self.heap) < self.config.top:
            heapq.heappush(self.heap, item)
        else:
            heapq.heappushpop(self.heap, item)

    def _candidate(
        self,
        b: _Branch,
        i: int,
        util: Array,
        table: ResourceTable,
        times: LaneTimes,
        column: int,
        clock: float,
    ) -> Candidate:
        t = b.tables
        tile = t.tiles[b.tile]
        untiled = tile == self.space.shape[1:]
        return Candidate(
            arch=t.arch,
            lanes=int(t.lanes[b.lane]),
            iterate=i + 1,
            tile=None if untiled else tile,
            tiles=int(t.tile_count[i, b.tile]),
            cycles_per_launch=float(times.cycles[i, column]),
            launches=int(times.launches[i, 0]),
            predicted_seconds=float(times.seconds[i, column]),
            scenario="bandwidth" if bool(times.bandwidth_bound[i, column]) else "compute",
            utilization=tuple((n, float(u)) for n, u in zip(table.names, util, strict=True)),
            limits=tuple((n, float(x)) for n, x in zip(table.names, table.limits, strict=True)),
            clock_mhz=clock,
        )

    def top(self) -> tuple[Candidate, ...]:
        return tuple(item[-1] for item in sorted(self.heap, key=lambda item: (-item[0], -item[1], -item[2])))

    def cloud(self) -> Cloud:
        if not self.parts:
            empty = np.zeros(0)
            return Cloud(empty, empty, empty.astype(np.int64), empty.astype(bool))
        seconds = np.concatenate([p[0] for p in self.parts])
        util = np.concatenate([p[1] for p in self.parts])
        arch = np.concatenate([np.full(p[0].size, p[2]) for p in self.parts])
        fits = np.concatenate([p[3] for p in self.parts])
        keep = np.isfinite(seconds)
        step = max(1, int(keep.sum()) // CLOUD_POINTS)
        idx = np.flatnonzero(keep)[::step]
        return Cloud(seconds[idx], util[idx], arch[idx], fits[idx])


def _tie(seconds: float) -> float:
    """Predicted seconds as the ranking compares them: equal to 6 significant digits is a tie."""
    return float(f"{seconds:.6g}") if isfinite(seconds) else seconds
