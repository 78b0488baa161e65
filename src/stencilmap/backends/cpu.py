"""The compiled CPU backend: generated C + OpenMP (``cgen``), built by the system compiler, cached on disk.

A run is a sequence of blocks of up to ``block`` fused time steps; each block is one call of the generated
``sm_block`` over the whole grid, which works tile by tile (overlapped tiles, cache-resident scratch). State
between blocks lives in two ping-pong arrays per iterated field, so the caller's inputs are never written.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap import native
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program

from . import cgen, cost
from .cexpr import Unsupported
from .plan import Plan, make_plan
from .reference import Result, undefined_value

Array = npt.NDArray[Any]


class SmBuf(ctypes.Structure):
    _fields_ = [
        ("v", ctypes.c_void_p),
        ("m", ctypes.c_void_p),
        ("s", ctypes.c_int64 * 3),
        ("off", ctypes.c_int64),
        ("k", ctypes.c_int64),  # ring slots (the wavefront driver's own buffers); 0 here
        ("q", ctypes.c_int64),
    ]


#: -fwrapv: signed overflow wraps (the documented semantics); -ffp-contract=off: no fused multiply-add, so
#: float results equal NumPy's operation by operation; -fexcess-precision=standard: every _Float16 cast rounds;
#: -fno-math-errno / -fno-trapping-math change no value, they only let sqrt and conditionals vectorise.
FLAGS = (
    "-O3",
    "-march=native",
    "-fopenmp",
    "-fPIC",
    "-shared",
    "-std=gnu11",
    "-fwrapv",
    "-ffp-contract=off",
    "-fexcess-precision=standard",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-fno-strict-aliasing",
)


#: gcc only, each to cut compile time where the kernel does not need the work (issue 26 item 4; figures from
#: ``benchmarks/compile_bench.py``, compiler CPU seconds):
#: - no vectorised epilogues. The unchecked rows finish with one more full vector (``cgen._row``), so a loop's
#:   narrower-vector epilogue never runs, and compiling it is what made big windows slow: gcc's combiner spent
#:   12 of ``contrast.soda``'s 13 s there (225 reads; with the param 1.5 s in all);
#: - no loop unswitching: the edge loops' per-read bound checks made gcc clone each loop per combination of
#:   conditions (``simple_input_delay_buf.json`` 3.4 s → 1.7 s);
#: - no loop versioning for aliasing or alignment: the interior rows are ``ivdep`` over ``restrict`` pointers
#:   and AVX loads need no alignment, so the versioned copies gcc made are never the fast path; only the short
#:   edge loops lose vectors (8-stencil DAGs 2.7 s → 1.7 s, kernel rates unchanged within the noise).
GCC_FLAGS = (
    "--param=vect-epilogues-nomask=0",
    "-fno-unswitch-loops",
    "--param=vect-max-version-for-alias-checks=0",
    "--param=vect-max-version-for-alignment-checks=0",
)


#: gcc on a loop nest of more than ``HUGE_LOOP_CHARS`` characters (windows of hundreds of reads; the corpus's
#: largest, erosion.soda, is 41 K): two passes grow faster than the loop — induction-variable optimisation
#: (an address per read) and the RTL combiner. A 1,200-read 1-D window (133 K characters) built in 19 s at
#: -O3 (18 s in ``tree iv optimization``; -O1 no better), 3.9 s without them; 3,000 reads in 23 s instead of
#: most of ten minutes. Kernels this large are bound by their arithmetic, not by address updates.
HUGE_LOOP_CHARS = 60_000
HUGE_GCC_FLAGS = ("-fno-ivopts", "--param=max-combine-insns=2")


def flags(cc: str, source: str = "") -> tuple[str, ...]:
    """The flags of the generated code for the compiler ``cc`` (``FLAGS``, and ``GCC_FLAGS`` for gcc, with
    ``HUGE_GCC_FLAGS`` where ``source`` has a huge loop nest)."""
    version = native.compiler_identity(cc).lower()  # gcc, also as ``cc``, names its Foundation
    if "free software foundation" not in version or "clang" in version:
        return FLAGS
    huge = cgen.loop_nest_chars(source) > HUGE_LOOP_CHARS
    return FLAGS + GCC_FLAGS + (HUGE_GCC_FLAGS if huge else ())


def compiler() -> str:
    """``$CC``, else gcc, else cc; a clear error when there is none."""
    cc = native.find_compiler([os.environ["CC"]] if os.environ.get("CC") else ["gcc", "cc"])
    if cc is None:
        raise StencilmapError("the cpu backend needs a C compiler with OpenMP (gcc); none was found")
    return cc


def build(source: str) -> tuple[ctypes.CDLL, bool]:
    """The loaded library of generated C (``native`` builds it with ``flags``, its parts in as many units as
    this process has processors, ``cgen.split``, and caches it under ``<cache>/cpu``) and whether it had to be
    compiled now (False: from the cache)."""
    cc = compiler()
    parts = cgen.split(source, processors())  # the file's parts compiled in parallel
    unit = native.Unit(
        "sm", cc, (("kernel.c", source),), ("kernel.c",), flags(cc, source), ("-lm",), (), parts
    )
    try:
        return native.library(unit, ("cpu",))
    except native.CompileError as exc:  # a user's CC that fails or is killed: one line (issue 19 §9)
        raise StencilmapError(
            f"the C compiler {unit.compiler} ended with {exc.how} on the generated code: {exc.first_error}"
        ) from None


@dataclass(frozen=True)
class Timing:
    """Where a compiled run spent its time: building (or loading) the code, and the kernel itself."""

    compile_seconds: float
    compiled: bool  # False: the library came from the cache
    compute_seconds: float


def default_threads() -> int:
    """``OMP_NUM_THREADS`` when it is set to a positive number (OpenMP's own convention; its first value
    where it lists one per nesting level), else the processors this process may run on."""
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if first.isdigit() and 1 <= int(first) <= 4096:
        return int(first)
    return processors()


def processors() -> int:
    """The processors this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class CompiledProgram:
    """A program's generated library and the plan it was generated from."""

    def __init__(self, program: Program) -> None:
        try:
            self.plan: Plan = make_plan(program)
            source = cgen.generate(self.plan)
        except Unsupported as exc:
            raise StencilmapError(f"the compiled backends cannot run this program: {exc}") from None
        start = time.perf_counter()
        self.lib, self.compiled = build(source)
        self.compile_seconds = time.perf_counter() - start
        self._fn = self.lib.sm_block
        self._fn.restype = ctypes.c_int
        self._wave = self.lib.sm_wave if program.rank >= 2 else None
        if self._wave is not None:
            self._wave.restype = ctypes.c_int
        self.source = source

    def buf(self, field: str, arr: Array, origin: Sequence[int], mask: Array | None = None) -> SmBuf:
        """A descriptor of ``arr`` holding ``field`` over a box of the grid whose first point is ``origin``."""
        axes = self.plan.axes(field)
        b = SmBuf()
        b.v = arr.ctypes.data
        b.m = mask.ctypes.data if mask is not None else None
        item = arr.itemsize
        off = 0
        for j, a in enumerate(axes):
            stride = arr.strides[j] // item if j < len(axes) - 1 else 1
            if j < len(axes) - 1:
                b.s[j] = stride
            off += origin[a] * stride
        b.off = off
        return b

    def block(
        self,
        shape: Sequence[int],
        owned: tuple[Sequence[int], Sequence[int]],
        steps: int,
        tile: Sequence[int],
        threads: int,
        inputs: Sequence[SmBuf],
        outputs: Sequence[SmBuf],
        params: Sequence[Array],
        wave: bool = False,
        nt: bool = False,
        planes: int = 1,
    ) -> None:
        """Apply ``steps`` iterations to the box ``owned`` with overlapped tiles (``sm_block``) or, ``wave``,
        streaming axis 0 (``sm_wave``; ``nt``: outputs written with streaming stores; ``planes``: planes
        a stage computes per tick); arrays must stay alive meanwhile."""
        i64 = ctypes.c_int64 * len(shape)
        ins = (SmBuf * max(1, len(inputs)))(*inputs)
        outs = (SmBuf * max(1, len(outputs)))(*outputs)
        pars = (ctypes.c_void_p * max(1, len(params)))(*[p.ctypes.data for p in params])
        args = [
            i64(*shape),
            i64(*owned[0]),
            i64(*owned[1]),
            ctypes.c_int64(steps),
            i64(*tile),
            ctypes.c_int(threads),
            ins,
            outs,
            pars,
        ]
        if wave:
            if self._wave is None:
                raise StencilmapError("the wavefront scheme needs a program of rank ≥ 2")
            rc = self._wave(*args, ctypes.c_int(int(nt)), ctypes.c_int64(planes))
        else:
            rc = self._fn(*args)
        if rc == -2:
            raise MemoryError("the cpu backend could not allocate its tile buffers")
        if rc != 0:
            raise RuntimeError(f"sm_block failed ({rc})")


