"""The child process in which ``opencl_run`` runs a generated OpenCL kernel on PoCL, so that a crash of the
kernel or of the runtime (a PCM kernel with an offset of 2²⁰ made PoCL's code fault) ends this process, not
stencilmap.

Its job comes as one JSON object on stdin: ``source`` (the ``.cl`` file), ``include`` (its folder, for
``-I``), ``top`` (the kernel), ``ports`` (``[field, direction, NumPy storage dtype, elements]`` in argument
order), ``data`` (``<field>.bin`` of every input) and ``out`` (where ``<field>.bin`` of every output goes).
It answers with one JSON line on stdout: ``status`` ("done" or "failed"), ``compile_seconds``,
``run_seconds`` and ``message``. The file runs as a script (``runpy.run_path``) and imports nothing of
stencilmap, so the child starts without loading the package.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def main() -> None:
    job = json.loads(sys.stdin.read())
    sys.stdout.write(json.dumps(run(job)) + "\n")


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Build ``source`` for the CPU device, run ``top`` as one work-item, write the outputs."""
    import numpy as np
    import pyopencl as cl

    device = cpu_device()
    if device is None:
        return _answer("failed", 0.0, 0.0, "no OpenCL CPU runtime found")
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    start = time.perf_counter()
    try:
        program = cl.Program(ctx, Path(job["source"]).read_text()).build(options=[f"-I{job['include']}"])
    except cl.RuntimeError as exc:
        first = next((ln for ln in str(exc).splitlines() if "error" in ln), str(exc).splitlines()[0])
        return _answer("failed", time.perf_counter() - start, 0.0, f"OpenCL build failed: {first.strip()}")
    compile_s = time.perf_counter() - start
    mf = cl.mem_flags
    buffers, outputs = [], {}
    for field, direction, dtype, elements in job["ports"]:
        if direction == "in":
            host = np.fromfile(Path(job["data"]) / f"{field}.bin", dtype=dtype)
            buffers.append(cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host))
        else:
            outputs[field] = np.zeros(elements, dtype=dtype)
            buffers.append(cl.Buffer(ctx, mf.WRITE_ONLY | mf.COPY_HOST_PTR, hostbuf=outputs[field]))
    start = time.perf_counter()
    getattr(program, job["top"])(queue, (1,), (1,), *buffers)
    queue.finish()
    for (field, direction, _, _), buf in zip(job["ports"], buffers, strict=True):
        if direction == "out":
            cl.enqueue_copy(queue, outputs[field], buf)
    queue.finish()
    run_s = time.perf_counter() - start
    for field, arr in outputs.items():
        arr.tofile(Path(job["out"]) / f"{field}.bin")
    return _answer("done", compile_s, run_s, "")


def cpu_device() -> Any:
    """PoCL's CPU device (any CPU OpenCL device when PoCL is absent); None when there is none."""
    import pyopencl as cl

    try:
        platforms = cl.get_platforms()
    except Exception:  # pyopencl raises its own LogicError/RuntimeError when no ICD is installed
        platforms = []
    devices = [d for p in platforms for d in p.get_devices() if d.type & cl.device_type.CPU]
    pocl = [d for d in devices if "Portable Computing Language" in d.platform.name]
    return next(iter(pocl or devices), None)


def _answer(status: str, compile_s: float, run_s: float, message: str) -> dict[str, Any]:
    return {"status": status, "compile_seconds": compile_s, "run_seconds": run_s, "message": message}


if __name__ == "__main__":
    main()
