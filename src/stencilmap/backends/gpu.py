"""The GPU backend: one generated CUDA kernel per stencil, run through CuPy (``RawModule``, NVRTC).

A launch (``launch``) puts a block's 32 × 8 threads over the last two axes (x the last, contiguous one: a
warp reads whole 128-byte lines) and has each thread march ``chunk`` points along the outer axes, so the
rows and planes beside a point were read a moment earlier by its own block and come from L1; coordinates
are 32-bit where every field fits (``index_type``). A point whose every read falls inside the grid
(``plan.interior``) runs the unchecked body; the thin shell of the others the bounds-checked one. Both
bodies are the CPU backend's (``cgen._body``) with the same semantics helpers, so the backends share one
definition of every operation.

Each step launches the stencils in topological order over the whole grid; fields live on the device,
iterated state ping-pongs between two buffers, and only the outputs come back. ``run_gpu`` drives a
``Device`` (CuPy's by default; the tests run the same driver over a host emulation of the kernels).
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
from .cgen import _body
from .cpu import checked_inputs
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
#: Blocks a launch aims at (several waves on an H100's 132 SMs); the outer axes are marched in chunks so that
#: a big grid still has about this many blocks and each thread computes several points.
TARGET_BLOCKS = 8192
#: CUDA's limit on a grid's y and z extents.
GRID_YZ = 65535


@dataclass(frozen=True)
class Launch:
    """How every kernel of a program is launched: a CUDA grid and block, and how many consecutive points of
    the flattened outer axes (all but the last two) one thread computes."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    chunk: int