_PROGRAMS: dict[Program, CompiledProgram] = {}


def compile_program(program: Program) -> CompiledProgram:
    """The compiled form of a program, built once per process (and once per machine, through the cache)."""
    key = program.with_shape(tuple(0 for _ in program.shape))
    if key not in _PROGRAMS:
        _PROGRAMS[key] = CompiledProgram(program)
    return _PROGRAMS[key]


def choose_block(plan: Plan, shape: Sequence[int], iterate: int, threads: int, block: int | None) -> int:
    """Steps fused per block (the cost model's choice, or the option)."""
    return cost.choose(plan, shape, iterate, threads, block).block


def choose_tile(plan: Plan, shape: Sequence[int], steps: int, threads: int) -> tuple[int, ...]:
    """The overlapped tile for ``steps`` fused steps (the Dask backend's per-chunk kernel)."""
    return cost.choose(plan, shape, steps, threads, block=steps, scheme="tiles").tile


def run_cpu(
    program: Program,
    inputs: Mapping[str, Array],
    threads: int | None = None,
    block: int | None = None,
    tile: Sequence[int] | None = None,
    scheme: str | None = None,
    nt: bool | None = None,
    planes: int | None = None,
) -> tuple[Result, Timing]:
    """Execute a shape-bound program with the compiled CPU backend (``scheme``: "tiles" or "wave"; ``block``,
    ``tile``, ``nt`` and the wave's ``planes`` a tick override the cost model's choice)."""
    threads = default_threads() if threads is None else threads
    if threads < 1:
        raise StencilmapError(f"threads must be ≥ 1, got {threads}")
    if planes is not None and planes < 1:
        raise StencilmapError(f"planes must be ≥ 1, got {planes}")
    cp = compile_program(program)
    planned = replace(cp.plan.program, shape=program.shape)  # the plan's program (``plan.pass_values_read``)
    plan = Plan(planned, cp.plan.order, cp.plan.fields, cp.plan.pairs, cp.plan.feeds, cp.plan.masked)
    shape = tuple(int(n or 0) for n in program.shape)
    values = checked_inputs(program, inputs)
    choice = cost.choose(plan, shape, program.iterate, threads, block, scheme)
    steps, scheme = choice.block, choice.scheme
    if tile is None:
        tile = choice.tile
    elif len(tile) != len(shape) or any(t < 1 for t in tile):
        raise StencilmapError(f"tile must have {len(shape)} positive sizes, got {list(tile)}")
    tile = tuple(min(t, n) for t, n in zip(tile, shape, strict=True))
    nt = cost.use_nt(plan, shape) if nt is None else nt
    runner = _Runner(cp, plan, shape, values, blocks=-(-program.iterate // steps))
    start = time.perf_counter()
    done = 0
    while done < program.iterate:
        now = min(steps, program.iterate - done)
        runner.step(now, tile, threads, scheme == "wave", bool(nt), planes or choice.planes)
        done += now
    compute = time.perf_counter() - start
    return runner.result(), Timing(cp.compile_seconds, cp.compiled, compute)


def checked_inputs(program: Program, inputs: Mapping[str, Array]) -> dict[str, Array]:
    """Each input and param as a C-contiguous array of its declared dtype and shape."""
    out: dict[str, Array] = {}
    shapes = {i.name: (tuple(int(program.shape[a] or 0) for a in i.axes), i.dtype) for i in program.inputs}
    shapes.update({p.name: (p.shape, p.dtype) for p in program.params})
    for name, (shape, dtype) in shapes.items():
        if name not in inputs:
            raise StencilmapError(f"no value given for input '{name}'")
        arr = np.asarray(inputs[name])
        if tuple(arr.shape) != tuple(shape) or str(arr.dtype) != dtype:
            raise StencilmapError(
                f"input '{name}' has shape {list(arr.shape)} and dtype {arr.dtype}, expected {list(shape)} {dtype}"
            )
        out[name] = np.ascontiguousarray(arr)
    return out


class _Runner:
    """The arrays of a whole-grid run: inputs, ping-pong state, outputs and their masks."""

    def __init__(
        self,
        cp: CompiledProgram,
        plan: Plan,
        shape: tuple[int, ...],
        values: dict[str, Array],
        blocks: int = 2,
    ):
        self.cp, self.plan, self.shape = cp, plan, shape
        prog = plan.program
        self.values = dict(values)
        self.masks: dict[str, Array | None] = {
            i.name: (np.ones(shape, np.uint8) if i.name in plan.masked else None) for i in prog.inputs
        }
        # Pages are touched now: page faults are setup, not kernel time (and serialise threads). The spare
        # buffers are written only from the second block on: one block leaves them untouched (not even mapped).
        self.outputs = {o: _aligned(shape, prog.field_dtype(o), touch=True) for o in prog.outputs}
        self.out_masks = {
            o: (_aligned(shape, np.uint8, touch=True) if o in plan.masked else None) for o in prog.outputs
        }
        self.spare: dict[str, tuple[Array, Array | None]] = {}
        if plan.feeds:  # the second ping-pong buffer of each iterated field
            self.spare = {
                o: (_aligned(shape, self.outputs[o].dtype, touch=blocks > 1), _like(self.out_masks[o]))
                for _, o in plan.pairs
            }
        self.params = [np.ascontiguousarray(values[p.name]) for p in prog.params]

    def step(
        self, steps: int, tile: Sequence[int], threads: int, wave: bool, nt: bool, planes: int = 1
    ) -> None:
        prog = self.plan.program
        zero = (0,) * len(self.shape)
        ins = [self.cp.buf(i.name, self.values[i.name], zero, self.masks[i.name]) for i in prog.inputs]
        outs = [self.cp.buf(o, self.outputs[o], zero, self.out_masks[o]) for o in prog.outputs]
        self.cp.block(
            self.shape, (zero, self.shape), steps, tile, threads, ins, outs, self.params, wave, nt, planes
        )
        if not self.plan.feeds:
            return
        for i, o in self.plan.pairs:  # ping-pong; the caller's input array is never written
            state = (self.outputs[o], self.out_masks[o])
            spare = self.spare.pop(o) if o in self.spare else (self.values[i], self.masks[i])
            self.values[i], self.masks[i] = state
            self.outputs[o], self.out_masks[o] = spare

    def result(self) -> Result:
        prog = self.plan.program
        outs: dict[str, Array] = {}
        defined: dict[str, npt.NDArray[np.bool_]] = {}
        final = {o: (self.values[i], self.masks[i]) for i, o in self.plan.pairs} if self.plan.feeds else {}
        for o in prog.outputs:
            v, m = final.get(o, (self.outputs[o], self.out_masks[o]))
            ok = np.ones(self.shape, bool) if m is None else m.astype(bool)
            if m is not None:  # the runner's arrays are not used again: filled in place, not copied
                v[~ok] = undefined_value(v.dtype)
            outs[o], defined[o] = v, ok
        return Result(outs, defined)


#: Arrays this large are mapped privately here, in ordinary pages. NumPy advises huge pages for its large
#: arrays; where the kernel must compact memory to find them (``defrag`` = ``madvise``, this machine's
#: setting) a 64 MiB array's first touch took 0.11–0.13 s, against 0.034–0.040 s in ordinary pages, and the
#: kernel's speed was the same either way (``benchmarks/job_bench.py``: the run's two arrays 0.27 → 0.08 s).
#: Mapped populated (``MAP_POPULATE``: the kernel faults every page in at once) the first touch is 0.022 s.
MAP_BYTES = 4 << 20


def _aligned(shape: tuple[int, ...], dtype: Any, touch: bool = False) -> Array:
    """An empty array starting a cache line (NumPy's large arrays start 16 bytes in): the streaming stores
    of whole rows then write whole lines. Large ones are an anonymous private mapping (``MAP_BYTES``). With
    ``touch`` its pages are in (zeros): a large one mapped populated, a small one filled."""
    dt = np.dtype(dtype)
    size = int(np.prod(shape)) * dt.itemsize
    if size >= MAP_BYTES and hasattr(mmap, "MAP_PRIVATE"):
        populate = touch and hasattr(mmap, "MAP_POPULATE")
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | (mmap.MAP_POPULATE if populate else 0)
        raw = np.frombuffer(mmap.mmap(-1, size, flags=flags), np.uint8)
        start = 0  # a mapping starts a page
        touch = not populate and touch  # what the mapping did not fault in, the fill below does
    else:
        raw = np.empty(size + 64, np.uint8)
        start = -raw.ctypes.data % 64
    out: Array = raw[start : start + size].view(dt).reshape(shape)
    if touch:
        out.fill(0)
    return out


def _like(arr: Array | None) -> Array | None:
    return None if arr is None else np.empty_like(arr)
