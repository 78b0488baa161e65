"""``simulate --arch cgra --tiles n`` (CGRA paper §VIII-A): n CGRA tiles split the grid along its outermost
axis (``design.cgra.tiles``), each a whole fabric with its own workers and its own memory bandwidth, and
run side by side. Every tile is mapped and simulated — cycle by cycle, with values, by ``sim.cgra`` — on
its slab of the inputs (the tiles are independent: they share no queue and no memory port, so they are
simulated one after another, on as many threads as there are cores; the C loop releases the GIL); the
system's cycles are the slowest tile's, its outputs the tiles' bands stitched together, validated by the
caller against the whole grid's reference. Every tile is simulated: none stands for the others.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

import numpy as np

from stencilmap.design.cgra.mapping import CgraMapping, map_cgra
from stencilmap.design.cgra.tiles import Tile, band, input_slice, split_tiles, tile_program
from stencilmap.device.catalog import Device
from stencilmap.io import Array
from stencilmap.point import DesignPoint
from stencilmap.program.ir import Program
from stencilmap.sim.cgra import CgraRun, simulate_cgra

if TYPE_CHECKING:
    from stencilmap.model.cgra import CgraPrediction


@dataclass(frozen=True)
class TiledCgraRun(CgraRun):
    """The n tiles' run: the slowest tile's run (its ``mapping``, ``cycles``, ``peaks``, ``fires``) with the
    outputs stitched, traffic, firings and flops summed, and ``roofline_gops`` n tiles'."""

    tile_cycles: tuple[int, ...] = ()
    tile_rows: tuple[tuple[int, int], ...] = ()  # each tile's band [lo, hi) of the outermost axis
    predicted_tile_cycles: tuple[int, ...] = ()
    slowest_prediction: CgraPrediction | None = None  # the model's slowest tile (the system's cycles)

    def to_json(self) -> dict[str, object]:
        out = CgraRun.to_json(self)
        out["tiles"] = len(self.tile_cycles)
        out["tile_cycles"] = list(self.tile_cycles)
        out["predicted_tile_cycles"] = list(self.predicted_tile_cycles)
        return out


def tile_mappings(program: Program, point: DesignPoint, n: int) -> list[tuple[Tile, Program, CgraMapping]]:
    """Each tile, its program and its mapping: every tile the whole grid's §VI count of workers unless
    ``--workers`` (a band's own roofline, halos counted, would choose fewer) — as ``estimate --tiles``."""
    from stencilmap.model.cgra import roofline_workers, roofline_workers_of

    if point.workers is None and point.unroll is None:
        point = replace(point, workers=roofline_workers(program, point))
    point = replace(point, tiles=None)
    out = []
    for t in split_tiles(program, n):
        p = tile_program(program, t)
        out.append((t, p, map_cgra(p, point, roofline_workers_of)))
    return out


def simulate_tiles(
    program: Program,
    point: DesignPoint,
    values: Mapping[str, Array],
    device: Device,
    roofline_gops: float,
    max_cycles: int | None = None,
) -> TiledCgraRun:
    """Map, simulate and stitch the ``point.tiles`` tiles of the shape-bound ``program`` on ``values``
    (``roofline_gops``: one tile's roofline on the whole grid; the run's is n times it)."""
    from stencilmap.model.cgra import predict

    n = point.tiles or 1
    parts = tile_mappings(program, point, n)

    def run(part: tuple[Tile, Program, CgraMapping]) -> CgraRun:
        t, _, m = part
        slab = {f: slab_values(program, f, a, t) for f, a in values.items()}
        return simulate_cgra(m, slab, device, roofline_gops, max_cycles)

    with ThreadPoolExecutor(max_workers=max(1, min(n, os.cpu_count() or 1))) as pool:
        runs = list(pool.map(run, parts))
    slowest = max(range(n), key=lambda i: runs[i].cycles)
    status = next((r.status for r in runs if r.status != "done"), "done")
    outputs: dict[str, Array] = {}
    for name in runs[0].outputs:
        whole = np.full(tuple(int(d or 0) for d in program.shape), np.nan)
        for (t, _, _), r in zip(parts, runs, strict=True):
            own, grid = band(t)
            whole[grid] = r.outputs[name][own]
        outputs[name] = whole
    reads: dict[str, int] = {}
    for r in runs:
        for f, b in r.bytes_read.items():
            reads[f] = reads.get(f, 0) + b
    first = runs[slowest]
    base = {f.name: getattr(first, f.name) for f in fields(CgraRun)}
    predictions = [predict(m, device) for _, _, m in parts]
    tiled = TiledCgraRun(
        **base,
        tile_cycles=tuple(r.cycles for r in runs),
        tile_rows=tuple((t.lo, t.hi) for t, _, _ in parts),
        predicted_tile_cycles=tuple(p.cycles for p in predictions),
        slowest_prediction=max(predictions, key=lambda p: p.cycles),
    )
    return replace(
        tiled,
        status=status,
        outputs=outputs,
        firings=sum(r.firings for r in runs),
        memory_ops=sum(r.memory_ops for r in runs),
        bytes_read=reads,
        bytes_written=sum(r.bytes_written for r in runs),
        flops=float(sum(r.flops for r in runs)),
        roofline_gops=roofline_gops * n,
        sim_seconds=sum(r.sim_seconds for r in runs),
    )


def slab_values(program: Program, field: str, values: Array, tile: Tile) -> Array:
    """Input ``field``'s values that ``tile`` loads (a view; the whole array when it does not span the
    outermost axis, or is not an input)."""
    where = input_slice(program, field, tile) if field in {i.name for i in program.inputs} else None
    if where is None:
        return values
    axis, rows = where
    index: list[slice] = [slice(None)] * values.ndim
    index[axis] = rows
    return values[tuple(index)]
