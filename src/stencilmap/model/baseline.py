"""The CPU and GPU baselines of the papers: a tuned code's time per step from the device's execution
units, its memory and its blocking cache (``Device.cores``), and what the paper says of its code (``Code``).

One time step takes the longest of three times (each the roofline of one resource):

* compute: instructions per point × computed points / (units × lanes × pipes × clock × E_compute), on the
  units and vector width the code uses. A code that fuses multiply-adds, on pipes that can, issues min(add,
  mul) of them as one instruction (OpenCL §5.3: "GPUs perform an
  addition and a multiplication in one clock cycle"); every other operation is one instruction.
* memory: the bytes a step moves off chip / (B_peak × E_coef) (OpenCL §5.3's 80% roofline). The bytes are
  the inputs read and the outputs written once (``analysis.bytes_per_point``), an output twice on a CPU
  whose stores allocate (the cache reads a line before it writes it); a code that runs every stencil as
  its own kernel (StencilFlow §IX-B: Dawn "executes five components of horizontal diffusion as distinct
  kernels") streams each stencil's inputs and output, intermediates included.
* cache: the bytes a step reads from the blocking cache / (units × bytes per cycle × clock × E_cache): the
  inputs and outputs of the step, or on a GPU code whose threads read every window point from shared
  memory, every point of every window (CGRA §VII: "there is redundant traffic from SMEM, because each
  thread reads neighboring cells"; "we observed around 60% utilization" of its bandwidth).

A code with temporal blocking (OpenCL §5.3: "all applications are optimized for CPUs and GPUs using
temporal blocking ... select the fastest implementation") runs b steps on an overlapped tile held in the
blocking cache: a tile of T points an axis (T^d × the bytes of a point fills the cache of one unit), of
which T − b(S − 1) are computed after b steps. Memory traffic per step falls by b and rises by the halo,
(T / (T − b(S − 1)))^d; compute and cache traffic rise by the redundant halo points of the intermediate
steps. The model takes the fastest b from 1 (no tiling) to the largest the cache allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import floor, prod

from stencilmap.analysis.halos import program_halo
from stencilmap.analysis.intensity import itemsize
from stencilmap.analysis.ops import merged, program_ops
from stencilmap.analysis.windows import stencil_windows
from stencilmap.device.types import Cores, Device
from stencilmap.errors import StencilmapError
from stencilmap.model.workload import Workload, workload
from stencilmap.program.ir import Program

__all__ = ["CODES", "BaselineStep", "Code", "baseline_step", "instructions_per_point"]


@dataclass(frozen=True, slots=True)
class Code:
    """What a paper says (or what we assume, ``why``) of the CPU or GPU code it measured."""

    name: str
    fma: bool  # multiply-adds fused into one instruction
    write_allocate: bool  # a store reads its cache line first (CPU stores without streaming stores)
    temporal_blocking: bool  # b steps on an overlapped tile in the blocking cache, the fastest b
    kernel_split: bool  # every stencil its own kernel: intermediates go through memory
    window_reads: bool  # every thread reads every point of its windows from the cache (GPU shared memory)
    why: str
    threads: int | None = None  # units the code runs on (None: all)
    vector_bits: int | None = None  # the widest vector it uses (None: the device's)


#: The papers' codes.
CODES: dict[str, Code] = {
    c.name: c
    for c in (
        Code(
            "halide",
            fma=False,
            write_allocate=True,
            temporal_blocking=False,
            kernel_split=False,
            window_reads=False,
            why="SODA §5.3: Halide with tiling, parallelization and vectorization on 24 threads; the CPU "
            "'has to make a trade-off between memory access and redundant computation' (no temporal "
            "blocking); assumed: Halide's strict floating point (no fused multiply-add) and ordinary stores",
        ),
        Code(
            "opencl-cpu",
            fma=True,
            write_allocate=False,
            temporal_blocking=True,
            kernel_split=False,
            window_reads=False,
            why="OpenCL §5.3: temporal blocking or not, the faster; 90% of the 8 B-a-point roofline without "
            "blocking, which stores that allocate (12 B a point) could not reach; assumed: fused multiply-add",
        ),
        Code(
            "opencl-gpu",
            fma=True,
            write_allocate=False,
            temporal_blocking=True,
            kernel_split=False,
            window_reads=True,
            why="OpenCL §5.3: temporal blocking or not, the faster; an addition and a multiplication a cycle",
        ),
        Code(
            "dawn-cpu",
            fma=True,
            write_allocate=True,
            temporal_blocking=False,
            kernel_split=True,
            window_reads=False,
            why="StencilFlow §IX-B: Dawn's code runs the components as distinct kernels (gcc 8.3)",
        ),
        Code(
            "dawn-gpu",
            fma=True,
            write_allocate=False,
            temporal_blocking=False,
            kernel_split=True,
            window_reads=False,
            why="StencilFlow §IX-B: Dawn's code runs the components as distinct kernels (CUDA 10.1)",
        ),
        Code(
            "cuda-smem",
            fma=True,
            write_allocate=False,
            temporal_blocking=False,
            kernel_split=False,
            window_reads=True,
            why="CGRA §VII: one output a thread, neighbours read from shared memory at about 60% of its "
            "bandwidth, coefficients from the constant cache",
        ),
        Code(
            "gcc-sse2",
            fma=False,
            write_allocate=True,
            temporal_blocking=False,
            kernel_split=False,
            window_reads=False,
            threads=1,
            vector_bits=128,
            why="EMAX Table 2: gcc -O3 -msse2 -ffast-math: SSE2 (128-bit vectors, no fused multiply-add); "
            "assumed: one thread (no OpenMP flag)",
        ),
    )
}


@dataclass(frozen=True, slots=True)
class BaselineStep:
    """One time step of a code on a CPU or GPU at the blocking depth the model chose."""

    seconds: float  # per time step: the longest of the three
    compute_seconds: float
    memory_seconds: float
    cache_seconds: float
    blocking: int  # b: steps per pass over memory (1: no temporal blocking)
    tile: int  # T: tile points per axis (0: no tile)
    memory_bytes_per_point: float  # one step, before blocking
    instructions_per_point: float

    @property
    def bound(self) -> str:
        times = {"compute": self.compute_seconds, "memory": self.memory_seconds, "cache": self.cache_seconds}
        return max(times, key=lambda k: times[k])


def instructions_per_point(program: Program, fma: bool) -> float:
    """Instructions of one point of one step: every operation one, a fused multiply-add one for two."""
    ops = merged(program_ops(program)).as_dict()
    fused = min(ops.get("add", 0), ops.get("mul", 0)) if fma else 0
    return float(sum(ops.values()) - fused)


def baseline_step(
    program: Program, shape: tuple[int, ...], device: Device, code: Code, steps: int = 1
) -> BaselineStep:
    """The time of one step of ``program`` over ``shape`` (``steps`` of them in a run, the most a
    blocked code may chain) by ``code`` on ``device``."""
    cores = device.cores
    if cores is None:
        raise StencilmapError(f"device '{device.name}' describes no cores (the CPU/GPU baseline needs them)")
    work = workload(program, shape)
    instr = instructions_per_point(work.program, code.fma and cores.fma)
    mem_bytes = _memory_bytes_per_point(work, code)
    cache_bytes = _cache_bytes_per_point(work, code)
    f_hz = device.clock_mhz * 1e6
    units = cores.units if code.threads is None else min(code.threads, cores.units)
    issue = cores.instructions_per_second(work.dtype, device.clock_mhz, units, code.vector_bits)
    issue *= cores.compute_efficiency
    cache_rate = units * cores.cache_bytes_per_cycle * f_hz * cores.cache_efficiency
    memory_rate = device.bandwidth_gbs * device.mem_efficiency * 1e9

    def at(b: int, tile: int) -> BaselineStep:
        halo, redundancy = _overlap(work, tile, b)
        t_comp = instr * work.computed_points * redundancy / issue
        t_mem = mem_bytes * work.points * halo / b / memory_rate
        t_cache = cache_bytes * work.points * redundancy / cache_rate
        return BaselineStep(
            seconds=max(t_comp, t_mem, t_cache),
            compute_seconds=t_comp,
            memory_seconds=t_mem,
            cache_seconds=t_cache,
            blocking=b,
            tile=tile if b > 1 else 0,
            memory_bytes_per_point=mem_bytes,
            instructions_per_point=instr,
        )

    best = at(1, 0)
    if not code.temporal_blocking:
        return best
    tile = _tile(work, cores)
    for b in range(2, max(1, steps) + 1):
        if any(tile - b * s < 1 for s in program_halo(work.program).size):
            break
        step = at(b, tile)
        if step.seconds < best.seconds:
            best = step
    return best


def _memory_bytes_per_point(work: Workload, code: Code) -> float:
    """Off-chip bytes of one step: inputs once, outputs once (twice where stores allocate); with the
    kernels split, every stencil's own reads and its output."""
    writes = 2.0 if code.write_allocate else 1.0
    if not code.kernel_split:
        return work.bytes_per_point - work.output_bytes_per_point + writes * work.output_bytes_per_point
    program, points = work.program, work.points
    total = 0.0
    for st in program.stencils:
        for w in stencil_windows(program, st):
            axes = program.field_axes(w.field)
            total += itemsize(program.field_dtype(w.field)) * prod(work.shape[a] for a in axes) / points
        total += writes * itemsize(st.dtype)
    return total


