"""The GPU backend: one generated CUDA kernel per stencil, run through CuPy (``RawModule``, NVRTC).

A launch (``launch``) puts a block's 32 × 8 threads over the last two axes (x the last, contiguous one: a
warp reads whole 128-byte lines) and has each thread march ``chunk`` points along axis 0, so the rows or
planes beside a point were read a moment earlier by the same thread and come from L1; coordinates
are 32-bit where every field fits (``index_type``). A point whose every read falls inside the grid
(``plan.interior``) runs the unchecked body; the thin shell of the others the bounds-checked one. Both
bodies are the CPU backend's (``cgen._body``) with the same semantics helpers, so the backends share one
definition of every operation.

Each step launches the stencils in topological order over the whole grid; fields live on the device,
iterated state ping-pongs between two buffers, and only the outputs come back. ``GpuRun`` loads a program on a
``Device`` (CuPy's by default; the tests run the same driver over a host emulation of the kernels) and launches
its steps, as often as a benchmark asks; ``run_gpu`` is one timed launch.
``float16`` programs are refused (NVRTC has no ``_Float16``). Without CuPy or a CUDA device, ``run_gpu``
raises a one-line user error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from math import prod
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program, Stencil

from . import cexpr
from .cexpr import CTYPES, Unsupported
from .cgen import _body, _index
from .cpu import checked_inputs
from .nvrtc import NVRTC_OPTIONS
from .plan import Plan, interior, make_plan, stencil_refs
from .reference import Result, undefined_value
from .registry import Execution

Array = npt.NDArray[Any]

CUDA_HEADER = """\
typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
"""

#: Threads of a block: 32 along the last axis (one 128-byte line of float32 a warp), 8 along the one before.
BLOCK_X, BLOCK_Y = 32, 8
#: Blocks a launch aims at (several waves on an H100's 132 SMs); axis 0 is marched in chunks so that a big
#: grid still has about this many blocks and each thread computes several points.
TARGET_BLOCKS = 8192
#: CUDA's limit on a grid's y and z extents.
GRID_YZ = 65535


@dataclass(frozen=True)
class Tuning:
    """How the kernels' interior loop is written — a choice of speed, never of values.

    ``unroll``: how far each thread's unchecked interior loop is unrolled (``#pragma unroll``): loads of several
    points in flight a thread; registers grow with it on large windows (``backends.nvrtc``; contrast.soda: 239
    at 4, 97 at 2). ``rotate``: reads of one field that differ only along axis 0 (the marched axis: a
    column of a star or box) pass from point to point in registers — a register queue along the streamed
    axis (Micikevicius, "3D finite difference computation on GPUs using CUDA", GPGPU-2 2009) — so each point
    loads the column's leading read alone. NVRTC 12.9 for sm_90 (``benchmarks/gpu_static.py``): loads a point
    in the main loop 6.5 → 5 (3-D 7-point), 3.5 → 3 (2-D 5-point; the unrolled iterations already share some
    rows), 62 → 17 (contrast.soda), registers the same but contrast's (239 → 250). Neither this kernel design
    nor these choices have run on a GPU yet: the defaults are the first design's (unroll 4, no rotation) until
    ``benchmarks/gpu_bench.py --unroll/--rotate`` time them on a device."""

    unroll: int = 4
    rotate: bool = False

    def __post_init__(self) -> None:
        if self.unroll < 1:
            raise StencilmapError(f"unroll must be at least 1, not {self.unroll}")


@dataclass(frozen=True)
class Launch:
    """How every kernel of a program is launched: a CUDA grid and block, and how many consecutive points of
    axis 0 one thread computes (rank ≥ 2)."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    chunk: int


