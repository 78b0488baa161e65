"""The design space: builders, lanes P, iterate factors q and SODA tile sizes, per program and device.

* **lanes** (SODA's k, the PCM's P_cell, StencilFlow's W): powers of two whose beat fits the burst
  width, P · bits ≤ W_b (SODA §4.5: "k is restricted to powers of 2 … within the 512-bit interface");
* **iterate** q (SODA's q, the PCM's d, StencilFlow's chained copies): 1 … min(T, ``max_iterate``) for a
  program whose outputs can feed its inputs, else 1 (SODA §4.5: "for non-iterative kernels q = 1");
  the resource constraint bounds it further during the search (SODA eq. 5);
* **tile sizes** (SODA only, every axis but the outermost, SODA §4.2): the full size (untiled), up to
  ``tiles_per_axis`` multiples of a power-of-two step below it and the powers of two below that step, each wider than twice the window so that
  no two offsets of a window alias; whether a tile also exceeds the halo of q chained stages is decided
  per point (``Axis tiling``: the tile stride T − q·halo must be positive).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product
from math import ceil, log2, prod
from pathlib import Path

from stencilmap.analysis.halos import program_halo
from stencilmap.analysis.intensity import itemsize
from stencilmap.analysis.windows import access_sets
from stencilmap.arch import arch as arch_of
from stencilmap.arch import archs
from stencilmap.design.common import DEFAULT_BURST_WIDTH, on_device_banks, with_iterate
from stencilmap.device.catalog import ClockModel, Device, load_device
from stencilmap.errors import StencilmapError, param
from stencilmap.model.report import check_clock
from stencilmap.program import Program
from stencilmap.program.data import bind_shape
from stencilmap.program.load import as_program

#: the builders the explorer searches (the streamed FPGA microarchitectures)
ARCHS = archs(streamed=True)


#: Most time steps a search accepts (launch counts are 64-bit integers in its tables; issue 19 §9).
MAX_ITERATIONS = 2**53


@dataclass(frozen=True, slots=True, kw_only=True)
class ExploreConfig:
    """Everything ``stencilmap explore`` was asked to do (None: the program's or device's default)."""

    program: Path | Program  # a file (the command line) or a Program (the Python API)
    device: str
    archs: tuple[str, ...] | None = None
    iterations: int | None = None  # T: the application's time steps
    shape: tuple[int, ...] | None = None
    clock_mhz: float | None = None
    top: int = 10
    max_iterate: int = 1024
    tiles_per_axis: int = 24
    exhaustive: bool = False  # check the resources of every point: no bound pruning
    simulate: bool = True
    sim_points: int = 1 << 17  # the simulated winner streams at most about this many points


@dataclass(frozen=True, slots=True)
class Space:
    """The candidate points: ``archs`` × ``lanes`` × q = 1 … ``q_max`` × ``tiles`` (SODA; others untiled)."""

    program: Program  # shape-bound, one pass (iterate 1)
    device: Device
    clock_mhz: float
    iterations: int
    archs: tuple[str, ...]
    lanes: tuple[int, ...]
    q_max: int
    tiles: tuple[tuple[int, ...], ...]  # SODA tile candidates over the inner axes; [0] is untiled
    clock_model: ClockModel | None = None  # the device's, unless --clock-mhz fixed the clock
    device_ref: str | None = None  # the device as the user named it (a catalog name or a PATH.json)

    @property
    def builder_device(self) -> str:
        """What the builders are given as ``BuildConfig.device`` (their operator latencies come from it)."""
        return self.device_ref if self.device_ref is not None else self.device.name

    @property
    def bound_clock_mhz(self) -> float:
        """The clock every point is first evaluated at: the fixed clock, or the clock model's fastest (a
        point is never faster than at its clock model's highest clock: time does not grow with f)."""
        return self.clock_model.fastest_mhz if self.clock_model is not None else self.clock_mhz

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n or 0) for n in self.program.shape)

    def tiles_of(self, arch: str) -> tuple[tuple[int, ...], ...]:
        return self.tiles if arch_of(arch).tiled else self.tiles[:1]

    @property
    def size(self) -> int:
        """Candidate points in all."""
        return sum(len(self.tiles_of(a)) for a in self.archs) * len(self.lanes) * self.q_max