def _cache_bytes_per_point(work: Workload, code: Code) -> float:
    """Bytes one step reads from and writes to the blocking cache: every window point of every
    full-dimensional field read (``window_reads``), else every input and output once."""
    if not code.window_reads:
        return work.bytes_per_point
    program = work.program
    total = 0.0
    for st in program.stencils:
        for w in stencil_windows(program, st):
            if len(program.field_axes(w.field)) == program.rank:
                total += itemsize(program.field_dtype(w.field)) * len(w.offsets)
        total += itemsize(st.dtype)
    return total


def _tile(work: Workload, cores: Cores) -> int:
    """T: points an axis of the largest cube of the grid's rank whose inputs and outputs (the two copies
    of an overlapped tile) fill one unit's blocking cache."""
    rank = len(work.shape)
    side: float = (cores.cache_bytes / max(work.bytes_per_point, 1e-9)) ** (1 / rank)
    return max(1, floor(side))


def _overlap(work: Workload, tile: int, b: int) -> tuple[float, float]:
    """(memory traffic, computed points) of b steps on an overlapped tile of ``tile`` points an axis,
    each against the b computed points of an untiled code: the tile read for T − b(S − 1) points written;
    step k computes T − k(S − 1) points an axis."""
    if b <= 1:
        return 1.0, 1.0
    sizes = [min(s, n) for s, n in zip(program_halo(work.program).size, work.shape, strict=True)]
    inner = [tile - b * s for s in sizes]
    halo = prod(tile / i for i in inner)
    redundancy = (
        sum(prod((i + (b - k) * s) / i for i, s in zip(inner, sizes, strict=True)) for k in range(1, b + 1))
        / b
    )
    return halo, redundancy
