"""Running a generated single-kernel OpenCL program here, on PoCL through pyopencl (imported only here).

A missing pyopencl or OpenCL runtime is a user error (exit 2) with what to install.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from stencilmap.codegen.ctypes_ import storage
from stencilmap.codegen.registry import Generated
from stencilmap.codegen.verify import CsimResult
from stencilmap.errors import StencilmapError

INSTALL = "install PoCL (apt-get install pocl-opencl-icd ocl-icd-libopencl1, or `make opencl`)"


def cpu_device() -> Any:
    """PoCL's CPU device (any CPU OpenCL device when PoCL is absent)."""
    try:
        import pyopencl as cl
    except ImportError:
        raise StencilmapError(
            f"pyopencl is not installed: running OpenCL here needs it and PoCL ({INSTALL})"
        ) from None
    try:
        platforms = cl.get_platforms()
    except Exception:  # pyopencl raises its own LogicError/RuntimeError when no ICD is installed
        platforms = []
    devices = [d for p in platforms for d in p.get_devices() if d.type & cl.device_type.CPU]
    pocl = [d for d in devices if "Portable Computing Language" in d.platform.name]
    if not (pocl or devices):
        raise StencilmapError(f"no OpenCL CPU runtime found: {INSTALL}")
    return (pocl or devices)[0]


def pocl_available() -> bool:
    try:
        cpu_device()
    except StencilmapError:
        return False
    return True


def run_pocl(gen: Generated, root: Path, data: Path, shape: tuple[int, ...]) -> CsimResult:
    """Build ``kernel.cl`` for the CPU device, run the kernel as one work-item, read the outputs."""
    device = cpu_device()  # first: a missing pyopencl or runtime is a one-line user error
    import pyopencl as cl

    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    start = time.perf_counter()
    try:
        program = cl.Program(ctx, (root / gen.sources[0]).read_text()).build(options=[f"-I{root}"])
    except cl.RuntimeError as exc:
        first = next((ln for ln in str(exc).splitlines() if "error" in ln), str(exc).splitlines()[0])
        return CsimResult(
            "failed", {}, time.perf_counter() - start, 0.0, f"OpenCL build failed: {first.strip()}"
        )
    compile_s = time.perf_counter() - start
    buffers, outputs = [], {}
    mf = cl.mem_flags
    for p in gen.ports:
        dtype = np.dtype(storage(p.dtype))
        if p.direction == "in":
            host = np.fromfile(data / f"{p.field}.bin", dtype=dtype)
            buffers.append(cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host))
        else:
            outputs[p.field] = np.zeros(p.elements, dtype=dtype)
            buffers.append(cl.Buffer(ctx, mf.WRITE_ONLY | mf.COPY_HOST_PTR, hostbuf=outputs[p.field]))
    start = time.perf_counter()
    getattr(program, gen.top)(queue, (1,), (1,), *buffers)
    queue.finish()
    for p, buf in zip(gen.ports, buffers, strict=True):
        if p.direction == "out":
            cl.enqueue_copy(queue, outputs[p.field], buf)
    queue.finish()
    run_s = time.perf_counter() - start
    result = {}
    for p in gen.ports:
        if p.direction == "out":
            arr = outputs[p.field].reshape(shape)
            result[p.field] = arr.astype(bool) if p.dtype == "bool" else arr.astype(p.dtype)
    return CsimResult("done", result, compile_s, run_s)
