"""The GPU backend: one generated CUDA kernel per stencil (CuPy ``RawKernel``), one thread per grid point.

Each step launches the stencils in topological order over the whole grid; fields live on the device,
iterated state ping-pongs between two buffers, and only the outputs come back. The point code is the CPU
backend's bounds-checked body (``cgen``) with the same semantics helpers, so both backends share one
definition of every operation. ``float16`` programs are refused (NVRTC has no ``_Float16``). Without
CuPy or a CUDA device, ``run_gpu`` raises a one-line user error.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program, Stencil

from . import cexpr
from .cexpr import CTYPES, Unsupported
from .cgen import _body
from .cpu import checked_inputs
from .plan import Plan, make_plan, stencil_refs
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

BLOCK = 256


def cuda_source(plan: Plan) -> str:
    """The CUDA file of a program: the semantics helpers and one ``st_<k>`` kernel per stencil."""
    for f in plan.fields:
        if plan.program.field_dtype(f) == "float16":
            raise Unsupported("float16 fields (NVRTC has no _Float16)")
    prelude = cexpr.prelude(plan.program, "cuda")
    parts = [CUDA_HEADER, prelude]
    for k, st in enumerate(plan.order):
        parts.append(_kernel(plan, k, st))
    return "\n".join(parts)


def _reads(plan: Plan, st: Stencil) -> list[str]:
    keep = plan.preserve_input(st.name)
    return sorted({r.field for r in stencil_refs(st)} | ({keep} if keep else set()))


def _kernel(plan: Plan, k: int, st: Stencil) -> str:
    rank = plan.program.rank
    args = [f"const long long n{a}" for a in range(rank)]
    bind: list[str] = []
    for f in _reads(plan, st):
        var = f"f{plan.index(f)}"
        t = CTYPES[plan.program.field_dtype(f)]
        args.append(f"const {t} *__restrict__ {var}_v")
        if f in plan.masked:
            args.append(f"const uint8_t *__restrict__ {var}_m")
        bind += _strides(plan, var, f)
    args.append(f"{CTYPES[st.dtype]} *__restrict__ d_v")
    if st.name in plan.masked:
        args.append("uint8_t *__restrict__ d_m")
    bind += _strides(plan, "d", st.name)
    for j, par in enumerate(plan.program.params):
        args.append(f"const {CTYPES[par.dtype]} *__restrict__ p{j}")
    total = " * ".join(f"n{a}" for a in range(rank))
    coords = []
    rest = "i"
    for a in reversed(range(rank)):
        coords.append(
            f"  const long long g{a} = {rest} % n{a};" if a else f"  const long long g{a} = {rest};"
        )
        rest = f"({rest} / n{a})"
    lines = [
        f'extern "C" __global__ void st_{k}({", ".join(args)}) {{',
        "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
        f"  if (i >= {total}) return;",
        *coords,
        *bind,
        *["  " + line for line in _body(plan, st, checked=True, dialect="cuda")],
        "}",
    ]
    return "\n".join(lines) + "\n"


def _strides(plan: Plan, var: str, field: str) -> list[str]:
    axes = plan.axes(field)
    out = []
    for j in range(len(axes) - 1):
        prod = " * ".join(f"n{a}" for a in axes[j + 1 :])
        out.append(f"  const long long {var}_s{j} = {prod};")
    out.append(f"  const long long {var}_off = 0;")
    return out


def _cupy() -> Any:
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
    return cupy


def run_gpu(program: Program, inputs: Mapping[str, Array]) -> Execution:
    """Execute a shape-bound program on the GPU; compute time excludes compilation and transfers."""
    cp = _cupy()
    try:
        plan = make_plan(program)
        source = cuda_source(plan)
    except Unsupported as exc:
        raise StencilmapError(f"the gpu backend cannot run this program: {exc}") from None
    start = time.perf_counter()
    # --fmad=false: NVRTC contracts a * b + c into one fused multiply-add by default, which rounds once
    # where the reference (and the cpu backend, -ffp-contract=off) rounds twice (1-ulp differences)
    module = cp.RawModule(code=source, options=("--std=c++14", "--fmad=false"))
    kernels = [module.get_function(f"st_{k}") for k in range(len(plan.order))]
    compile_seconds = time.perf_counter() - start
    shape = tuple(int(n or 0) for n in program.shape)
    values = {k: cp.asarray(v) for k, v in checked_inputs(program, inputs).items()}
    masks = {
        f: cp.ones(shape, cp.uint8) for f in plan.fields if f in plan.masked and program.input(f) is not None
    }
    spare: dict[str, tuple[Any, Any]] = {}
    total = int(np.prod(shape))
    grid = ((total + BLOCK - 1) // BLOCK,)
    dims = tuple(np.int64(n) for n in shape)
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    for _ in range(program.iterate):
        for k, st in enumerate(plan.order):
            out = spare.pop(st.name, None) or (
                cp.empty(shape, st.dtype),
                cp.empty(shape, cp.uint8) if st.name in plan.masked else None,
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
            kernels[k](grid, (BLOCK,), tuple(args))
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
    cp.cuda.Device().synchronize()
    compute = time.perf_counter() - start
    outs: dict[str, Array] = {}
    defined: dict[str, npt.NDArray[np.bool_]] = {}
    for o in program.outputs:
        v = cp.asnumpy(values[o])
        ok = cp.asnumpy(masks[o]).astype(bool) if o in masks else np.ones(shape, bool)
        v[~ok] = undefined_value(v.dtype)
        outs[o], defined[o] = v, ok
    return Execution(Result(outs, defined), compute, compile_seconds, True)