def design_space(config: ExploreConfig) -> Space:
    """The space of ``config``: the program bound to its shape, the device's FPGA builders."""
    device = load_device(config.device)
    archs = tuple(a for a in (config.archs or ARCHS) if a in device.archs)
    if not archs:
        wanted = ", ".join(config.archs or ARCHS)
        raise StencilmapError(
            f"device '{device.name}' ({device.kind}) models none of {wanted}: explore needs an FPGA"
        )
    if config.iterations is not None and not 1 <= config.iterations <= MAX_ITERATIONS:
        raise StencilmapError(
            f"{param('iterations')} must be in 1..{MAX_ITERATIONS:,}, got {config.iterations}"
        )
    check_clock(config.clock_mhz)
    loaded = bind_shape(as_program(config.program), {}, config.shape)
    program, _ = on_device_banks(replace(loaded, iterate=1), device.dram_banks, device.name)
    iterations = config.iterations if config.iterations is not None else max(1, loaded.iterate)
    q_max = min(iterations, config.max_iterate) if _iterable(program) else 1
    return Space(
        program=program,
        device=device,
        clock_mhz=config.clock_mhz if config.clock_mhz is not None else device.clock_mhz,
        iterations=iterations,
        archs=archs,
        lanes=lane_candidates(program),
        q_max=max(1, q_max),
        tiles=tile_candidates(program, config.tiles_per_axis),
        clock_model=device.clock_model if config.clock_mhz is None else None,
        device_ref=config.device,
    )


def _iterable(program: Program) -> bool:
    """Whether q copies can be chained (outputs matching inputs)."""
    try:
        with_iterate(program, 2)
    except StencilmapError:
        return False
    return True


def lane_candidates(program: Program) -> tuple[int, ...]:
    """Powers of two P with P × the widest element within the burst width (SODA §4.5)."""
    bits = 8 * max(
        itemsize(program.field_dtype(f)) for f in (*(i.name for i in program.inputs), *program.outputs)
    )
    burst = program.hints.burst_width or DEFAULT_BURST_WIDTH
    return tuple(1 << n for n in range(int(log2(max(1, burst // bits))) + 1))


def tile_candidates(program: Program, per_axis: int) -> tuple[tuple[int, ...], ...]:
    """SODA tile sizes over the inner axes: the untiled sizes first, then every combination of candidates.

    A program reading a lower-dimensional input is not tiled (the SODA builder refuses it).
    """
    shape = tuple(int(n or 0) for n in program.shape)
    untiled = shape[1:]
    if any(len(i.axes) < program.rank for i in program.inputs):
        return (untiled,)
    halo = program_halo(program)
    reach = window_reach(program)
    axes = []
    for a in range(1, len(shape)):
        smallest = max(2 * reach[a] + 2, halo.low[a] + halo.high[a] + 2, 4)
        axes.append(axis_candidates(shape[a], smallest, per_axis))
    combos = [t for t in product(*axes) if t != untiled]
    return (untiled, *sorted(combos, key=lambda t: (-prod(t), t)))


def axis_candidates(size: int, smallest: int, count: int) -> tuple[int, ...]:
    """The full ``size``, multiples of a power-of-two step g (about ``size / count``) in [``smallest``,
    ``size``) and the powers of two in [``smallest``, g), largest first (``search`` then grows the best
    tiles off this grid: ``refine``)."""
    if size <= smallest or count <= 1:
        return (size,)
    step = 1 << max(0, ceil(log2(size / count)))
    smaller = set(range(ceil(smallest / step) * step, size, step))
    # and the powers of two below the step: a wide axis whose tile the on-chip storage bounds (SODA §4.2)
    smaller |= {1 << n for n in range(ceil(log2(smallest)), int(log2(step)))}
    return (size, *sorted(smaller, reverse=True))


def window_reach(program: Program) -> tuple[int, ...]:
    """The largest |offset| of any read, per axis of the grid."""
    reach = [0] * program.rank
    for st in program.stencils:
        for field, offsets in access_sets(st, program).items():
            for off in offsets:
                for o, a in zip(off, program.field_axes(field), strict=True):
                    reach[a] = max(reach[a], abs(o))
    return tuple(reach)