def launch(shape: tuple[int, ...], chunk: int | None = None) -> Launch:
    """The launch of a grid of ``shape``. 1-D: a thread a point. 2-D and 3-D: 32 × 8-thread blocks, x over the
    last (contiguous) axis, each thread marching ``chunk`` consecutive points of axis 0 — in 3-D the block's
    y threads take the middle axis (striding where it passes CUDA's grid limit) and ``blockIdx.z`` the chunk;
    in 2-D the y threads take the chunks. The rows or planes beside a point were read a moment earlier by the
    same thread, so they come from L1, and a thread's interior points run as one unrolled, unchecked loop whose
    loads can be issued ahead of the stores (``const __restrict__``: non-coherent loads). ``chunk`` by default
    gives about ``TARGET_BLOCKS`` blocks (at most 64 points a thread); 1 is one thread a point."""
    if len(shape) == 1:
        return Launch((max(1, -(-shape[0] // 256)), 1, 1), (256, 1, 1), 1)
    n0, x = shape[0], max(1, -(-shape[-1] // BLOCK_X))
    if len(shape) == 2:  # blocks: x · ⌈n0 / (chunk · BLOCK_Y)⌉
        least = -(-n0 // (BLOCK_Y * GRID_YZ))
        best = -(-n0 * x // (BLOCK_Y * TARGET_BLOCKS))
        chunk = max(min(int(min(64, best) if chunk is None else chunk), n0), 1, least)
        chunks = -(-n0 // chunk)
        return Launch((x, -(-chunks // BLOCK_Y), 1), (BLOCK_X, BLOCK_Y, 1), chunk)
    y = min(GRID_YZ, max(1, -(-shape[1] // BLOCK_Y)))  # blocks: x · y · ⌈n0 / chunk⌉
    least, best = -(-n0 // GRID_YZ), -(-n0 * x * y // TARGET_BLOCKS)
    chunk = max(min(int(min(64, best) if chunk is None else chunk), n0), 1, least)
    return Launch((x, y, -(-n0 // chunk)), (BLOCK_X, BLOCK_Y, 1), chunk)


def index_type(plan: Plan) -> str:
    """C type of the kernels' coordinates and extents: 32-bit where every field fits (cheaper address
    arithmetic on a GPU: 64-bit products and compares take two instructions), else 64-bit."""
    shape = plan.program.shape
    if all(n for n in shape) and prod(int(n or 0) for n in shape) < 2**30:
        return "int"
    return "long long"


def cuda_source(plan: Plan, tuning: Tuning = Tuning()) -> str:
    """The CUDA file of a program: the semantics helpers and one ``st_<k>`` kernel per stencil, each
    thread's interior loop written as ``tuning`` says."""
    for f in plan.fields:
        if plan.program.field_dtype(f) == "float16":
            raise Unsupported("float16 fields (NVRTC has no _Float16)")
    prelude = cexpr.prelude(plan.program, "cuda")
    parts = [CUDA_HEADER, f"typedef {index_type(plan)} sm_i;", prelude]
    for k, st in enumerate(plan.order):
        parts.append(_kernel(plan, k, st, tuning))
    return "\n".join(parts)


def _reads(plan: Plan, st: Stencil) -> list[str]:
    keep = plan.preserve_input(st.name)
    return sorted({r.field for r in stencil_refs(st)} | ({keep} if keep else set()))


def kernel_params(plan: Plan, st: Stencil) -> tuple[tuple[str, str], ...]:
    """(C type, name) of each parameter of ``st``'s kernel, in order: the extents ``n<a>``, the chunk, then
    each read field's values (and mask), the output's values (and mask), the program's params."""
    rank = plan.program.rank
    params = [("const sm_i", f"n{a}") for a in range(rank)] + [("const sm_i", "chunk")]
    for f in _reads(plan, st):
        var = f"f{plan.index(f)}"
        params.append((f"const {CTYPES[plan.program.field_dtype(f)]} *__restrict__", f"{var}_v"))
        if f in plan.masked:
            params.append(("const uint8_t *__restrict__", f"{var}_m"))
    params.append((f"{CTYPES[st.dtype]} *__restrict__", "d_v"))
    if st.name in plan.masked:
        params.append(("uint8_t *__restrict__", "d_m"))
    for j, par in enumerate(plan.program.params):
        params.append((f"const {CTYPES[par.dtype]} *__restrict__", f"p{j}"))
    return tuple(params)


def _kernel(plan: Plan, k: int, st: Stencil, tuning: Tuning) -> str:
    """``st_<k>`` under ``launch``: each thread's points of axis 0 (its chunk) in two loops — the interior ones
    (every read inside the grid, ``plan.interior``; none where the thread's other coordinates are near an
    edge) unchecked and unrolled, the rest (a thin shell) bounds-checked."""
    rank = plan.program.rank
    signature = ", ".join(f"{t} {n}" for t, n in kernel_params(plan, st))
    bind: list[str] = []
    for f in _reads(plan, st):
        bind += _strides(plan, f"f{plan.index(f)}", f)
    bind += _strides(plan, "d", st.name)
    box = interior(plan, st)
    inside = [  # per axis, the conditions of its interior
        ((f"g{a} >= {lo}",) if lo else ()) + ((f"g{a} < n{a} - {hi}",) if hi else ())
        for a, (lo, hi) in enumerate(box)
    ]
    queue, fast = (
        _queued(plan, st) if tuning.rotate and rank > 1 else ([], _body(plan, st, False, dialect="cuda"))
    )
    slow = _body(plan, st, checked=True, dialect="cuda")
    last = rank - 1
    lines = [
        f'extern "C" __global__ void st_{k}({signature}) {{',
        *["  " + line for line in bind],
        f"  const sm_i g{last} = (sm_i)blockIdx.x * (sm_i)blockDim.x + (sm_i)threadIdx.x;",
        f"  if (g{last} >= n{last}) return;",
        "  (void)chunk;",
    ]
    if rank == 1:
        cond = " && ".join(inside[0]) or "1"
        point = [f"if ({cond}) {{", *["  " + x for x in fast], "} else {", *["  " + x for x in slow], "}"]
        return "\n".join(lines + ["  " + x for x in point] + ["}"]) + "\n"
    lo0, hi0 = box[0]
    others = " && ".join(c for axis in inside[1:] for c in axis) or "1"  # axis 0's bounds are [a, b)
    march = [
        "const sm_i start = c * chunk, end = start + chunk < n0 ? start + chunk : n0;",
        "sm_i a = end, b = end;  /* [a, b) interior: unchecked */",
        f"if ({others}) {{",
        f"  a = start > {lo0} ? start : ({lo0} < end ? {lo0} : end);",
        f"  b = n0 - {hi0} < end ? (n0 - {hi0} > a ? n0 - {hi0} : a) : end;",
        "}",
        *queue,
        f"#pragma unroll {tuning.unroll}",
        "for (sm_i g0 = a; g0 < b; ++g0) {",
        *["  " + x for x in fast],
        "}",
        "for (int part = 0; part < 2; ++part) {  /* [start, a) and [b, end): checked */",
        "  for (sm_i g0 = part ? b : start; g0 < (part ? end : a); ++g0) {",
        *["    " + x for x in slow],
        "  }",
        "}",
    ]
    if rank == 2:
        lines += [
            "  const sm_i c = (sm_i)blockIdx.y * (sm_i)blockDim.y + (sm_i)threadIdx.y;",
            "  if (c * chunk >= n0) return;",
            *["  " + x for x in march],
        ]
        return "\n".join([*lines, "}"]) + "\n"
    lines += [
        "  const sm_i c = (sm_i)blockIdx.z;",
        "  for (sm_i g1 = (sm_i)blockIdx.y * (sm_i)blockDim.y + (sm_i)threadIdx.y; g1 < n1;",
        "       g1 += (sm_i)gridDim.y * (sm_i)blockDim.y) {",
        *["    " + x for x in march],
        "  }",
    ]
    return "\n".join([*lines, "}"]) + "\n"


def _queued(plan: Plan, st: Stencil) -> tuple[list[str], list[str]]:
    """``Tuning.rotate``: the statements before a thread's interior loop (each queue's registers, filled at its
    first point ``a`` when the loop runs at all) and the loop's body, whose reads of a queued column take the
    registers but the leading one, which it loads and the queue shifts in at the end (with the definedness
    masks of a masked field beside the values). A column: the reads of one field spanning axis 0 with the
    same offsets along the other axes — two or more, spanning at most twice their number of points along axis 0
    (a star's or a box's column; StencilFlow's Jacobi without its centre, -1 and +1, holds the gap's value
    too: a register for each point from the lowest read to the one before the highest)."""
    body = _body(plan, st, checked=False, dialect="cuda")
    columns: dict[tuple[str, tuple[int, ...]], dict[int, int]] = {}
    refs = stencil_refs(st)
    for j, ref in enumerate(refs):
        if plan.axes(ref.field)[:1] == (0,):
            columns.setdefault((ref.field, ref.offset[1:]), {})[ref.offset[0]] = j
    queued = [
        (field, rest, reads)
        for (field, rest), reads in sorted(columns.items())
        if len(reads) > 1 and max(reads) - min(reads) < 2 * len(reads)
    ]
    head: list[str] = []
    shifts: list[str] = []
    for c, (field, rest, reads) in enumerate(queued):
        lo, hi = min(reads), max(reads)
        t, var, masked = (
            CTYPES[plan.program.field_dtype(field)],
            f"f{plan.index(field)}",
            field in plan.masked,
        )
        at = {d: _index(plan, var, field, (d, *rest)) for d in range(lo, hi + 1)}
        regs = [f"q{c}_{i}" for i in range(hi - lo)]  # the column's values at lo .. hi - 1
        masks = [f"m{c}_{i}" for i in range(hi - lo)] if masked else []
        head.append(f"{t} {', '.join(f'{r} = ({t})0' for r in regs)};")
        head += [f"uint8_t {', '.join(f'{m} = 0' for m in masks)};"] if masked else []
        fill = [f"{r} = {var}_v[{at[lo + i]}];" for i, r in enumerate(regs)]
        fill += [f"{m} = {var}_m[{at[lo + i]}];" for i, m in enumerate(masks)]
        head.append(f"if (a < b) {{ const sm_i g0 = a; {' '.join(fill)} }}")
        for i, r in enumerate(regs):
            if lo + i not in reads:  # a gap: held, not read
                continue
            j = reads[lo + i]
            body[body.index(f"const {t} r{j} = {var}_v[{at[lo + i]}];")] = f"const {t} r{j} = {r};"
            if masked:
                body[body.index(f"ok &= {var}_m[{at[lo + i]}];")] = f"ok &= {masks[i]};"
        lead = reads[hi]
        if masked:
            body[body.index(f"ok &= {var}_m[{at[hi]}];")] = (
                f"const uint8_t k{lead} = {var}_m[{at[hi]}]; ok &= k{lead};"
            )
        for queue, loaded in ((regs, f"r{lead}"), (masks, f"k{lead}")):
            shifts += [f"{queue[i]} = {queue[i + 1]};" for i in range(len(queue) - 1)]
            shifts += [f"{queue[-1]} = {loaded};"] if queue else []
    return head, body + shifts


def _strides(plan: Plan, var: str, field: str) -> list[str]:
    axes = plan.axes(field)
    out = []
    for j in range(len(axes) - 1):
        prod_ = " * ".join(f"n{a}" for a in axes[j + 1 :])
        out.append(f"const sm_i {var}_s{j} = {prod_};")
    out.append(f"const sm_i {var}_off = 0;")
    return out


class Device(Protocol):
    """What ``run_gpu`` needs of a CUDA device: CuPy's (``CupyDevice``), or a test's host emulation."""

    def kernels(self, source: str, names: list[str]) -> list[Callable[[Launch, tuple[Any, ...]], None]]:
        """Compile ``source``; one launcher per kernel name, ``launcher(launch, args)``."""
        ...

    def asarray(self, a: Array) -> Any: ...

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any: ...

    def ones(self, shape: tuple[int, ...], dtype: Any) -> Any: ...

    def asnumpy(self, a: Any) -> Array: ...

    def synchronize(self) -> None: ...


class CupyDevice:
    """The CUDA device through CuPy (NVRTC compiles the source)."""

    def __init__(self) -> None:
        try:
            import cupy
        except ImportError as exc:
            raise StencilmapError(f"the gpu backend needs CuPy and a CUDA GPU ({exc})") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # CuPy raises its own CUDARuntimeError without a driver
            raise StencilmapError(f"the gpu backend found no CUDA device ({exc})") from None
        if count < 1:
            raise StencilmapError("the gpu backend found no CUDA device")
        self.cp = cupy

    def kernels(self, source: str, names: list[str]) -> list[Callable[[Launch, tuple[Any, ...]], None]]:
        module = self.cp.RawModule(code=source, options=NVRTC_OPTIONS)

        def launcher(fn: Any) -> Callable[[Launch, tuple[Any, ...]], None]:
            return lambda at, args: fn(at.grid, at.block, args)

        return [launcher(module.get_function(n)) for n in names]

    def asarray(self, a: Array) -> Any:
        return self.cp.asarray(a)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self.cp.empty(shape, dtype)

    def ones(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self.cp.ones(shape, dtype)

    def asnumpy(self, a: Any) -> Array:
        return self.cp.asnumpy(a)  # type: ignore[no-any-return]

    def synchronize(self) -> None:
        self.cp.cuda.Device().synchronize()


class GpuRun:
    """A shape-bound program loaded on a device: its kernels compiled, its inputs uploaded. ``launch()``
    enqueues every step from those inputs (no synchronisation; each call computes the same outputs: kernels
    write only buffers of their own, never an uploaded input), ``result()`` reads the last launch's outputs
    back. ``run_gpu`` is one launch timed; ``benchmarks/gpu_bench.py`` repeats ``launch`` between CUDA events
    as it does the peers' kernels."""

    def __init__(
        self,
        program: Program,
        inputs: Mapping[str, Array],
        device: Device | None = None,
        chunk: int | None = None,
        tuning: Tuning = Tuning(),
    ) -> None:
        self.device = dev = device if device is not None else CupyDevice()
        try:
            plan = make_plan(program)
            source = cuda_source(plan, tuning)
        except Unsupported as exc:
            raise StencilmapError(f"the gpu backend cannot run this program: {exc}") from None
        start = time.perf_counter()
        self.kernels = dev.kernels(source, [f"st_{k}" for k in range(len(plan.order))])
        self.compile_seconds = time.perf_counter() - start
        self.program, self.plan = program, plan
        self.shape = shape = tuple(int(n or 0) for n in program.shape)
        self.at = at = launch(shape, chunk)
        self.inputs = {k: dev.asarray(v) for k, v in checked_inputs(program, inputs).items()}
        self.input_masks = {
            f: dev.ones(shape, np.uint8)
            for f in plan.fields
            if f in plan.masked and program.input(f) is not None
        }
        index = np.int32 if index_type(plan) == "int" else np.int64
        self.dims = (*(index(n) for n in shape), index(at.chunk))
        self.values: dict[str, Any] = dict(self.inputs)
        self.masks: dict[str, Any] = dict(self.input_masks)

    def launch(self) -> None:
        """Enqueue the program's steps, from the uploaded inputs."""
        program, plan, dev = self.program, self.plan, self.device
        values, masks = dict(self.inputs), dict(self.input_masks)
        spare: dict[str, tuple[Any, Any]] = {}
        for _ in range(program.iterate):
            for k, st in enumerate(plan.order):
                out = spare.pop(st.name, None) or (
                    dev.empty(self.shape, st.dtype),
                    dev.empty(self.shape, np.uint8) if st.name in plan.masked else None,
                )
                args: list[Any] = list(self.dims)
                for f in _reads(plan, st):
                    args.append(values[f])
                    if f in plan.masked:
                        args.append(masks[f])
                args.append(out[0])
                if out[1] is not None:
                    args.append(out[1])
                args += [values[p.name] for p in program.params]
                self.kernels[k](self.at, tuple(args))
                if st.name in values and (plan.feeds and st.name in dict(plan.pairs).values()):
                    spare[st.name] = (values[st.name], masks.get(st.name))
                values[st.name] = out[0]
                if out[1] is not None:
                    masks[st.name] = out[1]
            if plan.feeds:
                for i, o in plan.pairs:
                    values[i] = values[o]
                    if o in masks:
                        masks[i] = masks[o]
        self.values, self.masks = values, masks

    def result(self) -> Result:
        """The last launch's outputs, on the host (points no step defined hold the undefined value)."""
        outs: dict[str, Array] = {}
        defined: dict[str, npt.NDArray[np.bool_]] = {}
        for o in self.program.outputs:
            v = self.device.asnumpy(self.values[o])
            ok = (
                self.device.asnumpy(self.masks[o]).astype(bool)
                if o in self.masks
                else np.ones(self.shape, bool)
            )
            v[~ok] = undefined_value(v.dtype)
            outs[o], defined[o] = v, ok
        return Result(outs, defined)


def run_gpu(
    program: Program,
    inputs: Mapping[str, Array],
    device: Device | None = None,
    chunk: int | None = None,
    tuning: Tuning = Tuning(),
) -> Execution:
    """Execute a shape-bound program on the GPU (``device``: CuPy's by default); compute time excludes
    compilation and transfers. ``chunk``: points a thread marches along the outer axes (``launch``);
    ``tuning``: how the kernels' interior loop is written (``Tuning``)."""
    run = GpuRun(program, inputs, device, chunk, tuning)
    run.device.synchronize()
    start = time.perf_counter()
    run.launch()
    run.device.synchronize()
    compute = time.perf_counter() - start
    return Execution(run.result(), compute, run.compile_seconds, True)
