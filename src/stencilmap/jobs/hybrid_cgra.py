"""The CGRA paper's hybrid CPU + CGRA divide-and-conquer (§IV): the host divides the grid recursively into
small stencil subtasks that fit the CGRA and offloads them, keeping for its own cores what does not suit
the fabric. ``compile --device cgra-tia --hybrid`` runs it on the grid it simulates.

The division, along the outermost axis: the **boundary** — the rows within the program's accumulated halo
of the grid's two edges, where the reads leave the grid (shrink, constant or copy boundaries, ``border:
preserve``'s ring) — is the CPU's; the interior is bisected, recursively, until a subtask owns at most
``leaf_points`` points (the host's cache-sized task, §IV), and each subtask is offloaded to the CGRA: the
worker mapping of the program on the subtask's slab (its rows and their halo, all inside the grid, so the
fabric never meets the grid's edge), simulated cycle by cycle with values by ``sim.cgra``. A subtask of
fewer than ``min_rows`` rows (the **remainder** of an uneven division) is the CPU's too. The CPU computes
its parts with the reference executor on their slabs. The outputs are stitched band by band; the caller
validates them against the whole grid's reference. Subtasks are independent (§IV: "independent stencil
tasks"), so one CGRA runs them one after another: its cycles are their sum.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from stencilmap.analysis.halos import program_halo
from stencilmap.design.cgra.tiles import Tile, band, tile_program
from stencilmap.device.catalog import Device
from stencilmap.errors import StencilmapError
from stencilmap.io import Array
from stencilmap.point import DesignPoint
from stencilmap.program.ir import Program

#: A subtask's points at most (a float64 working set of 128 KiB: a core's share of the cache, §IV).
LEAF_POINTS = 1 << 14
#: Fewer rows than this (and at most the halo) are not worth a CGRA launch: the CPU computes them.
MIN_ROWS = 2


@dataclass(frozen=True, slots=True)
class Task:
    """Rows [tile.lo, tile.hi) of the outermost axis, computed from rows [slab_lo, slab_hi), on ``where``."""

    tile: Tile
    where: Literal["cpu", "cgra"]
    why: str  # boundary, remainder, subtask


@dataclass(frozen=True)
class HybridRun:
    """What the divide-and-conquer produced: every task, the stitched outputs, the CGRA's cycles (its
    subtasks one after another) and the model's, the points each side computed."""

    tasks: tuple[Task, ...]
    outputs: dict[str, Array]
    status: str
    cgra_cycles: int
    predicted_cycles: int
    cgra_points: int
    cpu_points: int
    sim_seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "tasks": [
                {
                    "rows": [t.tile.lo, t.tile.hi],
                    "slab": [t.tile.slab_lo, t.tile.slab_hi],
                    "on": t.where,
                    "why": t.why,
                }
                for t in self.tasks
            ],
            "cgra_subtasks": sum(1 for t in self.tasks if t.where != "cpu"),
            "cgra_cycles": self.cgra_cycles,
            "predicted_cgra_cycles": self.predicted_cycles,
            "cgra_points": self.cgra_points,
            "cpu_points": self.cpu_points,
        }


def divide(program: Program, leaf_points: int = LEAF_POINTS, min_rows: int = MIN_ROWS) -> tuple[Task, ...]:
    """The tasks of the shape-bound ``program``, in row order (see the module docstring)."""
    if leaf_points < 1:
        raise StencilmapError(f"a subtask needs at least one point, got {leaf_points}")
    extent = int(program.shape[0] or 0)
    row = int(np.prod([int(n or 0) for n in program.shape[1:]], dtype=np.int64))
    halo = program_halo(program)
    below, above = halo.low[0], halo.high[0]
    lo, hi = min(below, extent), max(min(below, extent), extent - above)
    spans: list[tuple[int, int, Literal["cpu", "cgra"], str]] = []
    if lo > 0:
        spans.append((0, lo, "cpu", "boundary"))

    def split(a: int, b: int) -> None:
        if b - a < min_rows:
            spans.append((a, b, "cpu", "remainder"))
        elif (b - a) * row <= leaf_points or b - a < 2 * min_rows:
            spans.append((a, b, "cgra", "subtask"))
        else:
            mid = (a + b) // 2
            split(a, mid)
            split(mid, b)

    if hi > lo:
        split(lo, hi)
    if hi < extent:
        spans.append((hi, extent, "cpu", "boundary"))
    return tuple(
        Task(Tile(i, a, b, max(0, a - below), min(extent, b + above)), where, why)
        for i, (a, b, where, why) in enumerate(spans)
    )


def run_hybrid(
    program: Program,
    values: Mapping[str, Array],
    point: DesignPoint,
    device: Device,
    leaf_points: int = LEAF_POINTS,
) -> HybridRun:
    """Divide ``program`` (shape-bound, chained), compute every task on its side, stitch the outputs."""
    from stencilmap.backends.reference import run_reference
    from stencilmap.design.cgra.mapping import map_cgra
    from stencilmap.jobs.cgra_tiles import slab_values
    from stencilmap.model.cgra import predict, roofline_workers_of
    from stencilmap.sim.cgra import simulate_cgra

    tasks = divide(program, leaf_points)
    shape = tuple(int(n or 0) for n in program.shape)
    outputs = {name: np.full(shape, np.nan) for name in program.outputs}
    status, cycles, predicted, seconds = "done", 0, 0, 0.0
    points = {"cpu": 0, "cgra": 0}
    row = int(np.prod(shape[1:], dtype=np.int64))
    for task in tasks:
        sub = tile_program(program, task.tile)
        slab = {f: slab_values(program, f, a, task.tile) for f, a in values.items()}
        own, grid = band(task.tile)
        points[task.where] += (task.tile.hi - task.tile.lo) * row
        if task.where == "cpu":
            ref = run_reference(sub, slab)
            for name in program.outputs:
                got = np.where(ref.defined[name], ref.outputs[name], np.nan)
                outputs[name][grid] = got[own]
            continue
        mapping = map_cgra(sub, point, roofline_workers_of)
        run = simulate_cgra(mapping, dict(slab), device, 0.0)
        status = status if run.status == "done" else run.status
        cycles += run.cycles
        predicted += predict(mapping, device).cycles
        seconds += run.sim_seconds
        for name in program.outputs:
            outputs[name][grid] = run.outputs[name][own]
    return HybridRun(tasks, outputs, status, cycles, predicted, points["cgra"], points["cpu"], seconds)
