"""Simulate the winner: build it (on a scaled-down grid when the real one is large) and compare cycles.

The scaling rule keeps what sets the design's structure and timing — the inner axes (row and plane
lengths: reuse distances, window fills, SODA tiles) — and shortens the streamed (outermost) axis:

1. a grid of at most ``cap`` points (default 2^17) is simulated as it is;
2. a SODA-tiled inner axis keeps its tile size and is cut to two tiles (tile + stride), so a tile
   transition is simulated;
3. while the inner plane exceeds cap / 16 points, its largest untiled axis is halved (down to at
   least 16 and four windows), so that at least 16 rows stream;
4. the outermost axis gets cap / plane rows, at least twice the halo of the q stages plus 16.

The model's cycles are those of ``model.timing.design_timing`` for that same built design, with the
device's per-bank bandwidth at the explored clock (``Device.bytes_per_cycle_per_bank``).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from time import perf_counter

from stencilmap.analysis.halos import program_halo
from stencilmap.arch import arch
from stencilmap.design.common import with_iterate
from stencilmap.errors import StencilmapError
from stencilmap.explore.report import Candidate, WinnerCheck
from stencilmap.explore.resources import build_candidate
from stencilmap.explore.space import Space, window_reach
from stencilmap.model.timing import design_timing, pins_banks, port_bits
from stencilmap.program.data import make_inputs
from stencilmap.program.ir import Program
from stencilmap.sim import SimConfig, simulate


def scaled_shape(program: Program, candidate: Candidate, cap: int) -> tuple[int, ...]:
    """The grid the winner is simulated on (module docstring)."""
    shape = tuple(int(n or 0) for n in program.shape)
    if prod(shape) <= cap:
        return shape
    halo = program_halo(program)
    per_stage = [lo + hi for lo, hi in zip(halo.low, halo.high, strict=True)]
    q = candidate.iterate
    inner = list(shape[1:])
    tiled = [False] * len(inner)
    for a, n in enumerate(inner):
        if candidate.tile is not None and candidate.tile[a] < n:
            t = candidate.tile[a]
            inner[a] = min(n, t + t - q * per_stage[a + 1])
            tiled[a] = True
    reach = window_reach(program)
    while prod(inner) > cap // 16:
        shrinkable = [
            a for a in range(len(inner)) if not tiled[a] and inner[a] // 2 >= max(16, 4 * reach[a + 1])
        ]
        if not shrinkable:
            break
        a = max(shrinkable, key=lambda i: inner[i])
        inner[a] //= 2
    rows = max(cap // max(1, prod(inner)), 2 * q * per_stage[0] + 16)
    return (min(shape[0], rows), *inner)


def check_winner(
    space: Space,
    candidate: Candidate,
    cap: int,
    report: Callable[[str, int, int], None],
    notify: Callable[[str], None] | None = None,
) -> WinnerCheck:
    """Build ``candidate`` on the scaled grid, simulate it with the device's bandwidth, compare cycles."""
    shape = scaled_shape(space.program, candidate, cap)
    program = space.program.with_shape(shape)
    rate = space.device.bank_rate(  # at its access points' plateau (StencilFlow §VIII-D, Fig. 16)
        pins_banks(space.program),
        candidate.clock_mhz or space.clock_mhz,
        port_bits(space.program, candidate.lanes),
    )
    start = perf_counter()
    try:
        design = build_candidate(
            candidate.arch,
            program=program,
            lanes=candidate.lanes,
            q=candidate.iterate,
            tile=candidate.tile,
            device=space.builder_device,
        )
        chained = with_iterate(program, candidate.iterate)
        predicted = design_timing(design, chained, lanes=arch(candidate.arch).lanes).cycles_at(rate)
        inputs = make_inputs(chained, {}, 0)
    except StencilmapError as exc:
        return WinnerCheck(
            shape,
            scaled=shape != space.shape,
            bytes_per_cycle_per_bank=rate,
            predicted_cycles=0.0,
            simulated_cycles=0,
            status="error",
            wall_seconds=0.0,
            note=exc.message,
        )
    expected = max(1, round(predicted))

    def progress(cycle: int, _: int) -> None:
        report("simulating", min(cycle, expected), expected)

    result = simulate(chained, design, inputs, SimConfig(bytes_per_cycle_per_bank=rate), progress, notify)
    note = ""
    if result.status == "deadlock":
        note = "the simulation deadlocked: " + " → ".join(
            result.deadlock.cycle_of_waits if result.deadlock else ()
        )
    elif result.status != "done":
        note = f"the simulation stopped at its cycle limit ({result.cycles:,} cycles)"
    return WinnerCheck(
        shape=shape,
        scaled=shape != space.shape,
        bytes_per_cycle_per_bank=rate,
        predicted_cycles=predicted,
        simulated_cycles=result.cycles,
        status=result.status,
        wall_seconds=perf_counter() - start,
        note=note,
    )