def launch(shape: tuple[int, ...], chunk: int | None = None) -> Launch:
    """The launch of a grid of ``shape``: threads over the last two axes (x the last, contiguous one), each
    thread marching ``chunk`` points along the rest, so that the rows and planes a point reads beside its
    own were read a moment earlier by its own block (L1) — one kernel, no shared memory. ``chunk`` by default
    gives about ``TARGET_BLOCKS`` blocks; 1 is one thread per point."""
    rank = len(shape)
    if rank == 1:
        return Launch((max(1, -(-shape[0] // 256)), 1, 1), (256, 1, 1), 1)
    x = max(1, -(-shape[-1] // BLOCK_X))
    y = min(GRID_YZ, max(1, -(-shape[-2] // BLOCK_Y)))  # a taller grid strides (the kernel loops over y)
    outer = prod(shape[:-2])
    if chunk is None:
        chunk = min(64, -(-outer * x * y // TARGET_BLOCKS))
    chunk = max(min(int(chunk), outer), 1, -(-outer // GRID_YZ))
    return Launch((x, y, max(1, -(-outer // chunk))), (BLOCK_X, BLOCK_Y, 1), chunk)


def index_type(plan: Plan) -> str:
    """C type of the kernels' coordinates and extents: 32-bit where every field fits (cheaper address
    arithmetic on a GPU: 64-bit products and compares take two instructions), else 64-bit."""
    shape = plan.program.shape
    if all(n for n in shape) and prod(int(n or 0) for n in shape) < 2**30:
        return "int"
    return "long long"


def cuda_source(plan: Plan) -> str:
    """The CUDA file of a program: the semantics helpers and one ``st_<k>`` kernel per stencil."""
    for f in plan.fields:
        if plan.program.field_dtype(f) == "float16":
            raise Unsupported("float16 fields (NVRTC has no _Float16)")
    prelude = cexpr.prelude(plan.program, "cuda")
    parts = [CUDA_HEADER, f"typedef {index_type(plan)} sm_i;", prelude]
    for k, st in enumerate(plan.order):
        parts.append(_kernel(plan, k, st))
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


def _kernel(plan: Plan, k: int, st: Stencil) -> str:
    """``st_<k>``: each thread a point of the last two axes (the last one alone in 1-D), marching ``chunk``
    points of the outer axes; a point whose every read falls inside the grid (``plan.interior``) runs the
    unchecked body, the others (a thin shell) the bounds-checked one."""
    rank = plan.program.rank
    signature = ", ".join(f"{t} {n}" for t, n in kernel_params(plan, st))
    bind: list[str] = []
    for f in _reads(plan, st):
        bind += _strides(plan, f"f{plan.index(f)}", f)
    bind += _strides(plan, "d", st.name)
    inside = [
        cond
        for a, (lo, hi) in enumerate(interior(plan, st))
        for cond in ((f"g{a} >= {lo}",) if lo else ()) + ((f"g{a} < n{a} - {hi}",) if hi else ())
    ]
    point = [
        f"if ({' && '.join(inside) if inside else '1'}) {{",
        *["  " + line for line in _body(plan, st, checked=False, dialect="cuda")],
        "} else {",
        *["  " + line for line in _body(plan, st, checked=True, dialect="cuda")],
        "}",
    ]
    last = rank - 1
    lines = [
        f'extern "C" __global__ void st_{k}({signature}) {{',
        *["  " + line for line in bind],
        f"  const sm_i g{last} = (sm_i)blockIdx.x * (sm_i)blockDim.x + (sm_i)threadIdx.x;",
        f"  if (g{last} >= n{last}) return;",
        "  (void)chunk;",
    ]
    if rank == 1:
        return "\n".join(lines + ["  " + line for line in point] + ["}"]) + "\n"
    y = rank - 2
    lines += [
        f"  for (sm_i g{y} = (sm_i)blockIdx.y * (sm_i)blockDim.y + (sm_i)threadIdx.y; g{y} < n{y};",
        f"       g{y} += (sm_i)gridDim.y * (sm_i)blockDim.y) {{",
    ]
    if rank == 2:
        return "\n".join(lines + ["    " + line for line in point] + ["  }", "}"]) + "\n"
    outer = " * ".join(f"n{a}" for a in range(rank - 2))
    lines += [
        f"    const sm_i end = (sm_i)blockIdx.z * chunk + chunk < {outer} ? (sm_i)blockIdx.z * chunk + chunk"
        f" : {outer};",
        "    for (sm_i o = (sm_i)blockIdx.z * chunk; o < end; ++o) {",
    ]
    rest = "o"
    for a in reversed(range(rank - 2)):  # the outer coordinates (rank 3: g0 = o)
        lines.append(f"      const sm_i g{a} = {rest} % n{a};" if a else f"      const sm_i g{a} = {rest};")
        rest = f"({rest} / n{a})"
    return "\n".join(lines + ["      " + line for line in point] + ["    }", "  }", "}"]) + "\n"


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
        # --fmad=false: NVRTC contracts a * b + c into one fused multiply-add by default, which rounds once
        # where the reference (and the cpu backend, -ffp-contract=off) rounds twice (1-ulp differences)
        module = self.cp.RawModule(code=source, options=("--std=c++14", "--fmad=false"))

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


def run_gpu(
    program: Program, inputs: Mapping[str, Array], device: Device | None = None, chunk: int | None = None
) -> Execution:
    """Execute a shape-bound program on the GPU (``device``: CuPy's by default); compute time excludes
    compilation and transfers. ``chunk``: points a thread marches along the outer axes (``launch``)."""
    dev = device if device is not None else CupyDevice()
    try:
        plan = make_plan(program)
        source = cuda_source(plan)
    except Unsupported as exc:
        raise StencilmapError(f"the gpu backend cannot run this program: {exc}") from None
    start = time.perf_counter()
    kernels = dev.kernels(source, [f"st_{k}" for k in range(len(plan.order))])
    compile_seconds = time.perf_counter() - start
    shape = tuple(int(n or 0) for n in program.shape)
    at = launch(shape, chunk)
    values = {k: dev.asarray(v) for k, v in checked_inputs(program, inputs).items()}
    masks = {
        f: dev.ones(shape, np.uint8) for f in plan.fields if f in plan.masked and program.input(f) is not None
    }
    spare: dict[str, tuple[Any, Any]] = {}
    index = np.int32 if index_type(plan) == "int" else np.int64
    dims = (*(index(n) for n in shape), index(at.chunk))
    dev.synchronize()
    start = time.perf_counter()
    for _ in range(program.iterate):
        for k, st in enumerate(plan.order):
            out = spare.pop(st.name, None) or (
                dev.empty(shape, st.dtype),
                dev.empty(shape, np.uint8) if st.name in plan.masked else None,
            )
            args: list[Any] = list(dims)
            for f in _reads(plan, st):
                args.append(values[f])
                if f in plan.masked:
                    args.append(masks[f])
            args.append(out[0])
            if out[1] is not None:
                args.append(out[1])
            args += [values[p.name] for p in program.params]
            kernels[k](at, tuple(args))
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
    dev.synchronize()
    compute = time.perf_counter() - start
    outs: dict[str, Array] = {}
    defined: dict[str, npt.NDArray[np.bool_]] = {}
    for o in program.outputs:
        v = dev.asnumpy(values[o])
        ok = dev.asnumpy(masks[o]).astype(bool) if o in masks else np.ones(shape, bool)
        v[~ok] = undefined_value(v.dtype)
        outs[o], defined[o] = v, ok
    return Execution(Result(outs, defined), compute, compile_seconds, True)
